"""Long-length evaluation cost of every attention variant against torch SDPA (a benchmark, not a test).

One layer, forward only under ``torch.no_grad`` (what evaluation at long length runs), batch 1, width 128
(4 heads of 32), float32, on CPU, at T = 512 .. 32,768 (powers of two). Per (variant, T): the median wall time
of the timed runs and the peak of live tensor memory created by the forward (``seqmix.ops.memory
.PeakTensorMemory``: every tensor an op returns, counted until freed; fused kernels' private scratch, constant
in T, is not seen), each also as a ratio to bare causal SDPA on the same (1, 4, T, 32) q, k, v. The growth
column is the time ratio (x SDPA) at the longest measured T over the one at T = 2048 (below it SDPA takes
milliseconds and fixed costs dominate): about 1 when a variant scales like SDPA.

Variants are the mixers in their long-length configuration: ALiBi with ``query_block`` (blocked, bias per
block) and PaTH with ``blocked_from`` (softmax per chunk), plus the single-call forms (``alibi_dense``,
``path_dense``) while memory allows, to show what the blocked forms avoid. A (variant, T) is skipped, and
said so in the output, when its predicted peak memory (4x the previous length's) is over ``--max-gib`` or its
predicted time (4.5x the previous) over ``--max-seconds`` or past the run's ``--budget-seconds``; lengths
whose SDPA baseline alone would pass the time cap are dropped for all variants.

    python benchmarks/attention_long.py [--threads 1] [--max-seconds 60] [--max-gib 4] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

D_MODEL, HEADS = 128, 4
LENGTHS = [512 * 2**k for k in range(7)]  # 512 .. 32768
GROWTH_FROM = 2048  # below it SDPA takes milliseconds and the ratios are dominated by fixed costs and noise
BLOCK = 256  # query block of the blocked ALiBi form (256 was the fastest of 128..1024 at T = 4096)
VARIANTS = {  # name -> (registered mixer, options); the blocked forms first, so a tight budget skips others
    "nope": ("nope", {}),
    "rope": ("rope", {}),
    "alibi (blocked)": ("alibi", {"query_block": BLOCK}),
    "path (blocked)": ("path", {"chunk": 32, "blocked_from": BLOCK}),
    "so2_random_qkv": ("so2_random_qkv", {}),
    "so2_learned_qkv": ("softmax_attention", {"position": "so2_learned", "rotate_values": True}),
    "rope_qkv": ("rope_qkv", {}),
    "so2_random_qk": ("so2_random_qk", {}),
    "so2_learned_qk": ("softmax_attention", {"position": "so2_learned"}),
    "alibi_dense": ("alibi", {}),
    "path_dense": ("path", {"chunk": 32}),
}


def timed(fn, reps: int) -> tuple[float, int]:
    """(median seconds over ``reps`` runs, peak live tensor bytes of one run), all under no_grad. With one rep
    (long T) that run is also the memory run: the tracker's per-op cost is then about 1% of the time."""
    from seqmix.ops.memory import PeakTensorMemory

    with torch.no_grad():
        t0 = time.perf_counter()
        with PeakTensorMemory() as mem:
            fn()
        times = [time.perf_counter() - t0]
        if reps > 1:
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
    return statistics.median(times), mem.peak_bytes


