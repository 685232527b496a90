"""The chunked-matmul SSD (ops/ssd/fused.py) against the chunked reference evaluated in float64 on upcast inputs.

Each case compares the output, the last state and the gradient of every input (x, dt, A, B, C, D, h0) by
relative RMSE ||a - b|| / ||b||: float64 <= 1e-10, float32 <= 1e-5, bfloat16 <= 2e-2. Lengths 1, 9, 64, 65
and 130 with chunks 16 and 64 cover one step, a length shorter than the chunk, exact multiples and one or
several padded steps; G = 2 checks that heads read their group's B and C. Also: an independent token loop
(``ssd_recurrent``), the large mixed steps of tests/ops/test_float32_steps.py (accurate to 1e-4 in float32 only
when in-chunk segment sums are added up from their own terms), and the reference's checks and dtype rule.
"""

from __future__ import annotations

import re

import pytest
import torch

from seqmix.ops.ssd import fused, reference
from tests.ops.test_float32_steps import grads, mixed_steps
from tests.oracles import rel_err, ssd_loop

F64, F32, BF16 = torch.float64, torch.float32, torch.bfloat16
TOL = {F64: 1e-10, F32: 1e-5, BF16: 2e-2}
NAMES = ("x", "dt", "A", "B", "C", "D", "h0")


