"""The ops' reference backends against independent oracles (tests/oracles.py: loops and dense float64
operators from the papers' equations): relative error <= 1e-10 in float64 and <= 1e-4 in float32."""

from __future__ import annotations

import math

import pytest
import torch

from seqmix.ops import feedback_solve as fs
from seqmix.ops import fftconv, path_attention, ssd
from seqmix.ops import selective_scan as ss
from seqmix.ops.rotary import reference as rotary
from tests.oracles import (
    causal_conv_loop,
    feedback_dense_solve,
    feedback_recurrence,
    path_logits_explicit,
    rel_err,
    selective_scan_loop,
    ssd_dense,
    ssd_loop,
)

TOL = {torch.float64: 1e-10, torch.float32: 1e-4}
DTYPES = [torch.float64, torch.float32]


def _gen(seed=0):
    g = torch.Generator().manual_seed(seed)
    return g


def scan_inputs(Nb=2, L=11, d=4, n=3, G=2, complex_=False, bias=False, seed=0, dtype=torch.float64):
    g = _gen(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)
    u = r(Nb, L, d)
    delta = torch.nn.functional.softplus(r(Nb, L, d) - 1)
    re = -torch.exp(r(n) * 0.5)
    A = torch.complex(re, r(n) * 3) if complex_ else re
    B, C = r(Nb, L, G, n), r(Nb, L, G, n)
    if complex_:
        B = torch.complex(B, r(Nb, L, G, n))
        C = torch.complex(C, r(Nb, L, G, n))
    Bb = None
    if bias:
        Bb = torch.complex(r(d, n), r(d, n)) if complex_ else r(d, n)
    D = r(d)
    cast = lambda t: (
        None
        if t is None
        else t.to(
            {torch.float64: torch.complex64 if t.is_complex() else torch.float32}[torch.float64]
            if dtype == torch.float32
            else t.dtype
        )
    )
    return [cast(t) for t in (u, delta, A, B, C, Bb, D)]


@pytest.mark.parametrize("backend", ["reference", "lean"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "complex_,bias,disc,G,chunk",
    [
        (False, False, "zoh", 1, None),
        (False, True, "zoh", 2, 4),
        (True, True, "zoh", 2, 3),
        (True, False, "euler", 4, 20),
        (False, True, "euler", 1, 1),
    ],
)
def test_selective_scan_matches_loop(backend, dtype, complex_, bias, disc, G, chunk):
    u, delta, A, B, C, Bb, D = scan_inputs(G=G, complex_=complex_, bias=bias, dtype=dtype)
    y, last = ss.selective_scan(
        u, delta, A, B, C, B_bias=Bb, D=D, disc=disc, chunk=chunk, return_state=True, backend=backend
    )
    y_ref, x_ref = selective_scan_loop(u, delta, A, B, C, Bb, D, disc)
    assert y.dtype == dtype
    assert rel_err(y, y_ref) <= TOL[dtype]
    assert rel_err(last.to(torch.complex128), x_ref) <= TOL[dtype]


def test_selective_scan_initial_state_and_step():
    u, delta, A, B, C, Bb, D = scan_inputs(complex_=True, bias=True)
    x0 = torch.randn(2, 4, 3, dtype=torch.complex128)
    y = ss.selective_scan(u, delta, A, B, C, B_bias=Bb, D=D, x0=x0, chunk=4)
    y_ref, _ = selective_scan_loop(u, delta, A, B, C, Bb, D, "zoh", x0=x0)
    assert rel_err(y, y_ref) <= 1e-10
    state, ys = x0, []
    for k in range(u.shape[1]):
        yk, state = ss.selective_scan_step(state, u[:, k], delta[:, k], A, B[:, k], C[:, k], B_bias=Bb, D=D)
        ys.append(yk)
    assert rel_err(torch.stack(ys, 1), y_ref) <= 1e-10


def test_phi1_near_zero_and_gradient():
    z = torch.tensor([0.0, 1e-9, 1e-5, 3e-4, 0.5, -2.0], dtype=torch.float64, requires_grad=True)
    exact = torch.tensor([1.0] + [math.expm1(t) / t for t in z.tolist()[1:]], dtype=torch.float64)
    assert rel_err(ss.phi1(z), exact) <= 1e-14
    ss.phi1(z).sum().backward()
    assert torch.isfinite(z.grad).all() and abs(float(z.grad[0]) - 0.5) < 1e-12
    zc = torch.complex(torch.tensor([1e-6, 1e-3, -0.3]), torch.tensor([2e-6, 0.5, 4.0])).to(torch.complex128)
    exact_c = torch.stack(
        [
            (torch.exp(t) - 1) / t
            if abs(complex(t)) > 1e-2
            else 1 + t / 2 + t * t / 6 + t**3 / 24 + t**4 / 120 + t**5 / 720
            for t in zc
        ]
    )
    assert rel_err(ss.phi1(zc), exact_c) <= 1e-12


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("L,chunk,G", [(9, 4, 1), (8, 8, 2), (7, 64, 1), (10, 3, 2)])
def test_ssd_chunked_matches_dense_and_recurrent(dtype, L, chunk, G):
    g = _gen(1)
    Nb, H, P, N = 2, 4, 3, 5
    x = torch.randn(Nb, L, H, P, generator=g, dtype=torch.float64).to(dtype)
    dt = torch.nn.functional.softplus(torch.randn(Nb, L, H, generator=g, dtype=torch.float64)).to(dtype)
    A = -torch.rand(H, generator=g, dtype=torch.float64).add(0.2).to(dtype)
    B = torch.randn(Nb, L, G, N, generator=g, dtype=torch.float64).to(dtype)
    C = torch.randn(Nb, L, G, N, generator=g, dtype=torch.float64).to(dtype)
    D = torch.randn(H, generator=g, dtype=torch.float64).to(dtype)
    ref = ssd_dense(x, dt, A, B, C, D)
    y, s = ssd.ssd(x, dt, A, B, C, D, chunk=chunk, return_state=True)
    yr, sr = ssd.ssd_recurrent(x, dt, A, B, C, D, return_state=True)
    assert rel_err(y, ref) <= TOL[dtype] and rel_err(yr, ref) <= TOL[dtype]
    assert rel_err(s, sr) <= TOL[dtype]


def test_ssd_oracles_agree():
    """The token-loop oracle (float32 and edge tests use it, with gradients) equals the dense operator."""
    g = _gen(6)
    Nb, L, H, P, N, G = 2, 6, 4, 2, 3, 2
    x, B, C = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((Nb, L, H, P), (Nb, L, G, N), (Nb, L, G, N)))
    dt, D = torch.rand(Nb, L, H, generator=g, dtype=torch.float64), torch.randn(H, generator=g, dtype=torch.float64)
    A = -torch.rand(H, generator=g, dtype=torch.float64)
    assert rel_err(ssd_loop(x, dt, A, B, C, D)[0], ssd_dense(x, dt, A, B, C, D)) <= 1e-12


