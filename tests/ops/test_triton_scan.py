"""The selective-scan Triton kernel (ops/selective_scan/triton.py) against its torch reference, run by Triton's
CPU interpreter: this module sets TRITON_INTERPRET=1 while it imports triton and the kernel modules and
while its tests run (a module fixture), and restores it in between and after; it is skipped only when
triton itself cannot be imported.

Each case compares the output (and the last state, where asked) and the gradient of every input with the
reference evaluated in float64 on the same inputs (upcast; complex ones to complex128), by relative RMSE
(complex tensors as (re, im) pairs): float64 <= 1e-12, float32 <= 1e-5, bfloat16 <= 2e-2. The grid covers
L = 1, L not a multiple of the chunk (the kernel's checkpoint interval), G = 1 (S6) and G > 1 (B2S6 blocks
sharing B and C), groups wider than one channel block (p = 40 > 32), real and complex A, complex B, C and
B_bias, zoh and euler, x0 and return_state. Guards: today's main has no selective-scan kernel at all.
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

from seqmix.ops.selective_scan import reference  # noqa: E402


def _interpreted():
    """The kernel modules, (re)imported under the interpreter (a CUDA build may hold compiled copies):
    triton_math first, so that triton.py's kernels call interpreted helpers."""
    for name in ("triton_math", "triton"):
        full = f"seqmix.ops.selective_scan.{name}"
        module = importlib.reload(sys.modules[full]) if full in sys.modules else importlib.import_module(full)
    return module


kernel = _interpreted()
_set_interpret_flag(_PREVIOUS)  # set again around this module's tests only (the fixture below)
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}
F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


@pytest.fixture(autouse=True, scope="module")
def _interpret_while_this_module_runs():
    """TRITON_INTERPRET=1 while this module's tests run (launches read it), then back to what it was. Set
    here rather than left on from import time: another module's teardown may clear it in between."""
    before = os.environ.get("TRITON_INTERPRET")
    _set_interpret_flag("1")
    yield
    _set_interpret_flag(before)


def _real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t) if t.is_complex() else t


def rel_rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = _real(a).double(), _real(b).double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def scan_inputs(
    Nb, L, d, n, G, dtype, *, cplx_A=False, cplx_BC=False, bias=False, x0=False, tied=False, split=False, seed=0
):
    """[u, delta, A, B, C, B_bias, D, x0] as the mixers build them: Delta > 0 (softplus), Re A < 0 (some
    |Delta A| under 0.1, where phi1 switches to its series), B/C per group; None for what is off.
    ``split``: B and C are the two halves of one projection (strided views, as a fused x_proj gives)."""
    gen = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=gen, dtype=F64)
    cpx = lambda on, *s: torch.complex(rnd(*s), rnd(*s)) if on else rnd(*s)
    A_shape = (n,) if tied else (d, n)
    A_re = -torch.exp(rnd(*A_shape) - 0.5)
    A = torch.complex(A_re, 3 * rnd(*A_shape)) if cplx_A else A_re
    delta = torch.nn.functional.softplus(rnd(Nb, L, d) - 2)
    B, C = cpx(cplx_BC, Nb, L, G, 2 * n).chunk(2, -1) if split else (cpx(cplx_BC, Nb, L, G, n) for _ in "BC")
    ins = [rnd(Nb, L, d), delta, A, B, C]
    ins += [cpx(cplx_BC, d, n) if bias else None, rnd(d), cpx(cplx_BC, Nb, d, n) if x0 else None]
    complex_dtype = torch.complex128 if dtype == F64 else torch.complex64
    return [None if t is None else t.to(complex_dtype if t.is_complex() else dtype) for t in ins]


def _run(fn, ins, disc, chunk, return_state):
    u, delta, A, B, C, B_bias, D, x0 = ins
    out = fn(u, delta, A, B, C, B_bias=B_bias, D=D, disc=disc, x0=x0, chunk=chunk, return_state=return_state)
    return out if return_state else (out, None)


def _loss(y, last, seed):
    """A random linear functional of y (and of the last state), so every gradient is exercised."""
    gen = torch.Generator().manual_seed(seed)
    total = (y.double() * torch.randn(y.shape, generator=gen, dtype=F64)).sum()
    if last is not None:
        total = total + (_real(last).double() * torch.randn(_real(last).shape, generator=gen, dtype=F64)).sum()
    return total


def assert_scan_matches(ins, disc, chunk, return_state, tol):
    leaves = [None if t is None else t.detach().requires_grad_() for t in ins]
    y, last = _run(kernel.selective_scan, leaves, disc, chunk, return_state)
    assert y.dtype == ins[0].dtype and torch.isfinite(y).all()
    live = [t for t in leaves if t is not None]
    grads = torch.autograd.grad(_loss(y, last, 1), live)
    exact = [None if t is None else t.detach().to(torch.complex128 if t.is_complex() else F64) for t in ins]
    exact = [None if t is None else t.requires_grad_() for t in exact]
    y_ref, last_ref = _run(reference.selective_scan, exact, disc, None, return_state)
    ref_grads = torch.autograd.grad(_loss(y_ref, last_ref, 1), [t for t in exact if t is not None])
    assert rel_rmse(y, y_ref) <= tol, f"output: rel RMSE {rel_rmse(y, y_ref):.2e} > {tol:.0e}"
    if return_state:
        assert last.is_complex() == last_ref.is_complex() and last.shape == last_ref.shape
        assert rel_rmse(last, last_ref) <= tol, f"last state: rel RMSE {rel_rmse(last, last_ref):.2e}"
    names = [n for n, t in zip(("u", "delta", "A", "B", "C", "B_bias", "D", "x0"), ins) if t is not None]
    for name, g, r, t in zip(names, grads, ref_grads, live):
        assert g.dtype == t.dtype and g.shape == t.shape, name
        assert rel_rmse(g, r) <= tol, f"grad {name}: rel RMSE {rel_rmse(g, r):.2e} > {tol:.0e}"


