"""The Triton kernels against their torch references: parity first, speed only where parity holds.

For each op (feedback_solve, rotation_attention, selective_scan, ssd):
1. Parity gate: output and every input gradient of the kernel vs the reference in float64 on small shapes
   (relative RMSE within the tolerance of tests/ops/test_triton_kernels.py). A kernel that fails it gets no
   speed figure at all, so a speedup from a wrong kernel is never printed.
2. On CUDA: forward + backward time of kernel and reference at paper shapes in bf16 (median of --reps after
   warm-up, which also autotunes), and the kernel's achieved FLOP/s as a fraction of the card's dense bf16
   peak (attention, feedback solve), or for the memory-bound scans (selective scan, SSD) its achieved HBM bandwidth
   (the bytes it must move, over its time) as a fraction of the card's HBM peak; peaks are looked up by the
   name torch.cuda.get_device_properties reports (unknown cards say so).
   On CPU: the gate runs the kernels in Triton's interpreter (TRITON_INTERPRET=1, set here before triton is
   imported), then times the references only, at CPU-sized shapes; no GPU figure is taken.

    python benchmarks/kernels.py [--reps 5] [--ops selective_scan ...] [--out benchmarks/kernels_results.md]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import statistics
import time

import torch

GPU = torch.version.cuda is not None and torch.cuda.is_available()
if not GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# dense (no sparsity) bf16 tensor-core peaks, FLOP/s; matched by substring, most specific first
PEAK_BF16 = (("H100 PCIe", 756e12), ("H100", 989e12), ("H200", 989e12), ("H800", 989e12), ("A100", 312e12))
# HBM bandwidth peaks, bytes/s, matched the same way (PCIe/NVL H100s have other memories: unknown)
PEAK_HBM = (("H100 PCIe", None), ("H100 NVL", None), ("H100", 3.35e12), ("H200", 4.8e12))
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}


def feedback_inputs(shape, dtype, device, seed=0):
    Nb, T, D = shape
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(Nb, T, D, generator=gen)
    gamma = 0.999 * torch.tanh(1 + torch.randn(Nb, T, generator=gen))
    alpha = torch.softmax(torch.randn(Nb, T, T, generator=gen), -1)
    return [t.to(device=device, dtype=dtype) for t in (f, gamma, alpha)]


def attention_inputs(shape, dtype, device, seed=0):
    Nb, H, T, d = shape
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(Nb, H, T, d, generator=gen).to(device=device, dtype=dtype) for _ in range(3))
    psi = (2 * torch.rand(Nb, H, T, d // 2, generator=gen, dtype=torch.float64)).to(device)  # learned-like
    return [q, k, v, psi]


def _attention(module):
    slopes_of = {}

    def run(q, k, v, psi):  # M6-like: q/k/v rotated by the same accumulated angles, plus an ALiBi bias
        H = q.shape[1]
        if H not in slopes_of:
            slopes_of[H] = torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)], device=q.device)
        return module.rotation_attention(q, k, v, psi, psi, slopes_of[H])

    return run


def scan_inputs(shape, dtype, device, seed=0):
    """u, delta (Nb, L, d), A (d, n) complex, B, C (Nb, L, G, n) complex, B_bias (d, n) complex, D (d):
    B2S6's default (complex, per-channel bias); G = 1 is S6 with a complex state."""
    Nb, L, d, n, G = shape
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen)
    cpx = lambda *s: torch.complex(rnd(*s), rnd(*s)) * 0.7
    A = torch.complex(-torch.exp(rnd(d, n) - 0.5), 3 * rnd(d, n))
    delta = torch.nn.functional.softplus(rnd(Nb, L, d) - 2)
    real = [t.to(device=device, dtype=dtype) for t in (rnd(Nb, L, d), delta)]
    cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64
    return real + [t.to(device=device, dtype=cdtype) for t in (A, cpx(Nb, L, G, n), cpx(Nb, L, G, n), cpx(d, n))]


def _scan(module):
    def run(u, delta, A, B, C, B_bias):
        return module.selective_scan(u, delta, A, B, C, B_bias=B_bias)

    return run


def scan_bytes(shape, dtype=torch.bfloat16) -> float:
    """The HBM traffic a scan cannot avoid, forward + backward: read u, delta, B, C and write y; then read
    u, delta, dy, B, C and write du, ddelta, dB, dC (B, C complex: two values each)."""
    Nb, L, d, n, G = shape
    size = torch.finfo(dtype).bits // 8
    return size * (8 * Nb * L * d + 2 * 6 * Nb * L * G * n)


