"""The fast backends (Triton kernels and torch-fused forms) against their references: parity first, speed only
where parity holds, every figure a share of the card's own ceilings measured in the same run.

For each op (feedback_solve, rotation_attention, selective_scan, ssd; cases in kernel_cases.py):
1. Parity gate: output and every input gradient of each fast backend vs the reference in float64 on small
   shapes (relative RMSE within the tolerance of the tests). A backend that fails gets no speed figure.
2. On CUDA: the card's copy bandwidth, bf16 matmul and exp throughput (card_ceilings.py); forward + backward
   time of every backend at paper shapes in bf16 (median of --reps after warm-up and autotuning); each as a
   speedup over the reference and a share of the op's roofline (the largest of its memory, matmul and
   transcendental times on this card) and of the measured matmul throughput. Then: rotation attention's
   variants against torch's flash SDPA on plain causal attention; the selective-scan launch shapes; how
   many Triton compilations (and torch recompilations) an extrapolation sweep of lengths triggers; whether
   each backend is bitwise repeatable and what deterministic mode (SEQMIX_DETERMINISTIC=1) costs.
   ``--table`` writes the speedups into src/seqmix/ops/speed_table.json, which the dispatcher reads.
   On CPU: parity runs the kernels in Triton's interpreter (TRITON_INTERPRET=1, set here before triton is
   imported); only the references and fused forms are timed, at CPU-sized shapes.

    python benchmarks/kernels.py [--reps 5] [--ops ssd ...] [--out benchmarks/kernels_results.md] [--table]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path

import torch

GPU = torch.version.cuda is not None and torch.cuda.is_available()
if not GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import card_ceilings  # noqa: E402
import kernel_checks  # noqa: E402
from fwd_bwd import fwd_bwd_seconds, ms  # noqa: E402
from kernel_cases import OPS, backends  # noqa: E402

TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}
TABLE = Path(__file__).resolve().parents[1] / "src" / "seqmix" / "ops" / "speed_table.json"


def rel_rmse(a, b) -> float:
    a, b = (torch.view_as_real(t) if t.is_complex() else t for t in (a, b))
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-300)).item()


def exact(t: torch.Tensor) -> torch.Tensor:
    """t upcast for the reference: float64, complex128 for complex t."""
    return t.detach().to(torch.complex128 if t.is_complex() else torch.float64).requires_grad_()


def parity(name: str, backend: str, fn, device) -> tuple[bool, str]:
    """(passed, worst relative RMSE per case) of one backend against the float64 reference."""
    spec, reference = OPS[name], backends(name)["reference"]
    notes, ok = [], True
    for shape, dtype in spec["parity"]:
        inputs = spec["inputs"](shape, dtype, device)
        leaves = [t.detach().requires_grad_() for t in inputs]
        out = fn(*leaves)
        w = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(device)
        grads = torch.autograd.grad((out.double() * w).sum(), leaves, allow_unused=True)
        upcast = [exact(t) for t in inputs]
        ref = reference(*upcast)
        ref_grads = torch.autograd.grad((ref * w).sum(), upcast, allow_unused=True)
        pairs = [(g, r) for g, r in zip(grads, ref_grads) if r is not None and r.norm() > 0]
        if any(g is None for g, _ in pairs):
            ok, worst = False, float("inf")  # a gradient the reference has and the backend lost
        else:
            worst = max([rel_rmse(out, ref)] + [rel_rmse(g, r) for g, r in pairs])
        ok &= worst <= TOL[dtype]
        notes.append(f"{tuple(shape)} {str(dtype).removeprefix('torch.')}: {worst:.1e} (tol {TOL[dtype]:.0e})")
    return ok, "; ".join(notes)


def timed(fn, inputs, reps) -> str | float:
    try:
        return fwd_bwd_seconds(fn, inputs, reps)
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        return "out of memory"


def roofline(cost: dict, card: dict) -> tuple[float, str]:
    """(seconds, which bound) of the op's unavoidable work on this card."""
    bounds = {
        "memory": cost.get("bytes", 0) / card["copy_bytes_per_s"],
        "matmul": cost.get("flops", 0) / card["bf16_flops_per_s"],
        "transcendental": cost.get("exps", 0) / card["exp_per_s"],
    }
    which = max(bounds, key=bounds.get)
    return bounds[which], which