@pytest.mark.parametrize(
    "Nb,L,d,n,G,dtype,options,disc,chunk,return_state",
    [
        (2, 1, 4, 3, 1, F32, {}, "zoh", None, False),  # L = 1 (one chunk of one step)
        (1, 10, 6, 5, 2, F32, {"bias": True}, "zoh", 4, False),  # B2S6 real, L = 2.5 chunks, n padded to 8
        (1, 9, 6, 4, 3, F32, {"cplx_A": True, "cplx_BC": True, "bias": True}, "zoh", None, False),  # B2S6 default
        (2, 7, 4, 4, 1, F32, {"cplx_A": True}, "euler", 3, False),  # S6-like complex A, real B/C
        (1, 8, 6, 4, 2, F32, {"bias": True, "tied": True}, "euler", 5, False),  # A shared by channels: (n,)
        (1, 6, 80, 4, 2, F32, {}, "zoh", 4, False),  # p = 40: two channel blocks per group, the last partial
        (2, 6, 4, 3, 2, F32, {"cplx_BC": True, "x0": True}, "zoh", 4, True),  # x0 in, last state out
        (1, 5, 4, 3, 1, F32, {"x0": True}, "euler", 2, True),  # real state
        (1, 3, 4, 3, 2, F32, {"split": True, "bias": True}, "zoh", 5, True),  # chunk > L; strided B, C
        (1, 9, 6, 4, 2, BF16, {"bias": True}, "zoh", 4, False),
        (1, 9, 4, 4, 2, F64, {"cplx_A": True, "cplx_BC": True, "bias": True}, "zoh", 4, True),
    ],
)
def test_selective_scan_kernel_matches_reference(Nb, L, d, n, G, dtype, options, disc, chunk, return_state):
    ins = scan_inputs(Nb, L, d, n, G, dtype, **options)
    assert_scan_matches(ins, disc, chunk, return_state, TOL[dtype])


def test_selective_scan_kernel_mixed_dtypes_promote_like_the_reference():
    """bf16 projections beside fp32 parameters compute and return fp32, as the reference does."""
    u, delta, A, B, C, _, D, _ = scan_inputs(1, 5, 4, 3, 1, F32)
    y = kernel.selective_scan(u.bfloat16(), delta, A, B.bfloat16(), C, D=D)
    y_ref = reference.selective_scan(u.bfloat16().double(), delta.double(), A.double(), B.bfloat16().double(),
                                     C.double(), D=D.double())  # fmt: skip
    assert y.dtype == F32 and rel_rmse(y, y_ref) <= TOL[F32]


def test_selective_scan_kernel_saves_chunk_states_not_every_state():
    """Backward keeps the states entering each chunk (L/chunk of them), never the (Nb, L, d, n) tensor of
    all states (the reference keeps several such tensors)."""
    Nb, L, d, n = 1, 36, 4, 4
    saved = []

    def pack(t):
        saved.append(t.numel())
        return t

    ins = [None if t is None else t.requires_grad_() for t in scan_inputs(Nb, L, d, n, 1, F32, bias=True)]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = kernel.selective_scan(*ins[:5], B_bias=ins[5], D=ins[6], chunk=6)
    assert max(saved) < Nb * L * d * n, f"a saved tensor holds {max(saved)} >= Nb L d n = {Nb * L * d * n} values"
    y.sum().backward()
    assert ins[2].grad is not None and ins[5].grad is not None


def test_selective_scan_kernel_checks_its_arguments_like_the_reference():
    u, delta, A, B, C, _, _, _ = scan_inputs(1, 4, 6, 3, 2, F32)
    with pytest.raises(ValueError, match=r"selective_scan: C must have shape"):
        kernel.selective_scan(u, delta, A, B, C[:, :3])
    with pytest.raises(ValueError, match="group count G = 4"):
        kernel.selective_scan(u, delta, A, B.repeat(1, 1, 2, 1), C.repeat(1, 1, 2, 1))
    with pytest.raises(ValueError, match="disc must be 'zoh' or 'euler'"):
        kernel.selective_scan(u, delta, A, B, C, disc="bilinear")
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        kernel.selective_scan(u, delta, A, B, C, chunk=0)


def test_selective_scan_kernel_empty_length():
    u, delta, A, B, C, _, D, _ = scan_inputs(2, 0, 4, 3, 1, F32)
    y, last = kernel.selective_scan(u, delta, A, B, C, D=D, return_state=True)
    assert y.shape == (2, 0, 4) and last.shape == (2, 4, 3) and last.abs().max() == 0


def test_kernel_module_refuses_a_cpu_only_build_and_the_op_falls_back(monkeypatch):
    """On a CPU build of torch without TRITON_INTERPRET neither kernel module (triton.py, triton_math.py)
    imports, so the op's kernel is declared but not registered, and a request for it runs the reference."""
    from seqmix.ops.dispatch import Op

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)
    for module in ("triton", "triton_math"):
        monkeypatch.delitem(sys.modules, f"seqmix.ops.selective_scan.{module}", raising=False)
    op = Op("selective_scan", "seqmix.ops.selective_scan", reference.selective_scan)
    assert op.kernel_declared and "triton" not in op.backends and "CPU-only" in op.kernel_error
    with pytest.raises(ImportError, match="CPU-only"):
        importlib.import_module("seqmix.ops.selective_scan.triton_math")
    with pytest.warns(RuntimeWarning, match="CPU-only"):
        assert op.backend_for(torch.zeros(1), "triton") == "reference"
