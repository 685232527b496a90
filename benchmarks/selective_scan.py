"""Selective scan on CPU: the lean backend against the reference and a token loop (a benchmark, not a test).

Forward + backward of one scan at the b2s6 spec's CPU-scale shapes (§6: batch 8, d = 64, n = 16, L = 256 and
1024; float32, the training dtype), for two units:

- ``b2s6``: complex A (n,), complex B with G = 8 groups, real C, complex B_bias (d, n), ZOH (b2s6 spec §2.3);
- ``s6``: real A (n,), real B and C shared by all channels (G = 1), ZOH (b2s6 spec §2.2).

Implementations: ``lean`` (ops/selective_scan/lean.py, the CPU default), ``reference`` (reference.py: autograd
through the chunked scan) and ``token loop`` (``selective_scan_step`` once per token, vectorised over batch,
channels and state, autograd for its backward: b2s6 spec §2.8, tier 1). The float64 oracle of
tests/oracles.py also loops over channels and writes its states in place, so it has no backward and
is not timed here.

Each (unit, L, implementation) runs in a fresh process: time = median of ``--reps`` runs after one warm-up,
wall clock and CPU time of the process (the machine is shared; with one thread, CPU time is close to the
wall time on an idle machine);
peak = rise of the process's peak resident set (VmHWM) over the runs, as in benchmarks/mixers.py; saved =
how many tensors of at least the (batch, L, d, n) size autograd keeps for the backward pass
(``saved_tensors_hooks``). Writes a generated Markdown report (date, machine, command).

    python benchmarks/selective_scan.py [--reps 2] [--threads 1] [--out benchmarks/selective_scan_results.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

BATCH, D, N, GROUPS = 8, 64, 16, 8
LENGTHS = (256, 1024)
UNITS = ("b2s6", "s6")
IMPLS = ("lean", "reference", "token loop")
TARGET_MEMORY, TARGET_SPEED = 2.0, 1.5  # issue 14: peak reference / lean, time token loop / lean at L = 1024


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def make_inputs(unit: str, L: int) -> dict:
    """The scan's inputs, leaves that require grad: u, delta (B, L, d); A; B, C (B, L, G, n); B_bias."""
    import torch

    g = torch.Generator().manual_seed(L)
    r = lambda *s: torch.randn(*s, generator=g)
    if unit == "b2s6":
        A = torch.complex(-0.5 * torch.ones(N), torch.pi * torch.arange(N, dtype=torch.float32))
        B, Bb = torch.complex(r(BATCH, L, GROUPS, N), r(BATCH, L, GROUPS, N)), torch.complex(r(D, N), r(D, N))
        C = r(BATCH, L, GROUPS, N)
    else:
        A, B, C, Bb = -torch.arange(1, N + 1, dtype=torch.float32), r(BATCH, L, 1, N), r(BATCH, L, 1, N), None
    delta = torch.nn.functional.softplus(r(BATCH, L, D) - 3)  # steps around 0.05, the mixers' init range
    args = dict(u=r(BATCH, L, D), delta=delta, A=A, B=B, C=C, B_bias=Bb)
    return {k: None if t is None else t.requires_grad_() for k, t in args.items()}


def run_once(impl: str, args: dict):
    """The scan's output y (B, L, d) through one implementation."""
    import torch

    from seqmix.ops import selective_scan as ss

    if impl != "token loop":
        return ss.selective_scan(**args, backend=impl)
    u, delta, A, B, C, Bb = (args[k] for k in ("u", "delta", "A", "B", "C", "B_bias"))
    cplx = any(t is not None and t.is_complex() for t in (A, B, Bb))
    x = torch.zeros(BATCH, D, N, dtype=torch.complex64 if cplx else torch.float32)
    ys = []
    for t in range(u.shape[1]):
        y, x = ss.selective_scan_step(x, u[:, t], delta[:, t], A, B[:, t], C[:, t], B_bias=Bb)
        ys.append(y)
    return torch.stack(ys, 1)


def _measure(unit: str, L: int, impl: str, reps: int, threads: int, q) -> None:
    import torch

    torch.set_num_threads(threads)
    args = make_inputs(unit, L)
    full = BATCH * L * D * N
    saved = []

    def pack(t):
        if t.numel() >= full:
            saved.append(1)
        return t

    base = _rss_kb("VmRSS")
    times, cpu_times = [], []
    for rep in range(reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.autograd.graph.saved_tensors_hooks(pack if rep == 0 else (lambda t: t), lambda t: t):
            y = run_once(impl, args)
        y.square().mean().backward()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        for t in args.values():
            if t is not None:
                t.grad = None
        del y
    q.put(
        {
            "unit": unit,
            "L": L,
            "impl": impl,
            "seconds": statistics.median(times[1:]),
            "cpu_seconds": statistics.median(cpu_times[1:]),
            "peak_mb": (_rss_kb("VmHWM") - base) / 1024,
            "saved_full": len(saved),
        }
    )


def measure(unit: str, L: int, impl: str, reps: int, threads: int) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_measure, args=(unit, L, impl, reps, threads, q))
    p.start()
    p.join()
    if p.exitcode != 0:
        return {"unit": unit, "L": L, "impl": impl, "error": f"exit code {p.exitcode}"}
    return q.get()