def speed_section(names, passed, reps, card, lines, speedups) -> None:
    lines += [
        "",
        "| op | shape | backend | fwd+bwd | reference | speedup | roofline (bound) | share of roofline "
        "| share of bf16 matmul |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        spec, fns = OPS[name], backends(name)
        for shape in spec["gpu"] if GPU else spec["cpu"]:
            dtype = torch.bfloat16 if GPU else torch.float32
            inputs = spec["inputs"](shape, dtype, "cuda" if GPU else "cpu")
            t_ref = timed(fns["reference"], inputs, reps)
            cost = spec["cost"](shape, 2 if GPU else 4)
            for backend, fn in fns.items():
                if backend == "reference" or not passed.get((name, backend)):
                    continue
                if backend == "triton" and not GPU:
                    continue  # the interpreter is for parity, not for time
                t = timed(fn, inputs, reps)
                speed = t_ref / t if isinstance(t, float) and isinstance(t_ref, float) else None
                if speed is not None:
                    speedups.setdefault(name, {}).setdefault(backend, []).append(speed)
                roof = share = mm = "-"
                if card and isinstance(t, float):
                    r, bound = roofline(cost, card)
                    roof, share = f"{ms(r)} ({bound})", f"{r / t:.1%}"
                    mm = f"{cost['flops'] / t / card['bf16_flops_per_s']:.1%}" if cost.get("flops") else "-"
                sp = f"{speed:.2f}x" if speed is not None else "-"
                lines.append(
                    f"| {name} | {tuple(shape)} | {backend} | {ms(t)} | {ms(t_ref)} | {sp} | {roof} | {share} | {mm} |"
                )
            flush(lines)


_OUT: str | None = None


def flush(lines) -> None:
    """Write what is measured so far (atomically), so a run cut short still leaves its figures."""
    text = "\n".join(lines)
    if _OUT:
        tmp = Path(_OUT + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(_OUT)


def write_table(card: dict, speedups: dict, date: str, source: str) -> None:
    data = json.loads(TABLE.read_text()) if TABLE.exists() else {"cards": {}}
    data["cards"][card["card"]] = {
        "date": date,
        "source": source,
        "ops": {op: {b: round(min(v), 3) for b, v in figs.items()} for op, figs in sorted(speedups.items())},
    }
    tmp = TABLE.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(TABLE)
    from seqmix.ops import speed_table

    speed_table.load.cache_clear()  # the checks that follow choose backends by the new figures


def main() -> None:
    global _OUT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="timed repeats per figure (median)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--ops", nargs="+", choices=sorted(OPS), default=list(OPS), help="the ops to check (all)")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here, updated as it goes")
    ap.add_argument("--table", action="store_true", help="on CUDA: write the speedups to ops/speed_table.json")
    ap.add_argument("--skip", nargs="*", default=[], choices=kernel_checks.SECTIONS, help="GPU sections to skip")
    args = ap.parse_args()
    _OUT = args.out
    torch.set_num_threads(args.threads)
    device = "cuda" if GPU else "cpu"
    today = str(datetime.date.today())
    mode = "CUDA" if GPU else "CPU (Triton interpreter for parity)"
    lines = [
        f"# Fast backends vs references ({today}, {platform.machine()}, torch {torch.__version__}, {mode}, "
        f"{args.threads} thread(s))",
    ]
    card = card_ceilings.measure()
    lines += ["", f"Card: {card_ceilings.describe(card)}." if card else "No CUDA device: no ceilings measured."]
    lines += ["", "| op | backend | parity | worst relative RMSE (output and input gradients vs float64) |"]
    lines.append("|---|---|---|---|")
    passed = {}
    for name in args.ops:
        for backend, fn in backends(name).items():
            if backend == "reference":
                continue
            try:
                ok, notes = parity(name, backend, fn, device)
            except Exception as e:  # a backend that cannot run these shapes fails the gate, the rest go on
                ok, notes = False, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            passed[name, backend] = ok
            lines.append(f"| {name} | {backend} | {'pass' if ok else 'FAIL'} | {notes} |")
            flush(lines)
    speedups: dict = {}
    speed_section(args.ops, passed, args.reps, card, lines, speedups)
    if GPU:
        if args.table and card:  # before the slower checks: a run cut short still leaves its table
            write_table(card, speedups, today, f"benchmarks/{Path(args.out).name}" if args.out else "-")
            lines += ["", f"Speedups written to {TABLE.relative_to(TABLE.parents[3])} for {card['card']}."]
        for section in kernel_checks.SECTIONS:
            if section not in args.skip:
                kernel_checks.run(section, args.ops, passed, args.reps, lines, flush)
    else:
        lines += ["", "No GPU figures were taken: this machine has no CUDA device (interpreter parity, CPU times)."]
    flush(lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
