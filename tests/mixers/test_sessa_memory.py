"""Issue 13's memory contract for Sessa: one layer saves at most one T x T matrix per head for backward, and
the one-save path (ops/feedback_solve/saved_once.py) gives the same output and gradients as the composed path
(softmax, mask, ``solve_triangular`` under autograd) it replaced.

Guards: on the old main the layer saved the softmax output, the masked alpha and the negated routing matrix
(three (B, T, T) tensors) plus a float and a bool (T, T) mask, 4.25 float32 T x T per sequence, so the count
test fails there; the equivalence tests fail if the hand-written backward (transposed solve, softmax adjoint)
drops or mis-scales a term.
"""

from __future__ import annotations

import pytest
import torch

from seqmix.mixers.sessa import SessaBlock, SessaMixer
from seqmix.ops import feedback_solve as fs
from tests.oracles import rel_err


def saved_square_matrices(module, x: torch.Tensor) -> dict[int, tuple[tuple[int, ...], int]]:
    """The distinct storages autograd saves while ``module(x)`` runs whose tensor ends in (T, T), T = x.shape[1]:
    {storage pointer: (shape, bytes)}."""
    T, found = x.shape[1], {}

    def pack(t):
        if t.dim() >= 2 and tuple(t.shape[-2:]) == (T, T):
            found[t.untyped_storage().data_ptr()] = (tuple(t.shape), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return found


def test_layer_saves_one_square_matrix_per_head_at_cpu_lengths():
    """T = 256 (cpu scale: E1 <= 250, E3 128): the feedback head saves one (B, T, T) alpha and nothing else
    of size T x T is saved (the forward heads' SDPA keeps only row statistics on CPU)."""
    B, T, D, H = 2, 256, 32, 4
    torch.manual_seed(0)
    block = SessaBlock(D, SessaMixer(D, heads=H))
    found = saved_square_matrices(block, torch.randn(B, T, D, requires_grad=True))
    shapes = sorted(s for s, _ in found.values())
    assert shapes == [(B, T, T)], shapes
    matrices = sum(n for _, n in found.values()) / (4 * T * T)  # float32 T x T matrices saved in the layer
    heads = H + 1  # forward heads + the single feedback head
    assert matrices / (B * heads) <= 1
    assert matrices == B  # one per sequence: the feedback alpha


def old_path(m: SessaMixer, a: torch.Tensor) -> torch.Tensor:
    """The composed path the mixer used before: feedback weights and the dense solve under plain autograd."""
    return fs.feedback_solve(m.forward_branch(a), m.gamma(a), m.feedback_weights(a))


def grads_of(m, a, fn, w):
    m.zero_grad(set_to_none=True)
    a = a.detach().clone().requires_grad_(True)
    out = fn(m, a)
    (out * w).sum().backward()
    return out.detach(), [a.grad] + [p.grad for p in m.parameters()]


@pytest.mark.parametrize("T", [1, 2, 13])
def test_one_save_path_matches_old_path_float64(T):
    torch.manual_seed(T)
    m = SessaMixer(8, heads=2).double()
    with torch.no_grad():  # a spread of gains, negative ones included
        m.w_gamma.weight.mul_(8)
    a = torch.randn(3, T, 8, dtype=torch.float64)
    w = torch.randn(3, T, 8, dtype=torch.float64)
    new, g_new = grads_of(m, a, lambda m, a: m(a), w)
    old, g_old = grads_of(m, a, old_path, w)
    assert torch.equal(new, old)
    for gn, go in zip(g_new, g_old, strict=True):
        assert rel_err(gn, go) <= 1e-10


def test_one_save_path_float32_forward_bitwise_gradients_to_rounding():
    torch.manual_seed(5)
    m = SessaMixer(16, heads=4)
    a, w = torch.randn(2, 40, 16), torch.randn(2, 40, 16)
    new, g_new = grads_of(m, a, lambda m, a: m(a), w)
    old, g_old = grads_of(m, a, old_path, w)
    assert torch.equal(new, old)
    for gn, go in zip(g_new, g_old, strict=True):
        assert rel_err(gn, go) <= 1e-5


def test_op_gradcheck_and_partial_requires_grad():
    """The Function against finite differences (independent of the old path), and with only some inputs
    requiring gradients."""
    torch.manual_seed(3)
    Nb, T, D, d = 2, 7, 3, 4
    f, qb, kb = (torch.randn(Nb, T, n, dtype=torch.float64, requires_grad=True) for n in (D, d, d))
    gamma = (0.9 * torch.tanh(torch.randn(Nb, T, dtype=torch.float64))).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda *t: fs.feedback_attention_solve(*t, 0.5), (f, gamma, qb, kb))
    s = fs.feedback_attention_solve(f.detach(), gamma.detach(), qb, kb.detach(), 0.5)
    (qb_grad,) = torch.autograd.grad(s.sum(), qb)
    assert qb_grad.shape == qb.shape


def test_second_derivative_refused():
    x = torch.randn(1, 5, 2, dtype=torch.float64, requires_grad=True)
    gamma = torch.full((1, 5), 0.5, dtype=torch.float64)
    s = fs.feedback_attention_solve(x, gamma, x, x, 1.0)
    (g,) = torch.autograd.grad(s.square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|twice"):
        g.sum().backward()