def ratios(rows: list[dict]) -> list[dict]:
    """Per (unit, L): peak reference / lean, time reference / lean and time token loop / lean."""
    by = {(r["unit"], r["L"], r["impl"]): r for r in rows if "error" not in r}
    out = []
    for unit in UNITS:
        for L in LENGTHS:
            lean, ref, loop = (by.get((unit, L, i)) for i in IMPLS)
            if lean is None or ref is None or loop is None:
                continue
            out.append(
                {
                    "unit": unit,
                    "L": L,
                    "memory": ref["peak_mb"] / max(lean["peak_mb"], 1e-9),
                    "memory_loop": loop["peak_mb"] / max(lean["peak_mb"], 1e-9),
                    "speed_ref": ref["seconds"] / lean["seconds"],
                    "speed_loop": loop["seconds"] / lean["seconds"],
                    "cpu_ref": ref["cpu_seconds"] / lean["cpu_seconds"],
                    "cpu_loop": loop["cpu_seconds"] / lean["cpu_seconds"],
                }
            )
    return out


def verdict(rat: list[dict]) -> list[str]:
    lines = []
    for r in (r for r in rat if r["L"] == max(LENGTHS)):
        mem_ok = r["memory"] >= TARGET_MEMORY
        speed_ok = min(r["speed_loop"], r["cpu_loop"]) >= TARGET_SPEED
        lines.append(
            f"- {r['unit']}, L = {r['L']}: peak memory {r['memory']:.1f}x below the reference (target >= "
            f"{TARGET_MEMORY:g}x: {'met' if mem_ok else 'NOT met'}); {r['speed_loop']:.2f}x faster than the token "
            f"loop in wall time and {r['cpu_loop']:.2f}x in CPU time (target >= {TARGET_SPEED:g}x in both: "
            f"{'met' if speed_ok else 'NOT met'})."
        )
    return lines


def report(rows: list[dict], threads: int, reps: int, wall: float, command: str) -> str:
    import torch

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"
    lines = [
        "# Selective scan on CPU: lean vs reference vs token loop",
        "",
        f"Generated by `{command}` on {when}; {machine}, torch {torch.__version__}, {threads} torch thread(s). "
        f"Load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (the machine is shared: "
        f"compare ratios, not seconds). Whole run: {wall:.0f} s.",
        "",
        f"Forward + backward of y.square().mean(), batch {BATCH}, d = {D}, n = {N}, float32. b2s6: complex A, "
        f"complex B in G = {GROUPS} groups, real C, complex B_bias, ZOH; s6: real A, real B and C (G = 1), ZOH. "
        f"Time: median of {reps} runs after a warm-up, wall clock and CPU time of the process (with one thread, "
        "CPU time is close to the wall time of an idle machine); peak: rise of the peak resident set (fresh "
        "process each); "
        "saved: tensors of at least the (batch, L, d, n) size kept for the backward pass.",
        "",
        "| unit | L | implementation | fwd+bwd wall s | fwd+bwd CPU s | peak MB | saved full-size tensors |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['unit']} | {r['L']} | {r['impl']} | {r['error']} | | | |")
            continue
        lines.append(
            f"| {r['unit']} | {r['L']} | {r['impl']} | {r['seconds']:.3f} | {r['cpu_seconds']:.3f} | "
            f"{r['peak_mb']:.0f} | {r['saved_full']} |"
        )
    rat = ratios(rows)
    lines += [
        "",
        "| unit | L | peak: reference / lean | peak: token loop / lean | wall: reference / lean | "
        "wall: token loop / lean | CPU: reference / lean | CPU: token loop / lean |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rat:
        lines.append(
            f"| {r['unit']} | {r['L']} | {r['memory']:.1f} | {r['memory_loop']:.1f} | {r['speed_ref']:.2f} | "
            f"{r['speed_loop']:.2f} | {r['cpu_ref']:.2f} | {r['cpu_loop']:.2f} |"
        )
    lines += ["", "Targets (issue 14) at L = 1024:", "", *verdict(rat)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).with_name("selective_scan_results.md")))
    a = ap.parse_args(argv)
    from seqmix.io import write_text

    t0 = time.perf_counter()
    rows = []
    for unit in UNITS:
        for L in LENGTHS:
            for impl in IMPLS:
                rows.append(measure(unit, L, impl, a.reps, a.threads))
                print(json.dumps(rows[-1]), flush=True)
    command = "python benchmarks/selective_scan.py" + "".join(f" {x}" for x in (argv or sys.argv[1:]))
    text = report(rows, a.threads, a.reps, time.perf_counter() - t0, command)
    write_text(a.out, text)
    print(text)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