def ssd_inputs(shape, dtype, device, seed=0):
    """x (Nb, L, H, P), dt (Nb, L, H) > 0, A (H,) < 0, B, C (Nb, L, G, N), D (H,): Mamba2's SSD inputs."""
    Nb, L, H, P, N, G = shape
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen)
    dt = torch.nn.functional.softplus(rnd(Nb, L, H) - 2)
    ins = (rnd(Nb, L, H, P), dt, -torch.exp(rnd(H)), rnd(Nb, L, G, N), rnd(Nb, L, G, N), rnd(H))
    return [t.to(device=device, dtype=dtype) for t in ins]


def _ssd(fn):
    def run(x, dt, A, B, C, D):
        return fn(x, dt, A, B, C, D=D)

    return run


def ssd_bytes(shape, dtype=torch.bfloat16) -> float:
    """The HBM traffic an SSD scan cannot avoid, forward + backward: read x, dt, B, C and write y; then read
    x, dt, dy, B, C and write dx, ddt, dB, dC."""
    Nb, L, H, P, N, G = shape
    size = torch.finfo(dtype).bits // 8
    return size * (5 * Nb * L * H * P + 3 * Nb * L * H + 6 * Nb * L * G * N)


OPS = {
    "feedback_solve": {
        "inputs": feedback_inputs,
        "parity": [((2, 37, 40), torch.float32), ((1, 21, 5), torch.bfloat16)],
        "gpu": [(32, 600, 256), (16, 2048, 256)],  # sessa E1 (B 32, T ~600, D 256); spec pitfall (e) B 16, T 2048
        "cpu": [(4, 600, 256)],
        "flops": lambda s: 3 * s[0] * s[1] ** 2 * s[2],  # solve + transposed solve + g s^T, each ~T^2 D / 2 MACs
        "reference": lambda: importlib.import_module("seqmix.ops.feedback_solve.reference").feedback_solve_dense,
    },
    "rotation_attention": {
        "inputs": attention_inputs,
        "parity": [((2, 2, 37, 8), torch.float32), ((1, 2, 20, 8), torch.bfloat16)],
        "gpu": [(32, 8, 512, 96), (1, 8, 16384, 96)],  # rotations E1: 32 x 512, 8 heads of 96; eval at 16K
        "cpu": [(2, 8, 512, 96)],
        "flops": lambda s: 3.5 * 2 * s[0] * s[1] * s[2] ** 2 * s[3],  # causal fwd 2 B H T^2 d, bwd 2.5x fwd
        "reference": lambda: _attention(importlib.import_module("seqmix.ops.rotation_attention.reference")),
    },
    "selective_scan": {
        "inputs": scan_inputs,
        "parity": [((2, 10, 6, 5, 2), torch.float32), ((1, 9, 6, 4, 3), torch.bfloat16)],
        "gpu": [(8, 2048, 1536, 16, 1), (8, 2048, 1536, 16, 8)],  # Mamba-130M-like S6; B2S6 with 8 blocks
        "cpu": [(2, 512, 256, 16, 1)],
        "bytes": scan_bytes,
        "reference": lambda: _scan(importlib.import_module("seqmix.ops.selective_scan.reference")),
    },
    "ssd": {
        "inputs": ssd_inputs,
        "parity": [((2, 10, 4, 6, 5, 2), torch.float32), ((1, 9, 2, 4, 4, 1), torch.bfloat16)],
        "gpu": [(8, 2048, 24, 64, 128, 1)],  # Mamba2-130M-like: 24 heads of 64, d_state 128, one group
        "cpu": [(2, 512, 8, 64, 64, 1)],
        "bytes": ssd_bytes,
        "reference": lambda: _ssd(importlib.import_module("seqmix.ops.ssd.reference").ssd_chunked),
    },
}


def kernel_of(name: str):
    module = importlib.import_module(f"seqmix.ops.{name}.triton")
    if name == "ssd":
        return _ssd(module.ssd)
    wrap = {"rotation_attention": _attention, "selective_scan": _scan}.get(name)
    return wrap(module) if wrap else module.feedback_solve


def rel_rmse(a, b) -> float:
    a, b = (torch.view_as_real(t) if t.is_complex() else t for t in (a, b))
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-300)).item()


def exact(t: torch.Tensor) -> torch.Tensor:
    """t upcast for the reference: float64, complex128 for complex t."""
    return t.detach().to(torch.complex128 if t.is_complex() else torch.float64).requires_grad_()