def test_mamba2_ssd_equals_selective_scan_with_tied_A_and_dt():
    """Mamba2 = S6 (Euler B) with A and dt tied across the P channels of each head, B/C shared per group."""
    g = _gen(2)
    Nb, L, H, P, N, G = 2, 9, 4, 3, 5, 2
    x = torch.randn(Nb, L, H, P, generator=g, dtype=torch.float64)
    dt = torch.rand(Nb, L, H, generator=g, dtype=torch.float64) + 0.1
    A = -torch.rand(H, generator=g, dtype=torch.float64) - 0.1
    B, C = (torch.randn(Nb, L, G, N, generator=g, dtype=torch.float64) for _ in range(2))
    y = ssd.ssd(x, dt, A, B, C, chunk=4)
    u = x.reshape(Nb, L, H * P)
    delta = dt.repeat_interleave(P, dim=-1)
    A_s6 = A.repeat_interleave(P)[:, None].expand(H * P, N)
    y_s6 = ss.selective_scan(u, delta, A_s6, B, C, disc="euler")
    assert rel_err(y_s6, y.reshape(Nb, L, H * P)) <= 1e-12


def feedback_inputs(Nb=2, T=9, D=4, seed=3, dtype=torch.float64):
    g = _gen(seed)
    f = torch.randn(Nb, T, D, generator=g, dtype=torch.float64)
    gamma = 0.999 * torch.tanh(torch.randn(Nb, T, generator=g, dtype=torch.float64) + 1)
    logits = torch.randn(Nb, T, T, generator=g, dtype=torch.float64)
    strict = torch.ones(T, T, dtype=torch.bool).tril(-1)
    alpha = torch.softmax(logits.masked_fill(~strict, -1e300), -1) * strict
    return [t.to(dtype) for t in (f, gamma, alpha)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_feedback_solve_matches_recurrence_and_dense_solve(dtype):
    f, gamma, alpha = feedback_inputs(dtype=dtype)
    rec, dense = feedback_recurrence(f, gamma, alpha), feedback_dense_solve(f, gamma, alpha)
    assert rel_err(rec, dense) <= 1e-12
    for s in (fs.feedback_solve(f, gamma, alpha), fs.feedback_solve_blocked(f, gamma, alpha, block=4)):
        assert s.dtype == dtype
        assert rel_err(s, rec) <= TOL[dtype]


def test_feedback_solve_bound():
    """||s||_inf <= ||f||_inf / (1 - gamma_max) (sessa spec §2.2, property 3)."""
    f, gamma, alpha = feedback_inputs(T=40)
    s = fs.feedback_solve(f, gamma, alpha)
    assert s.abs().max() <= f.abs().max() / (1 - 0.999)


def test_accumulated_angles_exclusive_float64_and_rope():
    psi = torch.randn(2, 6, 3, dtype=torch.float32)
    th = rotary.accumulate_angles(psi)
    assert th.dtype == torch.float64 and torch.all(th[:, 0] == 0)
    exp = torch.cat((torch.zeros(2, 1, 3, dtype=torch.float64), psi.double().cumsum(1)[:, :-1]), 1)
    assert torch.allclose(torch.cos(th), torch.cos(exp), atol=1e-12)
    omega = rotary.rope_frequencies(6)
    const = omega.expand(40, 3)
    assert torch.allclose(
        torch.cos(rotary.accumulate_angles(const)), torch.cos(rotary.rope_angles(40, omega)), atol=1e-12
    )
    assert torch.allclose(
        torch.sin(rotary.accumulate_angles(const)), torch.sin(rotary.rope_angles(40, omega)), atol=1e-12
    )


def test_rotate_is_block_rotation_and_inverse():
    x = torch.randn(5, 8, dtype=torch.float64)
    th = torch.randn(5, 4, dtype=torch.float64)
    cos, sin = rotary.cos_sin(th, torch.float64)
    for layout in ("half", "interleaved"):
        y = rotary.rotate(x, cos, sin, layout)
        pairs = [(b, b + 4) for b in range(4)] if layout == "half" else [(2 * b, 2 * b + 1) for b in range(4)]
        for b, (e, o) in enumerate(pairs):
            c, s = torch.cos(th[:, b]), torch.sin(th[:, b])
            assert torch.allclose(y[:, e], x[:, e] * c - x[:, o] * s) and torch.allclose(
                y[:, o], x[:, e] * s + x[:, o] * c
            )
        assert torch.allclose(rotary.rotate(y, cos, sin, layout, inverse=True), x, atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,chunk", [(7, 3), (8, 4), (6, 1), (5, 32)])
def test_path_logits_match_explicit_householder_products(dtype, T, chunk):
    g = _gen(4)
    Nb, H, d = 1, 2, 4
    q, k, v, w = (torch.randn(Nb, H, T, d, generator=g, dtype=torch.float64) for _ in range(4))
    w = torch.nn.functional.normalize(w, dim=-1)
    beta = 2 * torch.rand(Nb, H, T, generator=g, dtype=torch.float64)
    S = path_attention.path_logits(*(t.to(dtype) for t in (q, k, w, beta)), chunk=chunk)
    ref = torch.stack([path_logits_explicit(q[0, h], k[0, h], w[0, h], beta[0, h]) for h in range(H)])[None]
    assert rel_err(S, ref) <= TOL[dtype]
    out = path_attention.path_attention(q, k, v, w, beta, chunk=chunk)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    ref_out = torch.softmax((ref * d**-0.5).masked_fill(mask, float("-inf")), -1) @ v
    assert rel_err(out, ref_out) <= 1e-10


@pytest.mark.parametrize("dtype", DTYPES)
def test_fft_convolution_matches_loop(dtype):
    g = _gen(5)
    u = torch.randn(2, 13, 3, generator=g, dtype=torch.float64)
    K = (
        torch.randn(13, 3, generator=g, dtype=torch.float64)
        * torch.exp(-0.2 * torch.arange(13.0, dtype=torch.float64))[:, None]
    )
    assert rel_err(fftconv.causal_conv_fft(u.to(dtype), K.to(dtype)), causal_conv_loop(u, K)) <= TOL[dtype]


def test_backend_choice_is_explicit():
    x = torch.zeros(1, 2, 3)
    assert ss.backend_for(x) == "lean" and ss.backend_for(x, "reference") == "reference"  # lean: CPU default
    assert fs.backend_for(x) == "reference"  # an op without a lean backend
    with pytest.raises(ValueError, match="no 'lean' backend"):
        fs.backend_for(x, "lean")
    with pytest.raises(ValueError, match="no 'triton' backend"):  # fftconv has no kernel
        fftconv.OP.backend_for(x, "triton")
    assert ssd.OP.kernel_declared  # ops/ssd/triton.py: on CPU tensors a request for it falls back with a warning
    with pytest.warns(RuntimeWarning, match="triton kernel cannot run"):
        assert ssd.backend_for(x, "triton") == "reference"
    with pytest.raises(ValueError, match="backend must be one of"):
        fs.backend_for(x, "cuda-magic")