def sdpa_case(T: int):
    q, k, v = (torch.randn(1, HEADS, T, D_MODEL // HEADS) for _ in range(3))
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def mixer_case(name: str, T: int):
    from seqmix.mixers.base import build_mixer

    registered, options = VARIANTS[name]
    torch.manual_seed(0)
    m = build_mixer(registered, D_MODEL, heads=HEADS, **options).eval()
    x = torch.randn(1, T, D_MODEL)
    return lambda: m(x)


def reps_for(T: int) -> int:
    return 3 if T <= 4096 else 1


def run(max_seconds: float, max_gib: float, budget: float, lengths: list[int]) -> tuple[dict, dict, list[str]]:
    """Baseline per T, {variant: {T: (seconds, bytes)}}, and the skip notes."""
    base, rows, skipped = {}, {n: {} for n in VARIANTS}, []
    t_start = time.perf_counter()
    for T in lengths:
        if base and list(base.values())[-1][0] * 4.5 > max_seconds:
            skipped.append(f"T = {T} and longer: SDPA alone would take over {max_seconds:.0f} s")
            break
        if T == lengths[0]:
            sdpa_case(T)()  # warm-up
        base[T] = timed(sdpa_case(T), reps_for(T))
        for name in VARIANTS:
            prev = rows[name].get(T // 2)
            if prev is None and T != lengths[0]:
                continue  # skipped at a shorter length already
            if prev is not None and prev[1] * 4 > max_gib * 2**30:
                skipped.append(f"{name} at T >= {T}: predicted peak {prev[1] * 4 / 2**30:.1f} GiB > {max_gib:g} GiB")
                continue
            if prev is not None and prev[0] * 4.5 > max_seconds:
                skipped.append(f"{name} at T >= {T}: predicted {prev[0] * 4.5:.0f} s > {max_seconds:.0f} s")
                continue
            if prev is not None and time.perf_counter() - t_start + prev[0] * 4.5 * reps_for(T) > budget:
                skipped.append(f"{name} at T >= {T}: predicted {prev[0] * 4.5:.0f} s would pass the run's budget")
                continue
            fn = mixer_case(name, T)
            if T == lengths[0]:
                fn()  # warm-up
            rows[name][T] = timed(fn, reps_for(T))
            print(f"{name:18s} T={T:6d} {rows[name][T][0]:8.3f} s {rows[name][T][1] / 2**20:9.1f} MiB", flush=True)
    return base, rows, skipped


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def table(base: dict, rows: dict) -> list[str]:
    """Two Markdown tables (time, memory): a row per variant, a column per T, ratios to SDPA in brackets."""
    Ts = list(base)
    head = [
        "| variant | " + " | ".join(f"T={T}" for T in Ts) + " | growth of x SDPA |",
        "|---|" + "---:|" * (len(Ts) + 1),
    ]
    times = [
        "Time, seconds (x SDPA):",
        "",
        *head,
        "| SDPA (causal) | " + " | ".join(_fmt(base[T][0]) for T in Ts) + " | 1 |",
    ]
    mems = ["Peak live tensor memory, MiB (x SDPA):", "", *head]
    mems.append("| SDPA (causal) | " + " | ".join(_fmt(base[T][1] / 2**20) for T in Ts) + " | |")
    for name, by_T in rows.items():
        cells_t = [f"{_fmt(by_T[T][0])} ({by_T[T][0] / base[T][0]:.1f}x)" if T in by_T else "skipped" for T in Ts]
        cells_m = [
            f"{_fmt(by_T[T][1] / 2**20)} ({by_T[T][1] / max(base[T][1], 1):.0f}x)" if T in by_T else "skipped"
            for T in Ts
        ]
        done = [T for T in Ts if T in by_T and T >= GROWTH_FROM]
        growth = ""
        if len(done) > 1:
            r0, r1 = (by_T[T][0] / base[T][0] for T in (done[0], done[-1]))
            growth = f"{r1 / r0:.2f} ({done[0]} -> {done[-1]})"
        times.append(f"| {name} | " + " | ".join(cells_t) + f" | {growth} |")
        mems.append(f"| {name} | " + " | ".join(cells_m) + " | |")
    return [*times, "", *mems]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="skip a case predicted to take longer")
    ap.add_argument("--max-gib", type=float, default=4.0, help="skip a case predicted to need more memory")
    ap.add_argument("--budget-seconds", type=float, default=540.0, help="skip cases that would pass it")
    ap.add_argument("--max-length", type=int, default=LENGTHS[-1])
    ap.add_argument("--out", default=str(Path(__file__).with_name("attention_long_results.md")))
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from seqmix.io import write_text

    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    base, rows, skipped = run(a.max_seconds, a.max_gib, a.budget_seconds, [T for T in LENGTHS if T <= a.max_length])
    wall = time.perf_counter() - t0
    text = "\n".join(
        [
            "# Long-length attention: time and memory against SDPA (CPU, forward only)",
            "",
            f"Generated by `python benchmarks/attention_long.py --threads {a.threads}` on "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {platform.machine()}, "
            f"{os.cpu_count()} CPU cores, {a.threads} thread(s), torch {torch.__version__}, load average "
            f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (a shared machine: treat ratios as "
            f"rough). Whole run: {wall:.0f} s.",
            "",
            f"One layer, batch 1, width {D_MODEL} ({HEADS} heads of {D_MODEL // HEADS}), float32, no_grad; median "
            "of 3 timed runs up to T = 4096, 1 run above (the memory run). Growth: x SDPA at the longest T over "
            f"x SDPA at T = {GROWTH_FROM}. SDPA = `F.scaled_dot_product_attention(q, k, v, "
            "is_causal=True)` on (1, 4, T, 32). The mixers add the q/k/v and output projections (`nope` = SDPA + "
            f"projections). Blocked forms: ALiBi `query_block={BLOCK}`, PaTH `blocked_from={BLOCK}` (chunk 32). "
            "Memory: peak bytes of live tensors created by the forward (inputs excluded; fused kernels' private "
            "scratch not seen).",
            "",
            *table(base, rows),
            "",
            "Skipped:" if skipped else "Skipped: none.",
            "",
            *[f"- {s}" for s in skipped],
            "",
        ]
    )
    write_text(a.out, text)
    print(text)


if __name__ == "__main__":
    main()
