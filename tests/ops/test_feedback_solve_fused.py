"""The fused feedback solve (ops/feedback_solve/fused.py), both methods, against the float64 reference.

Each case compares the output and the gradients of f, gamma and alpha with ``feedback_solve_dense`` evaluated
in float64 on the same inputs (upcast), by relative RMSE ||a - b|| / ||b||: float64 <= 1e-10, float32 <= 1e-5,
bfloat16 (and float16, whose matmuls run in bfloat16) <= 2e-2. Inputs as benchmarks/kernels.py draws them
(gamma = 0.999 tanh(.), alpha a softmax), lengths around the leaf size (64) and past it (padding, two and
three doubling levels), plus small blocks that force deep doubling and many sweep steps. A token loop is the
independent oracle; upper entries of alpha must neither change s nor get gradient.
"""

from __future__ import annotations

import pytest
import torch

from seqmix.ops.feedback_solve import fused
from seqmix.ops.feedback_solve import reference as ref

TOL = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 2e-2}
METHODS = ("inverse", "sweep")
LENGTHS = (1, 5, 63, 64, 65, 130, 200)


def rel_rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    b = b.double()
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-300)).item()


def feedback_inputs(Nb: int, T: int, D: int, dtypes, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(Nb, T, D, generator=gen)
    gamma = 0.999 * torch.tanh(1 + torch.randn(Nb, T, generator=gen))
    alpha = torch.softmax(torch.randn(Nb, T, T, generator=gen), -1)
    if isinstance(dtypes, torch.dtype):
        dtypes = (dtypes,) * 3
    return [t.to(dt) for t, dt in zip((f, gamma, alpha), dtypes)]


def run_with_grads(fn, inputs: list[torch.Tensor], seed: int = 1):
    """fn's output and the gradients of a random weighting of it with respect to every input."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return out, torch.autograd.grad((out.double() * weight).sum(), leaves)


def assert_matches_reference(inputs, tol: float, **kw) -> None:
    out, grads = run_with_grads(lambda *a: fused.feedback_solve(*a, **kw), inputs)
    exact, exact_grads = run_with_grads(ref.feedback_solve_dense, [t.double() for t in inputs])
    common = torch.promote_types(torch.promote_types(inputs[0].dtype, inputs[1].dtype), inputs[2].dtype)
    assert out.dtype == common and out.shape == exact.shape and torch.isfinite(out).all()
    assert rel_rmse(out, exact) <= tol, f"output: rel RMSE {rel_rmse(out, exact):.2e} > {tol:.0e}"
    for name, g, r, t in zip(("f", "gamma", "alpha"), grads, exact_grads, inputs):
        assert g.dtype == t.dtype and g.shape == t.shape
        if r.norm() == 0:  # length 1: nothing is routed, so gamma and alpha get no gradient
            assert g.abs().max() == 0, f"{name}: gradient should be exactly zero"
        else:  # a gradient comes back in its input's dtype, so a bfloat16 f's is rounded to bfloat16
            g_tol = max(tol, TOL[t.dtype])
            assert rel_rmse(g, r) <= g_tol, f"{name}: gradient rel RMSE {rel_rmse(g, r):.2e} > {g_tol:.0e}"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("T", LENGTHS)
@pytest.mark.parametrize(("method", "block"), [("inverse", None), ("sweep", None), ("sweep", 64)])
def test_matches_the_float64_reference(method, block, T, dtype):
    # default blocks: one sweep block up to 1024 rows; 64-row blocks: up to four sweep steps, the last padded
    assert_matches_reference(feedback_inputs(2, T, 3, dtype, seed=T), TOL[dtype], method=method, block=block)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("T", [65, 200])
@pytest.mark.parametrize(("method", "block"), [("inverse", 8), ("sweep", 16), ("sweep", 100)])
def test_small_blocks_match_the_reference(method, block, T, dtype):
    # inverse, leaf 8: 200 rows as 8 * 2**5, five doubling levels; sweep 16: 13 steps, the last one padded;
    # sweep 100: blocks of 56 * 2 (aligned leaves), so a block size that is no leaf * 2**k still solves
    assert_matches_reference(feedback_inputs(2, T, 4, dtype, seed=T), TOL[dtype], method=method, block=block)


@pytest.mark.parametrize("method", METHODS)
def test_mixed_and_half_dtypes_follow_the_reference_rule(method):
    # bfloat16 f beside float32 routing computes and returns float32; float16 returns float16 (bf16 matmuls)
    assert_matches_reference(
        feedback_inputs(2, 70, 5, (torch.bfloat16, torch.float32, torch.float32)), TOL[torch.float32], method=method
    )
    assert_matches_reference(feedback_inputs(2, 70, 5, torch.float16), TOL[torch.float16], method=method)


def token_loop(f, gamma, alpha):
    """s_t = f_t + gamma_t sum_{j<t} alpha[t, j] s_j, one token at a time (differentiable)."""
    rows = []
    for t in range(f.shape[1]):
        past = torch.einsum("bj,bjd->bd", alpha[:, t, :t], torch.stack(rows, 1)) if rows else 0
        rows.append(f[:, t] + gamma[:, t, None] * past)
    return torch.stack(rows, 1)


@pytest.mark.parametrize("method", METHODS)
def test_matches_a_token_loop(method):
    inputs = feedback_inputs(2, 37, 3, torch.float64, seed=5)
    out, grads = run_with_grads(lambda *a: fused.feedback_solve(*a, method=method, block=8), inputs)
    loop, loop_grads = run_with_grads(token_loop, inputs)
    assert rel_rmse(out, loop) <= 1e-12
    for g, r in zip(grads, loop_grads):
        assert rel_rmse(g, r) <= 1e-12


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("method", METHODS)
def test_alpha_on_and_above_the_diagonal_is_ignored(method, dtype):
    f, gamma, alpha = feedback_inputs(2, 90, 3, dtype, seed=3)
    upper = torch.ones(90, 90, dtype=torch.bool).triu()
    noisy = alpha.masked_fill(upper, 0) + 1e3 * torch.randn(alpha.shape).to(dtype) * upper
    clean_out, _ = run_with_grads(lambda *a: fused.feedback_solve(*a, method=method, block=32), [f, gamma, alpha])
    out, grads = run_with_grads(lambda *a: fused.feedback_solve(*a, method=method, block=32), [f, gamma, noisy])
    clean_ref = ref.feedback_solve_dense(f.double(), gamma.double(), alpha.masked_fill(upper, 0).double())
    assert rel_rmse(out, clean_ref) <= TOL[dtype] and torch.equal(out, clean_out)
    assert grads[2][:, upper].abs().max() == 0 and grads[2][:, ~upper].abs().max() > 0


@pytest.mark.parametrize("method", METHODS)
def test_strided_inputs(method):
    f, gamma, alpha = feedback_inputs(2, 50, 7, torch.float32, seed=2)
    wide = torch.cat([f, torch.randn(2, 50, 3)], -1)[..., :7]  # a view with row stride 10
    assert_matches_reference([wide, gamma, alpha.transpose(1, 2).contiguous().transpose(1, 2)], 1e-5, method=method)


@pytest.mark.parametrize("method", METHODS)
def test_length_zero(method):
    f, gamma, alpha = (t.requires_grad_() for t in feedback_inputs(2, 0, 3, torch.float32))
    out = fused.feedback_solve(f, gamma, alpha, method=method)
    assert out.shape == (2, 0, 3) and out.dtype == torch.float32
    grads = torch.autograd.grad(out.sum(), (f, gamma, alpha), allow_unused=False)
    assert [g.shape for g in grads] == [f.shape, gamma.shape, alpha.shape]


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("method", METHODS)
def test_one_input_needing_a_gradient(method, which):
    # each backward branch alone (the sweep keeps the past sums for gamma only when gamma needs them)
    inputs = feedback_inputs(2, 40, 3, torch.float64, seed=which)
    inputs[which].requires_grad_()
    (g,) = torch.autograd.grad(fused.feedback_solve(*inputs, method=method, block=16).sum(), inputs[which])
    (r,) = torch.autograd.grad(ref.feedback_solve_dense(*inputs).sum(), inputs[which])
    assert rel_rmse(g, r) <= 1e-10


def test_bad_arguments_are_refused(monkeypatch):
    f, gamma, alpha = feedback_inputs(2, 6, 3, torch.float32)
    with pytest.raises(ValueError, match=r"feedback_solve: alpha must have shape \(Nb, T, T\) = \(2, 6, 6\)"):
        fused.feedback_solve(f, gamma, alpha[:, :, :5])
    with pytest.raises(TypeError, match="feedback_solve: gamma must be a real floating tensor"):
        fused.feedback_solve(f, gamma.long(), alpha)
    with pytest.raises(ValueError, match="method must be one of"):
        fused.feedback_solve(f, gamma, alpha, method="neumann")
    with pytest.raises(ValueError, match="block must be a positive integer"):
        fused.feedback_solve(f, gamma, alpha, method="sweep", block=0)
    monkeypatch.setattr(fused, "METHOD", "neumann")  # the default is read at call time
    with pytest.raises(ValueError, match="got 'neumann'"):
        fused.feedback_solve(f, gamma, alpha)


def test_the_attention_solve_matches_the_saved_once_path_and_its_gradients():
    """The fused form of what the Sessa mixer calls: strict-past softmax, then the fused solve."""
    from seqmix.ops.feedback_solve import saved_once

    gen = torch.Generator().manual_seed(3)
    f, qb, kb = (torch.randn(2, 23, n, generator=gen, dtype=torch.float64) for n in (6, 4, 4))
    gamma = 0.9 * torch.tanh(torch.randn(2, 23, generator=gen, dtype=torch.float64))
    ins = [t.requires_grad_() for t in (f, gamma, qb, kb)]
    ours = fused.feedback_attention_solve(*ins, 0.5)
    theirs = saved_once.feedback_attention_solve(*ins, 0.5)
    torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)
    w = torch.randn(ours.shape, generator=gen, dtype=torch.float64)
    for a, b in zip(torch.autograd.grad((ours * w).sum(), ins), torch.autograd.grad((theirs * w).sum(), ins)):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)
