"""Speed and memory of every registered mixer on CPU (a benchmark, not a test).

1. Forward + backward of each mixer at one shape (default batch 8, length 1024, width 128; ``--small``:
   batch 4, length 256), each in a fresh subprocess so that its peak memory can be read from the kernel:
   peak = VmHWM (peak resident set) minus the resident set just before the first forward. Times are the
   median of ``--reps`` runs after one warm-up, both as seconds and as a ratio to causal softmax attention
   (``nope``) measured in the same run.
2. Each scan / solve op (reference backend) against a token-by-token loop at two lengths, to show the growth
   order: the ratio t(L2) / t(L1) against (L2 / L1) (linear) or (L2 / L1)^2 (quadratic).

    python benchmarks/mixers.py [--small] [--threads 1] [--out benchmarks/mixers_results.md]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import statistics
import sys
import time
from pathlib import Path

D_MODEL = 128


def configs() -> dict[str, dict]:
    """name -> options at width 128, for every registered causal mixer: its declared defaults (the papers'
    sizes: 4 heads of 32, SSM state 16 unless the mixer's default differs), plus the required options of its
    ``example_options`` (seqmix.mixers.base.Mixer clause 2); no hand list, so a new mixer is measured too."""
    from seqmix import registry
    from seqmix.options import declared_options

    out = {}
    for name in registry.names("mixer"):
        cls = registry.get_mixer(name)
        if getattr(cls, "causal", False):
            required = {o.name for o in declared_options(cls) if o.required}
            out[name] = {k: v for k, v in cls.example_options.items() if k in required}
    return out


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def _measure(name: str, B: int, L: int, reps: int, threads: int, q) -> None:
    import torch

    from seqmix.mixers.base import build_mixer

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = build_mixer(name, D_MODEL, seq_len=L, **configs()[name])
    x = torch.randn(B, L, D_MODEL, requires_grad=True)
    base = _rss_kb("VmRSS")
    times = []
    for _r in range(reps + 1):
        t0 = time.perf_counter()
        y = m(x)
        y.square().mean().backward()
        times.append(time.perf_counter() - t0)
        m.zero_grad(set_to_none=True)
        x.grad = None
        del y
    q.put(
        {
            "name": name,
            "seconds": statistics.median(times[1:]),
            "peak_mb": (_rss_kb("VmHWM") - base) / 1024,
            "backend": getattr(m, "backend", "torch-reference"),
            "params": sum(p.numel() for p in m.parameters()),
        }
    )


def measure(name, B, L, reps, threads):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_measure, args=(name, B, L, reps, threads, q))
    p.start()
    p.join()
    if p.exitcode != 0:
        return {"name": name, "error": f"exit code {p.exitcode}"}
    return q.get()


# ----------------------------------------------------------------------------- ops vs token loops
def op_growth(L1: int, L2: int, threads: int) -> list[dict]:
    import torch

    from seqmix.ops import feedback_solve as fs
    from seqmix.ops import path_attention as pa
    from seqmix.ops import selective_scan as ss
    from seqmix.ops import ssd

    torch.set_num_threads(threads)
    torch.manual_seed(0)

    def scan_case(L):
        Nb, d, n = 4, 64, 16
        u, delta = torch.randn(Nb, L, d), torch.rand(Nb, L, d) * 0.1
        A, B, C = -torch.rand(d, n) - 0.5, torch.randn(Nb, L, 1, n), torch.randn(Nb, L, 1, n)
        ref = lambda: ss.selective_scan(u, delta, A, B, C)

        def loop():
            x = torch.zeros(Nb, d, n)
            ys = []
            for t in range(L):
                y, x = ss.selective_scan_step(x, u[:, t], delta[:, t], A, B[:, t], C[:, t])
                ys.append(y)
            return torch.stack(ys, 1)

        return ref, loop

    def ssd_case(L):
        Nb, H, P, N = 4, 8, 16, 32
        x, dt = torch.randn(Nb, L, H, P), torch.rand(Nb, L, H) * 0.1
        A, B, C = -torch.rand(H) - 0.5, torch.randn(Nb, L, 1, N), torch.randn(Nb, L, 1, N)
        return (lambda: ssd.ssd(x, dt, A, B, C, chunk=64)), (lambda: ssd.ssd_recurrent(x, dt, A, B, C))

    def solve_case(L):
        Nb, D = 4, 64
        f, gamma = torch.randn(Nb, L, D), torch.rand(Nb, L) * 0.9
        alpha = torch.softmax(torch.randn(Nb, L, L).masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(-1), -1e9), -1)
        alpha = alpha * torch.ones(L, L).tril(-1)

        def loop():
            s = []
            for t in range(L):
                acc = f[:, t]
                if t:
                    acc = acc + gamma[:, t, None] * torch.einsum("bj,bjd->bd", alpha[:, t, :t], torch.stack(s, 1))
                s.append(acc)
            return torch.stack(s, 1)

        return (lambda: fs.feedback_solve(f, gamma, alpha)), loop

    def path_case(L):
        Nb, H, d = 1, 4, 32
        q, k, w = (
            torch.randn(Nb, H, L, d),
            torch.randn(Nb, H, L, d),
            torch.nn.functional.normalize(torch.randn(Nb, H, L, d), dim=-1),
        )
        beta = torch.rand(Nb, H, L) * 2

        def loop():  # token by token: carry every earlier key through H_t, then score the new query
            K = torch.zeros(Nb, H, 0, d)
            rows = []
            for t in range(L):
                if t:
                    K = K - beta[..., t, None, None] * (K @ w[..., t, :, None]) * w[..., t, None, :]
                K = torch.cat((K, k[..., t : t + 1, :]), 2)
                rows.append(torch.nn.functional.pad(K @ q[..., t, :, None], (0, 0, 0, L - t - 1))[..., 0])
            return torch.stack(rows, -2)

        return (lambda: pa.path_logits(q, k, w, beta, chunk=32)), loop

    def t_of(fn):
        fn()
        t0 = time.perf_counter()
        with torch.no_grad():
            fn()
        return time.perf_counter() - t0

    rows = []
    for op, case, order in (
        ("selective_scan (S6)", scan_case, 1),
        ("ssd (Mamba2)", ssd_case, 1),
        ("feedback_solve (Sessa)", solve_case, 2),
        ("path_logits (PaTH)", path_case, 2),
    ):
        res = {}
        for L in (L1, L2):
            ref, loop = case(L)
            res[L] = (t_of(ref), t_of(loop))
        rows.append(
            {
                "op": op,
                "L1": L1,
                "L2": L2,
                "ref": [res[L1][0], res[L2][0]],
                "loop": [res[L1][1], res[L2][1]],
                "expected_growth": (L2 / L1) ** order,
            }
        )
    return rows


def write_table(
    path: Path, mix: list[dict], ops: list[dict], B: int, L: int, threads: int, small: bool, wall: float
) -> str:
    base = next(r for r in mix if r["name"] == "nope")
    lines = [
        "# Mixer benchmark (CPU, reference backends)",
        "",
        f"Forward + backward, batch {B}, length {L}, width {D_MODEL}, float32, {threads} thread(s), "
        f"{platform.processor() or platform.machine()}, torch {__import__('torch').__version__}"
        f"{' (--small)' if small else ''}. Median of the timed runs after one warm-up; peak = rise of the "
        f"process's peak resident set over the run (fresh process per mixer). Ratios are to causal softmax "
        f"attention without positions (`nope`, SDPA) in the same run. Whole benchmark: {wall:.0f} s.",
        "",
        "| mixer | params | fwd+bwd s | x attention | peak MB | x attention | backend |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in mix:
        if "error" in r:
            lines.append(f"| {r['name']} | | {r['error']} | | | | |")
            continue
        lines.append(
            f"| {r['name']} | {r['params']:,} | {r['seconds']:.3f} | {r['seconds'] / base['seconds']:.1f} | "
            f"{r['peak_mb']:.0f} | {r['peak_mb'] / max(base['peak_mb'], 1e-9):.1f} | {r['backend']} |"
        )
    lines += [
        "",
        "Ops (reference backend, forward only) against a token-by-token loop at two lengths: growth "
        "t(L2)/t(L1) against the op's order (L2/L1 for scans, (L2/L1)^2 for the quadratic ones).",
        "",
        "| op | L1 -> L2 | reference s | loop s | reference growth | loop growth | expected | loop / reference at L2 |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in ops:
        lines.append(
            f"| {r['op']} | {r['L1']} -> {r['L2']} | {r['ref'][0]:.4f} -> {r['ref'][1]:.4f} | "
            f"{r['loop'][0]:.4f} -> {r['loop'][1]:.4f} | {r['ref'][1] / r['ref'][0]:.1f} | "
            f"{r['loop'][1] / r['loop'][0]:.1f} | {r['expected_growth']:.0f} | {r['loop'][1] / r['ref'][1]:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="batch 4, length 256")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="mixer names (default: all)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("mixers_results.md")))
    a = ap.parse_args(argv)
    B, L = (4, 256) if a.small else (8, 1024)
    names = a.only or list(configs())
    if "nope" not in names:
        names = ["nope"] + names
    t0 = time.perf_counter()
    mix = []
    for n in names:
        r = measure(n, B, L, a.reps, a.threads)
        print(json.dumps(r), flush=True)
        mix.append(r)
    ops = op_growth(*((128, 512) if a.small else (256, 1024)), a.threads)
    for r in ops:
        print(json.dumps(r), flush=True)
    print(write_table(Path(a.out), mix, ops, B, L, a.threads, a.small, time.perf_counter() - t0))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
