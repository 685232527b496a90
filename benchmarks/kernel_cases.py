"""The four ops benchmarks/kernels.py judges: their inputs, shapes and what each fundamentally costs.

``cost(shape)`` gives the work no implementation can avoid, forward + backward: ``bytes`` of HBM traffic
(read every input once, write every output and gradient once), ``flops`` of tensor-core-shaped products
(matmuls; bf16), ``fp32_flops`` of elementwise arithmetic and ``exps`` of special-function evaluations
(exp, sin, cos, reciprocal). kernels.py turns them into the op's roofline time on the measured card: the
largest of bytes / copy bandwidth, flops / matmul throughput and exps / transcendental throughput (the
elementwise fp32 work is reported but has no ceiling measured: a scan's exps bound it first).
"""

from __future__ import annotations

import importlib

import torch


def feedback_inputs(shape, dtype, device, seed=0):
    Nb, T, D = shape
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(Nb, T, D, generator=gen)
    gamma = 0.999 * torch.tanh(1 + torch.randn(Nb, T, generator=gen))
    alpha = torch.softmax(torch.randn(Nb, T, T, generator=gen), -1)
    return [t.to(device=device, dtype=dtype) for t in (f, gamma, alpha)]


def feedback_cost(shape, size=2):
    Nb, T, D = shape  # solve + transposed solve + the routing gradient g s^T, each ~T^2 D / 2 MACs
    return {"bytes": size * Nb * (4 * T * T + 4 * T * D + 3 * T), "flops": 3 * Nb * T**2 * D}


def feedback_attention_inputs(shape, dtype, device, seed=0):
    """f (Nb, T, D), gamma (Nb, T), q_b, k_b (Nb, T, d): what the Sessa mixer hands the solve (d = D / 4)."""
    Nb, T, D = shape
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(Nb, T, D, generator=gen)
    gamma = 0.999 * torch.tanh(1 + torch.randn(Nb, T, generator=gen))
    qb, kb = (torch.randn(Nb, T, max(1, D // 4), generator=gen) for _ in range(2))
    return [t.to(device=device, dtype=dtype) for t in (f, gamma, qb, kb)]


def feedback_attention_call(fn):
    def run(f, gamma, qb, kb):
        return fn(f, gamma, qb, kb, qb.shape[-1] ** -0.5)

    return run


def feedback_attention_cost(shape, size=2):
    Nb, T, D = shape  # the solve's, plus q_b k_b^T and its gradients (3 T^2 d, d = D / 4)
    cost = feedback_cost(shape, size)
    cost["flops"] += 3 * 2 * Nb * T**2 * max(1, D // 4)
    return cost


def attention_inputs(shape, dtype, device, seed=0):
    Nb, H, T, d = shape
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(Nb, H, T, d, generator=gen).to(device=device, dtype=dtype) for _ in range(3))
    psi = (2 * torch.rand(Nb, H, T, d // 2, generator=gen, dtype=torch.float64)).to(device)  # learned-like
    return [q, k, v, psi]


def alibi_slopes(H: int, device) -> torch.Tensor:
    return torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)], device=device)


def attention_call(fn):
    """M6-like (the heaviest variant): q/k/v rotated by the same accumulated angles, plus an ALiBi bias."""

    def run(q, k, v, psi):
        return fn(q, k, v, psi, psi, alibi_slopes(q.shape[1], q.device))

    return run


def attention_cost(shape, size=2):
    Nb, H, T, d = shape  # causal: forward 2 H T^2 d FLOP per sequence, backward 2.5x that
    return {"bytes": size * 11 * Nb * H * T * d, "flops": 3.5 * 2 * Nb * H * T**2 * d}


def scan_inputs(shape, dtype, device, seed=0):
    """u, delta (Nb, L, d), A (d, n) complex, B, C (Nb, L, G, n) complex, B_bias (d, n) complex: B2S6's
    default (complex, per-channel bias); G = 1 is S6 with a complex state."""
    Nb, L, d, n, G = shape
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen)
    cpx = lambda *s: torch.complex(rnd(*s), rnd(*s)) * 0.7
    A = torch.complex(-torch.exp(rnd(d, n) - 0.5), 3 * rnd(d, n))
    delta = torch.nn.functional.softplus(rnd(Nb, L, d) - 2)
    real = [t.to(device=device, dtype=dtype) for t in (rnd(Nb, L, d), delta)]
    cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64
    return real + [t.to(device=device, dtype=cdtype) for t in (A, cpx(Nb, L, G, n), cpx(Nb, L, G, n), cpx(d, n))]


def scan_call(fn):
    def run(u, delta, A, B, C, B_bias):
        return fn(u, delta, A, B, C, B_bias=B_bias)

    return run


def scan_cost(shape, size=2):
    """Memory: read u, delta, B, C, write y; backward read u, delta, dy, B, C, write du, ddelta, dB, dC (B, C
    complex). Per (batch, step, channel, state) element, complex and zoh: forward exp(z) (exp, sin, cos) and
    phi1(z) = (e^z - 1) / z (one reciprocal) = 4 special functions, the backward's recompute the same again:
    8; elementwise about 20 FLOP forward and 60 backward."""
    Nb, L, d, n, G = shape
    elems = Nb * L * d * n
    return {"bytes": size * (8 * Nb * L * d + 2 * 6 * Nb * L * G * n), "exps": 8 * elems, "fp32_flops": 80 * elems}


def ssd_inputs(shape, dtype, device, seed=0):
    """x (Nb, L, H, P), dt (Nb, L, H) > 0, A (H,) < 0, B, C (Nb, L, G, N), D (H,): Mamba2's SSD inputs."""
    Nb, L, H, P, N, G = shape
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen)
    dt = torch.nn.functional.softplus(rnd(Nb, L, H) - 2)
    ins = (rnd(Nb, L, H, P), dt, -torch.exp(rnd(H)), rnd(Nb, L, G, N), rnd(Nb, L, G, N), rnd(H))
    return [t.to(device=device, dtype=dtype) for t in ins]