def parity(name: str, device) -> tuple[bool, str]:
    """(passed, worst relative RMSE per case) of the kernel against the float64 reference."""
    spec, kernel, reference = OPS[name], kernel_of(name), OPS[name]["reference"]()
    notes, ok = [], True
    for shape, dtype in spec["parity"]:
        inputs = spec["inputs"](shape, dtype, device)
        leaves = [t.detach().requires_grad_() for t in inputs]
        out = kernel(*leaves)
        w = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(device)
        grads = torch.autograd.grad((out.double() * w).sum(), leaves)
        upcast = [exact(t) for t in inputs]
        ref = reference(*upcast)
        ref_grads = torch.autograd.grad((ref * w).sum(), upcast)
        worst = max([rel_rmse(out, ref)] + [rel_rmse(g, r) for g, r in zip(grads, ref_grads) if r.norm() > 0])
        ok &= worst <= TOL[dtype]
        notes.append(f"{tuple(shape)} {str(dtype).removeprefix('torch.')}: {worst:.1e} (tol {TOL[dtype]:.0e})")
    return ok, "; ".join(notes)


def fwd_bwd_seconds(fn, inputs, reps: int) -> float:
    """Median seconds of one forward + backward (after one warm-up call, which also autotunes)."""
    leaves = [t.detach().requires_grad_(t.dtype != torch.float64) for t in inputs]
    times = []
    for i in range(reps + 1):
        _sync()
        t0 = time.perf_counter()
        out = fn(*leaves)
        out.backward(torch.ones_like(out))
        _sync()
        if i:
            times.append(time.perf_counter() - t0)
        for t in leaves:
            t.grad = None
    return statistics.median(times)


def _sync():
    if GPU:
        torch.cuda.synchronize()


def peak_of(table) -> tuple[str, float | None]:
    """(card name, its peak from ``table``, None when the card is not listed)."""
    name = torch.cuda.get_device_properties(0).name
    return name, next((p for key, p in table if key in name), None)


def achieved(spec: dict, shape, seconds: float) -> str:
    """The kernel's FLOP/s (compute-bound ops) or HBM bytes/s (ops with ``bytes``) over the card's peak."""
    metric, table, unit = ("bytes", PEAK_HBM, "HBM") if "bytes" in spec else ("flops", PEAK_BF16, "bf16 FLOP/s")
    card, peak = peak_of(table)
    if peak is None:
        return f"unknown {unit} peak for {card}"
    return f"{spec[metric](shape) / seconds / peak:.1%} of {card} {unit} peak"


def timed(fn, inputs, reps) -> str | float:
    try:
        return fwd_bwd_seconds(fn, inputs, reps)
    except torch.OutOfMemoryError:
        return "out of memory"


def speed_rows(name: str, reps: int) -> list[str]:
    spec = OPS[name]
    rows = []
    if GPU:
        for shape in spec["gpu"]:
            inputs = spec["inputs"](shape, torch.bfloat16, "cuda")
            tk, tr = timed(kernel_of(name), inputs, reps), timed(spec["reference"](), inputs, reps)
            frac = "-" if isinstance(tk, str) else achieved(spec, shape, tk)
            speedup = f"{tr / tk:.2f}" if isinstance(tk, float) and isinstance(tr, float) else "-"
            rows.append(f"| {name} | {shape} | bf16 | {_s(tk)} | {_s(tr)} | {speedup} | {frac} |")
    else:
        for shape in spec["cpu"]:
            tr = timed(spec["reference"](), spec["inputs"](shape, torch.float32, "cpu"), reps)
            rows.append(f"| {name} | {shape} | fp32 | no GPU | {_s(tr)} | - | - |")
    return rows


def _s(t) -> str:
    return f"{t * 1e3:.2f} ms" if isinstance(t, float) else t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ops", nargs="+", choices=sorted(OPS), default=list(OPS), help="the ops to check (all)")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if GPU else "cpu"
    mode = "CUDA" if GPU else "CPU (Triton interpreter for parity)"
    lines = [
        f"# Triton kernels vs references ({datetime.date.today()}, {platform.machine()}, torch {torch.__version__},"
        f" {mode}, {args.threads} thread(s))",
        "",
        "| op | parity | worst relative RMSE (output and input gradients vs float64 reference) |",
        "|---|---|---|",
    ]
    passed = {}
    for name in args.ops:
        passed[name], notes = parity(name, device)
        lines.append(f"| {name} | {'pass' if passed[name] else 'FAIL'} | {notes} |")
    lines += ["", "| op | shape | dtype | kernel fwd+bwd | reference fwd+bwd | speedup | kernel achieved / peak |"]
    lines.append("|---|---|---|---|---|---|---|")
    for name in args.ops:
        if not passed[name]:
            lines.append(f"| {name} | - | - | parity failed: no speed reported | - | - | - |")
            continue
        lines += speed_rows(name, args.reps)
    if not GPU:
        lines += ["", "No GPU figures were taken: this machine has no CUDA device (reference timings only)."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from seqmix.io import atomic_path

        with atomic_path(args.out) as tmp:
            tmp.write_text(text + "\n")


if __name__ == "__main__":
    main()