def ssd_inputs(Nb, L, H, P, N, G, *, D=True, h0=True, seed=0):
    """[x, dt, A, B, C, D, h0] in float64 as Mamba2 builds them: dt > 0 (softplus), A < 0 per head, so some
    decays are near 0 and some near 1; None for what is off."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=F64)
    dt = torch.nn.functional.softplus(r(Nb, L, H) - 1)
    ins = [r(Nb, L, H, P), dt, -torch.exp(r(H)), r(Nb, L, G, N), r(Nb, L, G, N)]
    return ins + [r(H) if D else None, r(Nb, H, P, N) if h0 else None]


def run_with_grads(fn, ins, chunk, return_state):
    """(outputs, gradients of a random linear functional of them w.r.t. every given input)."""
    leaves = [None if t is None else t.detach().clone().requires_grad_() for t in ins]
    x, dt, A, B, C, D, h0 = leaves
    out = fn(x, dt, A, B, C, D=D, chunk=chunk, h0=h0, return_state=return_state)
    outs = out if return_state else (out,)
    g = torch.Generator().manual_seed(1)
    loss = sum((o.double() * torch.randn(o.shape, generator=g, dtype=F64)).sum() for o in outs)
    live = [t for t in leaves if t is not None]
    return outs, torch.autograd.grad(loss, live)


def assert_matches_reference(ins, chunk, dtype, return_state=True):
    low = [None if t is None else t.to(dtype) for t in ins]
    outs, gs = run_with_grads(fused.ssd, low, chunk, return_state)
    exact = [None if t is None else t.to(F64) for t in low]  # the same rounded inputs, upcast
    ref_outs, ref_gs = run_with_grads(reference.ssd_chunked, exact, chunk, return_state)
    for name, o, r in zip(("y", "state"), outs, ref_outs):
        assert o.dtype == dtype and o.shape == r.shape, name
        assert rel_err(o, r) <= TOL[dtype], f"{name}: rel err {rel_err(o, r):.2e}"
    names = [n for n, t in zip(NAMES, ins) if t is not None]
    for name, g, r, t in zip(names, gs, ref_gs, low):
        assert g.dtype == dtype and g.shape == t.shape, name
        assert rel_err(g, r) <= TOL[dtype], f"grad {name}: rel err {rel_err(g, r):.2e}"


@pytest.mark.parametrize("dtype", [F32, F64, BF16])
@pytest.mark.parametrize("G", [1, 2])
@pytest.mark.parametrize("chunk", [16, 64])
@pytest.mark.parametrize("L", [1, 9, 64, 65, 130])
def test_fused_matches_float64_reference(L, chunk, G, dtype):
    assert_matches_reference(ssd_inputs(2, L, 4, 8, 6, G, seed=L + G), chunk, dtype)


@pytest.mark.parametrize("L,chunk", [(9, 4), (65, 16), (64, 64)])
def test_fused_without_D_h0_or_state(L, chunk):
    """The paths with no initial state (its column of the passing matrix dropped), no D, no last state."""
    ins = ssd_inputs(2, L, 4, 5, 3, 2, D=False, h0=False, seed=L)
    assert_matches_reference(ins, chunk, F32, return_state=False)
    assert_matches_reference(ins, chunk, F64, return_state=True)


def test_fused_matches_token_loop():
    """An implementation that shares no code with the chunked forms: ``ssd_recurrent``, one step at a time."""
    ins = ssd_inputs(2, 37, 6, 5, 7, 3, seed=3)
    outs, gs = run_with_grads(fused.ssd, ins, 8, True)

    def loop(x, dt, A, B, C, D=None, chunk=None, h0=None, return_state=True):
        return reference.ssd_recurrent(x, dt, A, B, C, D=D, h0=h0, return_state=return_state)

    ref_outs, ref_gs = run_with_grads(loop, ins, 8, True)
    errors = [rel_err(a, b) for a, b in zip((*outs, *gs), (*ref_outs, *ref_gs))]
    assert max(errors) <= 1e-12, errors


@pytest.mark.parametrize("pattern", ["halves", "alternate", "front", "uniform"])
@pytest.mark.parametrize("chunk", [64, 24])
def test_fused_float32_matches_float64_for_large_mixed_steps(pattern, chunk):
    """dt |A| in [0, 20], huge and tiny steps in one chunk: every result within 1e-4 of the float64 token loop
    (exp(cs_t - cs_s) from cumulative sums gets the gradient of A wrong by up to 17%)."""
    g = torch.Generator().manual_seed(0)
    Nb, L, H, P, N, G = 2, 192, 4, 8, 16, 2
    A = -torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=F64)
    dt = mixed_steps(pattern, (Nb, L, H), chunk, g) / A.abs()
    r = lambda *s: torch.randn(*s, generator=g, dtype=F64)
    inputs = [r(Nb, L, H, P), dt, A, r(Nb, L, G, N), r(Nb, L, G, N), r(H), r(Nb, H, P, N)]
    ref, ref_grads = grads(lambda *a: ssd_loop(*a), inputs)
    f32 = [t.float() for t in inputs]
    out, out_grads = grads(lambda x, dt, A, B, C, D, h0: fused.ssd(x, dt, A, B, C, D, chunk, h0, True), f32)
    errors = {"y": rel_err(out[0], ref[0]), "state": rel_err(out[1], ref[1])}
    errors |= {f"grad {n}": rel_err(a, b) for n, a, b in zip(NAMES, out_grads, ref_grads)}
    assert max(errors.values()) <= 1e-4, errors


def test_fused_dtype_rule_and_layout_follow_the_reference():
    """Mixed precisions promote as in the reference (bf16 projections beside float32 parameters -> float32);
    non-contiguous inputs are read as they are."""
    x, dt, A, B, C, D, h0 = ssd_inputs(2, 11, 4, 3, 5, 2, seed=5)
    args = (x.bfloat16().transpose(1, 2).contiguous().transpose(1, 2), dt.float(), A.float(), B.bfloat16())
    args += (C.float()[:, :, [1, 0]][:, :, [1, 0]], D.float())
    y, last = fused.ssd(*args, chunk=4, h0=h0.float(), return_state=True)
    y_ref, last_ref = reference.ssd_chunked(*args, chunk=4, h0=h0.float(), return_state=True)
    assert y.dtype == y_ref.dtype == F32 and last.dtype == F32
    assert rel_err(y, y_ref) <= 1e-5 and rel_err(last, last_ref) <= 1e-5


def test_fused_no_steps_returns_the_initial_state():
    x, dt, A, B, C, D, h0 = ssd_inputs(2, 0, 4, 3, 5, 2)
    y, last = fused.ssd(x, dt, A, B, C, D, chunk=8, h0=h0, return_state=True)
    assert y.shape == (2, 0, 4, 3) and torch.equal(last, h0)
    assert torch.equal(fused.ssd(x, dt, A, B, C, return_state=True)[1], torch.zeros_like(h0))


@pytest.mark.parametrize(
    "change",
    [
        {"chunk": 0},
        {"G": 3},
        {"dt": torch.ones(2, 7, 4, dtype=torch.long)},
        {"x": torch.zeros(2, 7, 4, 3, dtype=torch.complex128)},
        {"A": torch.zeros(4, 1, dtype=F64)},
        {"h0": torch.zeros(2, 4, 5, 3, dtype=F64)},
    ],
    ids=["chunk0", "groups-not-dividing", "dt-int", "x-complex", "A-shape", "h0-shape"],
)
def test_fused_rejects_what_the_reference_rejects(change):
    change = dict(change)
    ins = ssd_inputs(2, 7, 4, 3, 5, change.pop("G", 2))
    kw = dict(zip(NAMES, ins)) | {"chunk": 4} | change
    with pytest.raises((TypeError, ValueError)) as ref_error:
        reference.ssd_chunked(**kw)
    with pytest.raises(ref_error.type, match=f"^{re.escape(str(ref_error.value))}$"):
        fused.ssd(**kw)
