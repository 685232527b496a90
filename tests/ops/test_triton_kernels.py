"""The Triton kernels (ops/feedback_solve/triton.py, ops/rotation_attention/triton.py) against their torch
references, run by Triton's CPU interpreter: this module sets TRITON_INTERPRET=1 before triton is imported
(restored after the module), and is skipped only when triton itself cannot be imported.

Each case compares the kernel's output and the gradient of every differentiable input with the reference
evaluated in float64 on the same inputs (upcast), by relative RMSE ||a - b|| / ||b||: float64 <= 1e-12,
float32 <= 1e-5, bfloat16 <= 2e-2 (its unit roundoff is 4e-3). The interpreter runs the first autotune
config only (BT=16/BD=32 for the solve, BM=BN=16 for attention), so lengths 17-37 span several tiles with
a partial last one, and 36-40 features span two feature blocks. Guards: today's main has no kernel at all.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

_PREVIOUS = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"  # read when kernels are decorated and when they launch
pytest.importorskip("triton", reason="triton is not installed: no kernel can be checked")

from seqmix.ops.feedback_solve import reference as fs_ref  # noqa: E402
from seqmix.ops.rotation_attention import reference as ra_ref  # noqa: E402

TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}


def _interpreted(name: str):
    """The kernel module, (re)imported under the interpreter (a CUDA build may hold a compiled copy)."""
    full = f"seqmix.ops.{name}.triton"
    return importlib.reload(sys.modules[full]) if full in sys.modules else importlib.import_module(full)


fs_kernel = _interpreted("feedback_solve")
ra_kernel = _interpreted("rotation_attention")


@pytest.fixture(autouse=True, scope="module")
def _restore_interpret_flag():
    # set again for this module's tests: it was set at import (collection), but another module's teardown may
    # have restored it since, and a kernel launch reads it
    os.environ["TRITON_INTERPRET"] = "1"
    yield
    if _PREVIOUS is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = _PREVIOUS


def rel_rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    b = b.double()
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-300)).item()


def assert_matches(kernel_fn, reference_fn, inputs: list, tol: float, out_dtype: torch.dtype, seed: int = 0):
    """Output and every input gradient of kernel_fn(*inputs) vs reference_fn on float64 copies."""
    leaves = [t.detach().requires_grad_(t.is_floating_point()) for t in inputs]
    out = kernel_fn(*leaves)
    assert out.dtype == out_dtype and torch.isfinite(out).all()
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    grads = torch.autograd.grad((out.double() * weight).sum(), leaves)
    exact = [t.detach().double().requires_grad_() for t in inputs]
    ref = reference_fn(*exact)
    ref_grads = torch.autograd.grad((ref * weight).sum(), exact)
    assert rel_rmse(out, ref) <= tol, f"output: rel RMSE {rel_rmse(out, ref):.2e} > {tol:.0e}"
    for i, (g, r, t) in enumerate(zip(grads, ref_grads, inputs)):
        assert g.dtype == t.dtype and g.shape == t.shape
        if r.norm() == 0:  # e.g. length 1: nothing to route, so gamma and alpha get no gradient
            assert g.abs().max() == 0, f"input {i}: gradient should be exactly zero"
        else:
            assert rel_rmse(g, r) <= tol, f"input {i}: gradient rel RMSE {rel_rmse(g, r):.2e} > {tol:.0e}"


def feedback_inputs(Nb: int, T: int, D: int, dtypes, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(Nb, T, D + 3, generator=gen)[..., :D]  # a strided view: the kernel reads strides
    gamma = 0.999 * torch.tanh(1 + torch.randn(Nb, T, generator=gen))
    alpha = torch.softmax(torch.randn(Nb, T, T, generator=gen), dim=-1)  # entries j >= t must be ignored
    return [t.to(d) for t, d in zip((f, gamma, alpha), dtypes)]


F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


@pytest.mark.parametrize(
    "Nb,T,D,dtypes,out_dtype",
    [
        (1, 1, 3, (F32, F32, F32), F32),  # length 1: s = f
        (2, 21, 40, (F32, F32, F32), F32),  # two row tiles (the last partial), two feature blocks
        (1, 16, 8, (F64, F64, F64), F64),  # exactly one tile, float64 accumulation
        (1, 21, 5, (BF16, BF16, BF16), BF16),
        (1, 18, 4, (BF16, F32, F32), F32),  # mixed dtypes promote, as in the reference
    ],
)
def test_feedback_solve_kernel_matches_reference(Nb, T, D, dtypes, out_dtype):
    inputs = feedback_inputs(Nb, T, D, dtypes)
    tol = TOL[BF16] if BF16 in dtypes else TOL[out_dtype]
    assert_matches(fs_kernel.feedback_solve, fs_ref.feedback_solve_dense, inputs, tol, out_dtype)


@pytest.mark.parametrize("Nb,T,D,d,dtype", [(1, 1, 3, 4, F32), (2, 21, 40, 8, F32), (1, 19, 6, 4, F64)])
def test_feedback_attention_solve_kernel_matches_the_mixers_torch_path(Nb, T, D, d, dtype):
    """The call the Sessa mixer makes (alpha from q_b, k_b, then the solve): its kernel form, which the
    dispatcher picks on CUDA, against the saved-once torch path the mixer runs on CPU (outputs and the
    gradients of f, gamma, q_b and k_b). Guards: the mixer's op had no kernel, so on CUDA Sessa kept the torch
    solve although a solve kernel existed."""
    from seqmix.ops.feedback_solve import saved_once

    g = torch.Generator().manual_seed(3)
    f, qb, kb = (torch.randn(Nb, T, n, generator=g, dtype=dtype) for n in (D, d, d))
    gamma = 0.9 * torch.tanh(torch.randn(Nb, T, generator=g, dtype=dtype))
    assert_matches(
        lambda *a: fs_kernel.feedback_attention_solve(*a, 0.5),
        lambda *a: saved_once.feedback_attention_solve(*a, 0.5),
        [f, gamma, qb, kb],
        TOL[dtype],
        dtype,
    )


def test_feedback_solve_kernel_empty_length():
    f, gamma, alpha = (t.requires_grad_() for t in feedback_inputs(2, 0, 3, (F32, F32, F32)))
    s = fs_kernel.feedback_solve(f, gamma, alpha)
    assert s.shape == (2, 0, 3)
    s.sum().backward()
    assert f.grad.shape == f.shape and alpha.grad.shape == alpha.shape


def test_feedback_solve_kernel_checks_its_arguments_like_the_reference():
    f, gamma, alpha = feedback_inputs(1, 4, 2, (F32, F32, F32))
    with pytest.raises(ValueError, match=r"feedback_solve: alpha must have shape \(Nb, T, T\) = \(1, 4, 4\)"):
        fs_kernel.feedback_solve(f, gamma, alpha[:, :3])


def attention_inputs(Nb, H, T, d, dtype, rot_qk, rot_v, seed=0):
    """q, k, v (Nb, H, T, d); angle steps per batch (shared by heads) for q/k, per head for v."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(Nb, H, T, d, generator=gen).to(dtype) for _ in range(3))
    psi = 2 * torch.rand(Nb, 1, T, d // 2, generator=gen, dtype=F64) if rot_qk else None
    psi_v = 2 * torch.rand(1, H, T, d // 2, generator=gen, dtype=F64) if rot_v else None
    return q, k, v, psi, psi_v


def _attention(module, slopes, layout):
    def run(q, k, v, *angles):
        it = iter(angles)
        psi = next(it) if run.rot_qk else None
        psi_v = next(it) if run.rot_v else None
        return module.rotation_attention(q, k, v, psi, psi_v, slopes, layout=layout)

    return run


@pytest.mark.parametrize(
    "Nb,H,T,d,dtype,rot_qk,rot_v,alibi,layout",
    [
        (1, 1, 1, 8, F32, True, True, True, "half"),  # length 1, one head, everything on
        (2, 2, 37, 8, F32, True, True, True, "half"),  # several heads, 3 key blocks (last partial)
        (1, 3, 21, 6, F64, True, True, False, "interleaved"),  # d/2 = 3 is padded to the block width
        (1, 2, 20, 8, BF16, True, False, True, "half"),
        (1, 2, 19, 8, F32, False, False, False, "half"),  # NoPE
        (1, 1, 17, 8, F32, False, False, True, "interleaved"),  # ALiBi alone
    ],
)
def test_rotation_attention_kernel_matches_reference(Nb, H, T, d, dtype, rot_qk, rot_v, alibi, layout):
    q, k, v, psi, psi_v = attention_inputs(Nb, H, T, d, dtype, rot_qk, rot_v)
    slopes = torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)], dtype=F64) if alibi else None
    inputs = [q, k, v] + [t for t in (psi, psi_v) if t is not None]
    kernel_fn, reference_fn = _attention(ra_kernel, slopes, layout), _attention(ra_ref, slopes, layout)
    for fn in (kernel_fn, reference_fn):
        fn.rot_qk, fn.rot_v = rot_qk, rot_v
    assert_matches(kernel_fn, reference_fn, inputs, TOL[dtype], dtype)


