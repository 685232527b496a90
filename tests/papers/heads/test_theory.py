"""Closed forms of the heads paper (spec §4) and the rotation teacher / factorized student they describe.

The numbers below are facts of the spec, written here (not read from the code or the config):
the Eckart-Young optimum MSE*(H), the singular values of the weighted lag unfolding, the interaction rank,
Thm 4.2's lower bound, and the exact H = k construction of §4.2. Independent oracles (a token-by-token
recurrence, a weighted PCA written from scratch in numpy) check the library's closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seqmix.mixers.factorized import FactorizedLinearAttention
from seqmix.ops.lowrank import lag_unfolding, optimal_mse
from seqmix.papers.heads.theory.closed_forms import interaction_rank, singular_values
from seqmix.tasks.rotation_teacher import (
    RotationTeacher,
    lag_operators,
    probe_error,
    teacher_operator,
    teacher_transition,
)

torch.set_num_threads(1)
TOL = 1e-9

# ----------------------------------------------------------------------------- Eckart-Young optimum

# MSE*(H) for H = 0, 1, ..., k (H = 0 is the total target variance (n + 1) / 2; H >= k gives 0)
OPT = {
    32: {
        2: [16.5, 8.0, 0.0],
        4: [16.5, 12.0, 7.75, 3.75, 0.0],
        8: [16.5, 14.0, 11.625, 9.375, 7.25, 5.25, 3.375, 1.625, 0.0],
    },
    16: {
        2: [8.5, 4.0, 0.0],
        4: [8.5, 6.0, 3.75, 1.75, 0.0],
        8: [8.5, 7.0, 5.625, 4.375, 3.25, 2.25, 1.375, 0.625, 0.0],
    },
}


@pytest.mark.parametrize("n", sorted(OPT))
@pytest.mark.parametrize("k", [2, 4, 8])
def test_optimal_mse_closed_form(n, k):
    W = lag_operators(k, n)
    want = OPT[n][k]
    for H, v in enumerate(want):
        assert abs(optimal_mse(W, H) - v) < TOL, (n, k, H)
    for H in range(k, k + 4):  # once H reaches the rank: exactly 0, not round-off (MSE / MSE* is then NaN)
        assert optimal_mse(W, H) == 0.0
    assert abs(optimal_mse(W, 0) - (n + 1) / 2) < TOL


SV = {4: [24.00, 23.32, 22.63, 21.91], 8: [25.30, 24.66, 24.00, 23.32, 22.63, 21.91, 21.17, 20.40]}


@pytest.mark.parametrize("k", sorted(SV))
def test_singular_values_of_weighted_lag_unfolding(k):
    s = singular_values(lag_operators(k, 32))
    assert len(s) == min(32, k * k)
    assert np.allclose(s[:k], SV[k], atol=0.01, rtol=0)
    assert max(s[k:], default=0.0) < 1e-9  # rank exactly k
    # MSE*(H) is the tail energy of these singular values, per output entry
    for H in range(k + 1):
        assert abs(sum(x * x for x in s[H:]) / (32 * k) - OPT[32][k][H]) < TOL


def test_interaction_rank():
    W4 = lag_operators(4, 32)
    assert [interaction_rank(W4[:m]) for m in range(1, 7)] == [1, 2, 3, 4, 4, 4]
    for k in (2, 4, 8):
        for n in (k, k + 1, 2 * k, 32):
            assert interaction_rank(lag_operators(k, n)) == k, (k, n)
        for n in range(1, k):
            assert interaction_rank(lag_operators(k, n)) == n, (k, n)


def test_teacher_transition_is_the_spec_rotation():
    A2 = teacher_transition(2)
    assert torch.allclose(A2, torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64), atol=1e-15)
    for k in (2, 4, 8):
        A = teacher_transition(k)
        assert A.dtype == torch.float64 and A.shape == (k, k)
        assert torch.allclose(A.T @ A, torch.eye(k, dtype=torch.float64), atol=1e-14)  # rho = 1: orthogonal
        # block m rotates by (2m - 1) pi / k, so A^(2k) = I and A^k = -I
        assert torch.allclose(torch.linalg.matrix_power(A, k), -torch.eye(k, dtype=torch.float64), atol=1e-12)
        ev = torch.linalg.eigvals(A)
        angles = sorted(round(abs(math.atan2(e.imag, e.real)), 12) for e in ev.tolist())
        want = sorted(round((2 * m - 1) * math.pi / k, 12) for m in range(1, k // 2 + 1) for _ in (0, 1))
        assert angles == want
    assert torch.allclose(teacher_transition(4, rho=0.5), 0.5 * teacher_transition(4), atol=0)


# ----------------------------------------------------------------------------- independent oracles


@pytest.mark.parametrize("k,n", [(2, 7), (4, 12), (8, 20)])
def test_teacher_matches_token_by_token_recurrence(k, n):
    """h_i = A h_{i-1} + x_i, y_i = h_i (B = C = I), float64."""
    g = torch.Generator().manual_seed(k * 100 + n)
    x = torch.randn(3, n, k, generator=g, dtype=torch.float64)
    A = teacher_transition(k)
    h = torch.zeros(3, k, dtype=torch.float64)
    ys = []
    for i in range(n):
        h = h @ A.T + x[:, i]
        ys.append(h)
    y_rec = torch.stack(ys, dim=1)
    task = RotationTeacher(k=k, n=n, dtype=torch.float64)
    y = task.targets(x)
    assert y.dtype == torch.float64
    assert torch.max(torch.abs(y - y_rec)).item() < 1e-10
    # the training batches are drawn in the task's dtype and their targets follow the same recurrence
    xb, yb = task.batch(seed=0, step=0, rank=0, size=2)
    assert xb.dtype == torch.float64 and xb.shape == (2, n, k)
    h = torch.zeros(2, k, dtype=torch.float64)
    for i in range(n):
        h = h @ A.T + xb[:, i]
        assert torch.max(torch.abs(yb[:, i] - h)).item() < 1e-10


def _numpy_lags(k: int, n: int) -> np.ndarray:
    """A^tau from scratch in numpy (own rotation blocks), shape (n, k, k)."""
    A = np.zeros((k, k))
    for m in range(k // 2):
        th = (2 * m + 1) * np.pi / k
        A[2 * m : 2 * m + 2, 2 * m : 2 * m + 2] = [[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]
    return np.stack([np.linalg.matrix_power(A, t) for t in range(n)])


def test_optimum_by_weighted_pca_from_scratch():
    """k = 4, n = 8: project every causal pair's W(i-j) onto the top-H principal subspace of the
    weighted lags; the pairwise error equals optimal_mse, and no other H-dim subspace does better."""
    k, n, p = 4, 8, 4
    lags = _numpy_lags(k, n)
    M = np.stack([np.sqrt(n - t) * lags[t].reshape(-1) for t in range(n)])  # rows sqrt(n - tau) vec A^tau
    _, s, Vt = np.linalg.svd(M, full_matrices=False)
    assert np.allclose(M, lag_unfolding(lag_operators(k, n)).numpy(), atol=1e-12)

    def pair_error(basis: np.ndarray) -> float:
        """sum_{i >= j} ||W(i-j) - P W(i-j)||_F^2 / (n p), P the orthogonal projection onto span(basis)."""
        Q, _ = np.linalg.qr(basis.T) if basis.size else (np.zeros((k * k, 0)), None)
        total = 0.0
        for i in range(n):
            for j in range(i + 1):
                w = lags[i - j].reshape(-1)
                total += float(np.sum((w - Q @ (Q.T @ w)) ** 2))
        return total / (n * p)

    rng = np.random.default_rng(0)
    W = lag_operators(k, n)
    for H in range(0, k + 1):
        pca = pair_error(Vt[:H])
        assert abs(pca - optimal_mse(W, H)) < TOL, H
        assert abs(pca - float(np.sum(s[H:] ** 2)) / (n * p)) < TOL
        for _ in range(20):  # random H-dim subspaces never beat the principal one
            assert pair_error(rng.standard_normal((H, k * k))) >= pca - TOL
    assert abs(pair_error(Vt[:0]) - (n + 1) / 2) < TOL


# ----------------------------------------------------------------------------- the student mixer


def _student(k: int, n: int, heads: int, r: int | None = None, seed: int = 0) -> FactorizedLinearAttention:
    torch.manual_seed(seed)
    return FactorizedLinearAttention(k, seq_len=n, heads=heads, r=r).double()


def test_jacobian_equals_interaction_operator():
    d, p, n, H = 3, 2, 5, 2
    torch.manual_seed(0)
    m = FactorizedLinearAttention(d, d_out=p, seq_len=n, heads=H, r=4).double()
    x = torch.randn(n, d, dtype=torch.float64)
    J = torch.autograd.functional.jacobian(lambda z: m(z[None])[0], x)  # (n, p, n, d)
    K = m.interaction_operator()  # (n, n, p, d)
    assert J.shape == (n, p, n, d) and K.shape == (n, n, p, d)
    assert torch.max(torch.abs(J.permute(0, 2, 1, 3) - K)).item() < 1e-12
    # and the operator is causal: K[i, j] = 0 for j > i, nonzero on and below the diagonal
    iu = torch.triu_indices(n, n, offset=1)
    assert torch.count_nonzero(K[iu[0], iu[1]]) == 0
    il = torch.tril_indices(n, n)
    assert bool((K[il[0], il[1]].abs().sum(dim=(-1, -2)) > 0).all())


def test_student_is_causal():
    k, n = 4, 6
    m = _student(k, n, heads=3)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, n, k, generator=g, dtype=torch.float64)
    y = m(x)
    for i in range(n - 1):
        x2 = x.clone()
        x2[:, i + 1 :] += torch.randn(2, n - i - 1, k, generator=g, dtype=torch.float64) * 10
        y2 = m(x2)
        assert torch.equal(y2[:, : i + 1], y[:, : i + 1]), i
        assert not torch.allclose(y2[:, i + 1 :], y[:, i + 1 :])  # later outputs do see the change


def _construction(k: int, n: int, H: int) -> tuple[FactorizedLinearAttention, np.ndarray]:
    """Spec §4.2 (sufficiency): V^(h) = M_h from the top-H right singular vectors of the weighted lag
    unfolding (reshaped p x d), c_{tau,h} = <vec W(tau), vec M_h>, alpha^(h)_ij = c_{i-j,h} 1[i >= j],
    Phi_h = I_n, Psi_h = alpha^(h)^T (so Phi_h Psi_h^T = alpha^(h)); r = n."""
    W = lag_operators(k, n).numpy()
    M = lag_unfolding(lag_operators(k, n)).numpy()
    _, _, Vt = np.linalg.svd(M, full_matrices=False)
    basis = Vt[:H]  # (H, p*d), orthonormal rows
    c = W.reshape(n, -1) @ basis.T  # (n, H)
    alpha = np.zeros((H, n, n))
    for i in range(n):
        for j in range(i + 1):
            alpha[:, i, j] = c[i - j]
    m = _student(k, n, heads=H, r=n)
    with torch.no_grad():
        m.V.copy_(torch.from_numpy(basis.reshape(H, k, k)))
        m.Phi.copy_(torch.eye(n, dtype=torch.float64).expand(H, n, n))
        m.Psi.copy_(torch.from_numpy(alpha.transpose(0, 2, 1).copy()))
    return m, alpha


def _probe(m: FactorizedLinearAttention, n: int, k: int) -> float:
    with torch.no_grad():  # as in evaluate()
        return probe_error(m, n, k)


def _expected_error(m: FactorizedLinearAttention, k: int, n: int) -> float:
    """E_x MSE for x ~ N(0, I): sum_{i >= j} ||W(i-j) - K_ij||_F^2 / (n p) (+ the masked upper part, 0)."""
    with torch.no_grad():
        diff = m.interaction_operator().double() - teacher_operator(k, n)
    return float((diff**2).sum()) / (n * k)


def test_exact_construction_with_k_heads_reproduces_the_teacher():
    k, n = 4, 12
    m, alpha = _construction(k, n, H=k)
    assert torch.allclose(m.coefficients(), torch.from_numpy(alpha), atol=1e-14, rtol=0)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, n, k, generator=g, dtype=torch.float64)
    y_teacher = RotationTeacher(k=k, n=n, dtype=torch.float64).targets(x)
    assert torch.max(torch.abs(m(x) - y_teacher)).item() < 1e-10
    assert _expected_error(m, k, n) < 1e-20
    # the library's Exp. I metrics of this student: zero test error, sup-norm error (Def. 4.1) and probe
    from seqmix.models.bare import BareMixer
    from seqmix.tasks.rotation_teacher import evaluate

    task = RotationTeacher(k=k, n=n, test_size=64, dtype=torch.float64)
    model = BareMixer(**task.model_inputs(), mixer={"name": "factorized_linear_attention", "heads": k, "r": n})
    model.mixer = m
    met = evaluate(task, model, heads=k)
    assert met["test_mse"] < 1e-20 and met["norm_mse"] < 1e-20
    assert met["sup_err"] < 1e-10 and met["probe_err"] < 1e-20
    assert abs(met["mse_opt"]) < TOL and math.isnan(met["mse_ratio"])


@pytest.mark.parametrize("k,n", [(4, 12), (2, 6)])
def test_fewer_heads_cannot_beat_the_optimum(k, n):
    """H = k - 1: the projection construction attains MSE*(H) exactly; random students and students
    trained on the exact expected error stay above it."""
    H = k - 1
    opt = optimal_mse(lag_operators(k, n), H)
    assert opt > 0.1
    m, _ = _construction(k, n, H)
    assert abs(_expected_error(m, k, n) - opt) < TOL
    for seed in range(10):
        assert _expected_error(_student(k, n, H, seed=seed), k, n) >= opt - TOL
    # a short fit with the exact objective approaches the optimum from above and never crosses it
    m = _student(k, n, H, seed=1)
    adam = torch.optim.Adam(m.parameters(), lr=0.05)
    K_t = teacher_operator(k, n)
    for _ in range(300):
        adam.zero_grad()
        loss = ((m.interaction_operator() - K_t) ** 2).sum() / (n * k)
        assert loss.item() >= opt - TOL
        loss.backward()
        adam.step()
    assert opt - TOL <= _expected_error(m, k, n) < opt * (1 + 1e-4)  # it does reach the optimum


def test_thm42_rank_one_bound_by_optimisation():
    """min over (a, b, v) of ||e1 - a v||^2 + ||e2 - b v||^2 = 1: one head (one shared direction v) cannot
    reach both e1 and A e1 = e2 of the 90-degree rotation. Honest optimisation with random restarts."""
    e1, e2 = torch.tensor([1.0, 0.0], dtype=torch.float64), torch.tensor([0.0, 1.0], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    finals = []
    for _ in range(8):
        a = (torch.randn(1, generator=g, dtype=torch.float64) * 2).requires_grad_()
        b = (torch.randn(1, generator=g, dtype=torch.float64) * 2).requires_grad_()
        v = (torch.randn(2, generator=g, dtype=torch.float64) * 2).requires_grad_()
        opt = torch.optim.LBFGS(
            [a, b, v], lr=1, max_iter=500, tolerance_grad=1e-14, tolerance_change=1e-16, line_search_fn="strong_wolfe"
        )

        def f():
            return ((e1 - a * v) ** 2).sum() + ((e2 - b * v) ** 2).sum()

        def closure():
            opt.zero_grad()
            loss = f()
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        with torch.no_grad():
            finals.append(f().item())
    assert min(finals) >= 1 - 1e-9  # never below the bound
    assert max(abs(f - 1) for f in finals) < 1e-6  # and attained from every restart (no spurious minima)
    # closed form: 2 minus the largest eigenvalue of [e1 e2][e1 e2]^T = I
    G = torch.stack([e1, e2], dim=1)
    assert abs(2 - torch.linalg.eigvalsh(G @ G.T).max().item() - 1) < 1e-12


def test_thm42_probe_error_of_one_head_students():
    """The library's probe (X = e1 at position 0; targets e1, A e1) is >= 1 for every H = 1 student with
    k = 2, and 0 for the exact H = 2 construction."""
    k, n = 2, 6
    for seed in range(10):
        assert _probe(_student(k, n, heads=1, seed=seed), n, k) >= 1 - 1e-9
    m, _ = _construction(k, n, H=1)
    assert _probe(m, n, k) >= 1 - 1e-9
    m, _ = _construction(k, n, H=2)
    assert _probe(m, n, k) < 1e-20


# ----------------------------------------------------------------------------- argument errors


def test_argument_errors():
    with pytest.raises(ValueError, match="d_model"):
        FactorizedLinearAttention(0, d_out=2, seq_len=4)
    with pytest.raises(ValueError, match="heads"):
        FactorizedLinearAttention(2, seq_len=4, heads=0)
    with pytest.raises(ValueError, match="seq_len"):
        FactorizedLinearAttention(2, seq_len=-1)
    m = FactorizedLinearAttention(3, d_out=2, seq_len=4)
    with pytest.raises(ValueError, match=r"expected input \(\.\.\., 4, 3\)"):
        m(torch.zeros(1, 5, 3))
    with pytest.raises(ValueError, match="expected input"):
        m(torch.zeros(1, 4, 2))
    assert m(torch.zeros(2, 4, 3)).shape == (2, 4, 2)
    with pytest.raises(ValueError, match="k must be an even integer"):
        RotationTeacher(k=3, n=8)
    with pytest.raises(ValueError, match="k must be an even integer"):
        RotationTeacher(k=0, n=8)
    with pytest.raises(ValueError, match="n must be"):
        RotationTeacher(k=2, n=0)
