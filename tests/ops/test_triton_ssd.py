"""The SSD Triton kernel (ops/ssd/triton.py) against its torch reference, run by Triton's CPU interpreter: this
module sets TRITON_INTERPRET=1 while it imports triton and the kernel module and while its tests run (a module
fixture), and restores it in between and after; it is skipped only when triton itself cannot be imported.

Each case compares the output (and the last state, where asked) and the gradient of every input (x, dt, A, B,
C, D, h0) with the chunked reference evaluated in float64 on the same inputs, by relative RMSE: float64 <=
1e-12, float32 <= 1e-5, bfloat16 <= 2e-2. The grid covers L = 1, L not a multiple of the chunk (the kernel's
checkpoint interval), one and several heads, G = 1 and G > 1 groups sharing B and C across heads, head dims
wider than one column block (P = 40 > 32), with and without D, h0 and return_state.
Guards: today's main has no SSD kernel at all (requesting "triton" for ssd is a ValueError there).
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

_PREVIOUS = os.environ.get("TRITON_INTERPRET")


def _set_interpret_flag(value: str | None) -> None:
    if value is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = value


_set_interpret_flag("1")  # read when triton is imported, when kernels are decorated and when they launch
pytest.importorskip("triton", reason="triton is not installed: no kernel can be checked")

from seqmix.ops.ssd import reference  # noqa: E402

_NAME = "seqmix.ops.ssd.triton"
# (re)imported under the interpreter: a CUDA build may hold a compiled copy
kernel = importlib.reload(sys.modules[_NAME]) if _NAME in sys.modules else importlib.import_module(_NAME)
_set_interpret_flag(_PREVIOUS)  # set again around this module's tests only (the fixture below)
F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
TOL = {F64: 1e-12, F32: 1e-5, BF16: 2e-2}
NAMES = ("x", "dt", "A", "B", "C", "D", "h0")


@pytest.fixture(autouse=True, scope="module")
def _interpret_while_this_module_runs():
    """TRITON_INTERPRET=1 while this module's tests run (launches read it), then back to what it was."""
    before = os.environ.get("TRITON_INTERPRET")
    _set_interpret_flag("1")
    yield
    _set_interpret_flag(before)


def rel_rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def ssd_inputs(Nb, L, H, P, N, G, dtype, *, D=True, h0=False, seed=0):
    """[x, dt, A, B, C, D, h0] as Mamba2 builds them: dt > 0 (softplus), A < 0 per head, B/C per group (some
    dt |A| large, so decays near 0 and near 1 both occur); None for what is off."""
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen, dtype=F64)
    dt = torch.nn.functional.softplus(rnd(Nb, L, H) - 1)
    A = -torch.exp(rnd(H))
    ins = [rnd(Nb, L, H, P), dt, A, rnd(Nb, L, G, N), rnd(Nb, L, G, N)]
    ins += [rnd(H) if D else None, rnd(Nb, H, P, N) if h0 else None]
    return [None if t is None else t.to(dtype) for t in ins]


def _run(fn, ins, chunk, return_state):
    x, dt, A, B, C, D, h0 = ins
    out = fn(x, dt, A, B, C, D=D, chunk=chunk, h0=h0, return_state=return_state)
    return out if return_state else (out, None)


def _loss(y, last):
    """A random linear functional of y (and of the last state), so every gradient is exercised."""
    gen = torch.Generator().manual_seed(1)
    total = (y.double() * torch.randn(y.shape, generator=gen, dtype=F64)).sum()
    if last is not None:
        total = total + (last.double() * torch.randn(last.shape, generator=gen, dtype=F64)).sum()
    return total


def assert_ssd_matches(ins, chunk, return_state, tol):
    leaves = [None if t is None else t.detach().requires_grad_() for t in ins]
    y, last = _run(kernel.ssd, leaves, chunk, return_state)
    assert y.dtype == ins[0].dtype and y.shape == ins[0].shape and torch.isfinite(y).all()
    live = [t for t in leaves if t is not None]
    grads = torch.autograd.grad(_loss(y, last), live)
    exact = [None if t is None else t.detach().to(F64).requires_grad_() for t in ins]
    y_ref, last_ref = _run(reference.ssd_chunked, exact, 4, return_state)
    ref_grads = torch.autograd.grad(_loss(y_ref, last_ref), [t for t in exact if t is not None])
    assert rel_rmse(y, y_ref) <= tol, f"output: rel RMSE {rel_rmse(y, y_ref):.2e} > {tol:.0e}"
    if return_state:
        assert last.shape == last_ref.shape and last.dtype == ins[0].dtype
        assert rel_rmse(last, last_ref) <= tol, f"last state: rel RMSE {rel_rmse(last, last_ref):.2e}"
    names = [n for n, t in zip(NAMES, ins) if t is not None]
    for name, g, r, t in zip(names, grads, ref_grads, live):
        assert g.dtype == t.dtype and g.shape == t.shape, name
        assert rel_rmse(g, r) <= tol, f"grad {name}: rel RMSE {rel_rmse(g, r):.2e} > {tol:.0e}"