def test_rotation_attention_kernel_rope_steps_equal_rope():
    """Constant steps psi = omega give RoPE (Theta_i = i omega), values rotated by the same angles."""
    T, d = 18, 8
    q, k, v, _, _ = attention_inputs(1, 2, T, d, F32, False, False, seed=3)
    omega = torch.tensor([1.0, 0.3, 0.1, 0.01], dtype=F64)
    steps = ra_ref.rope_steps(T, omega)
    out = ra_kernel.rotation_attention(q, k, v, steps, steps)
    from seqmix.ops.rotary import reference as rotary

    cos, sin = rotary.cos_sin(rotary.rope_angles(T, omega), F64)
    qr, kr, vr = (rotary.rotate(t.double(), cos, sin) for t in (q, k, v))
    exact = rotary.rotate(torch.nn.functional.scaled_dot_product_attention(qr, kr, vr, is_causal=True), cos, sin,
                          inverse=True)  # fmt: skip
    assert rel_rmse(out, exact) <= TOL[F32]


def test_interpreter_tries_one_autotune_config_per_kernel():
    """Each extra config would rerun a whole kernel on the CPU; on a GPU every config is tried."""
    kernels = (fs_kernel._solve_kernel, fs_kernel._transposed_solve_kernel, fs_kernel._routing_grad_kernel)
    for kernel in (*kernels, ra_kernel._forward_kernel):
        assert len(kernel.configs) == 1


def test_feedback_solve_kernel_never_materialises_the_routing_matrix():
    """Forward + backward compute no T x T tensor of their own but grad_alpha (the reference builds B, its
    negation, its transpose and the gradient products: a dozen). The interpreter's own argument copies
    (set_/copy_/detach) are not the kernel's and are left out."""
    from torch.utils._python_dispatch import TorchDispatchMode

    T = 17

    class SquareTensors(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            interpreter_copy = func.__name__.startswith(("set_", "copy_", "detach"))
            if isinstance(out, torch.Tensor) and out.numel() >= T * T and not interpreter_copy:
                self.ops.append(func.__name__)
            return out

    f, gamma, alpha = (t.requires_grad_() for t in feedback_inputs(1, T, 4, (F32, F32, F32)))
    with SquareTensors() as seen:
        fs_kernel.feedback_solve(f, gamma, alpha).sum().backward()
    assert seen.ops == ["empty_like.default"], seen.ops