def ssd_call(fn):
    def run(x, dt, A, B, C, D):
        return fn(x, dt, A, B, C, D=D)

    return run


def ssd_cost(shape, size=2, Q=64):
    """Chunk Q: per (batch, step, head) the intra-chunk C B^T (Q N) and its product with dt x (Q P), the chunk
    state B^T x and the output from states C h (N P each): MACs, forward; the backward twice that."""
    Nb, L, H, P, N, G = shape
    macs = Nb * L * H * (Q * N + Q * P + 2 * N * P)
    return {
        "bytes": size * (5 * Nb * L * H * P + 3 * Nb * L * H + 6 * Nb * L * G * N),
        "flops": 3 * 2 * macs,
        "exps": 3 * Nb * L * H * Q,
    }


OPS = {
    "feedback_solve": {
        "inputs": feedback_inputs,
        "call": lambda fn: fn,
        "cost": feedback_cost,
        "parity": [((2, 37, 40), torch.float32), ((1, 21, 5), torch.bfloat16), ((2, 130, 8), torch.bfloat16)],
        "gpu": [(16, 2048, 256), (16, 4096, 256)],  # spec pitfall (e) B 16, T 2048; the T = 4096
        "cpu": [(4, 600, 256)],
        "lengths": [(2, T, 64) for T in (64, 100, 257, 1000, 2049)],
    },
    "feedback_attention_solve": {  # what the Sessa mixer calls: softmax over the strict past, then the solve
        "inputs": feedback_attention_inputs,
        "call": feedback_attention_call,
        "cost": feedback_attention_cost,
        "parity": [((2, 37, 40), torch.float32), ((1, 21, 8), torch.bfloat16)],
        "gpu": [(16, 2048, 256)],
        "cpu": [(4, 600, 256)],
        "lengths": [(2, T, 64) for T in (64, 100, 257, 1000, 2049)],
        "package": "feedback_solve",
        "op": "ATTENTION_OP",
    },
    "rotation_attention": {
        "inputs": attention_inputs,
        "call": attention_call,
        "cost": attention_cost,
        "parity": [((2, 2, 37, 16), torch.float32), ((1, 2, 20, 16), torch.bfloat16)],
        "gpu": [(4, 8, 4096, 96), (1, 8, 16384, 96)],  # rotations: 8 heads of 96; evaluation lengths
        "cpu": [(2, 8, 512, 96)],
        "lengths": [(1, 2, T, 64) for T in (64, 100, 257, 1000, 2049)],
    },
    "selective_scan": {
        "inputs": scan_inputs,
        "call": scan_call,
        "cost": scan_cost,
        "parity": [((2, 10, 6, 5, 2), torch.float32), ((1, 9, 6, 4, 3), torch.bfloat16)],
        "gpu": [(8, 2048, 1536, 16, 1), (8, 2048, 1536, 16, 8)],  # Mamba-130M-like S6; B2S6 with 8 blocks
        "cpu": [(2, 512, 256, 16, 1)],
        "lengths": [(2, T, 64, 16, 1) for T in (64, 100, 257, 1000, 2049)],
    },
    "ssd": {
        "inputs": ssd_inputs,
        "call": ssd_call,
        "cost": ssd_cost,
        "parity": [((2, 10, 4, 6, 5, 2), torch.float32), ((1, 9, 2, 4, 4, 1), torch.bfloat16)],
        "gpu": [(8, 2048, 24, 64, 128, 1)],  # Mamba2-130M-like: 24 heads of 64, d_state 128, one group
        "cpu": [(2, 512, 8, 64, 64, 1)],
        "lengths": [(2, T, 4, 16, 16, 1) for T in (64, 100, 257, 1000, 2049)],
    },
}


def op_of(name: str):
    """The registered ``seqmix.ops.dispatch.Op`` behind an entry of OPS."""
    spec = OPS[name]
    return getattr(importlib.import_module(f"seqmix.ops.{spec.get('package', name)}"), spec.get("op", "OP"))


def backends(name: str) -> dict:
    """backend name -> callable on the op's benchmark inputs, for every backend this process registered."""
    op = op_of(name)
    call = OPS[name]["call"]
    return {b: call(fn) for b, fn in op.backends.items() if b != "lean"}