@pytest.mark.parametrize(
    "Nb,L,H,P,N,G,dtype,options,chunk,return_state",
    [
        (2, 1, 1, 4, 3, 1, F32, {}, 64, False),  # L = 1, one head
        (1, 10, 2, 4, 5, 1, F32, {}, 4, False),  # L = 2.5 chunks, N padded to 8, B/C shared by 2 heads
        (2, 9, 4, 3, 4, 2, F32, {"D": False}, 4, True),  # 2 groups of 2 heads, no D, last state out
        (1, 7, 3, 4, 4, 3, F32, {"h0": True}, 3, True),  # G = H, h0 in
        (1, 6, 2, 40, 4, 1, F32, {"h0": True}, 4, True),  # P = 40: two column blocks, the last partial
        (1, 5, 2, 4, 3, 1, F32, {}, 16, True),  # chunk > L
        (1, 9, 4, 4, 4, 2, BF16, {"h0": True}, 4, True),
        (1, 9, 2, 4, 4, 2, F64, {"h0": True}, 4, True),
    ],
)
def test_ssd_kernel_matches_reference(Nb, L, H, P, N, G, dtype, options, chunk, return_state):
    ins = ssd_inputs(Nb, L, H, P, N, G, dtype, **options)
    assert_ssd_matches(ins, chunk, return_state, TOL[dtype])


def test_ssd_kernel_saves_chunk_states_not_every_state():
    """Backward keeps the states entering each chunk (L/chunk of them), never one (H, P, N) state per step."""
    Nb, L, H, P, N = 1, 32, 2, 4, 4
    saved = []

    def pack(t):
        saved.append(t.numel())
        return t

    ins = [None if t is None else t.requires_grad_() for t in ssd_inputs(Nb, L, H, P, N, 1, F32)]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = kernel.ssd(*ins[:5], D=ins[5], chunk=8)
    assert max(saved) < Nb * L * H * P * N, f"a saved tensor holds {max(saved)} >= Nb L H P N values"
    y.sum().backward()
    assert ins[2].grad is not None and ins[3].grad is not None


def test_ssd_kernel_mixed_dtypes_promote_like_the_reference():
    """bf16 projections beside fp32 parameters compute and return fp32, as the reference does."""
    x, dt, A, B, C, D, _ = ssd_inputs(1, 5, 2, 4, 3, 1, F32)
    y = kernel.ssd(x.bfloat16(), dt, A, B.bfloat16(), C, D=D, chunk=2)
    y_ref = reference.ssd_chunked(x.bfloat16().double(), dt.double(), A.double(), B.bfloat16().double(), C.double(),
                                  D=D.double())  # fmt: skip
    assert y.dtype == F32 and rel_rmse(y, y_ref) <= TOL[F32]


def test_ssd_kernel_checks_its_arguments_like_the_reference():
    x, dt, A, B, C, _, _ = ssd_inputs(1, 4, 4, 3, 2, 2, F32)
    with pytest.raises(ValueError, match=r"ssd: C must have shape"):
        kernel.ssd(x, dt, A, B, C[:, :3])
    with pytest.raises(ValueError, match="group count G = 3"):
        kernel.ssd(x, dt, A, B[:, :, :1].repeat(1, 1, 3, 1), C[:, :, :1].repeat(1, 1, 3, 1))
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        kernel.ssd(x, dt, A, B, C, chunk=0)


def test_ssd_kernel_empty_length():
    x, dt, A, B, C, D, _ = ssd_inputs(2, 0, 2, 4, 3, 1, F32)
    y, last = kernel.ssd(x, dt, A, B, C, D=D, return_state=True)
    assert y.shape == (2, 0, 2, 4) and last.shape == (2, 2, 4, 3) and last.abs().max() == 0


def test_ssd_kernel_is_declared_and_registered_under_the_interpreter():
    """With the interpreter on, the op registers the kernel (today's main has none to register)."""
    from seqmix.ops.dispatch import Op

    op = Op("ssd", "seqmix.ops.ssd", reference.ssd_chunked)
    assert op.kernel_declared and op.kernel_error is None and op.backends["triton"].__name__ == "ssd"


def test_kernel_module_refuses_a_cpu_only_build_and_the_op_falls_back(monkeypatch):
    """On a CPU build of torch without TRITON_INTERPRET the kernel module does not import, so the op's kernel is
    declared but not registered, and a request for it runs the reference with a warning."""
    from seqmix.ops.dispatch import Op

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.delitem(sys.modules, _NAME, raising=False)
    op = Op("ssd", "seqmix.ops.ssd", reference.ssd_chunked)
    assert op.kernel_declared and "triton" not in op.backends and "CPU-only" in op.kernel_error
    with pytest.warns(RuntimeWarning, match="CPU-only"):
        assert op.backend_for(torch.zeros(1), "triton") == "reference"
