"""Closed forms of the heads paper (heads spec §4), as plain functions (float64):

- interaction rank and the Eckart-Young optimum MSE*(H) for H < k (§4.3);
- T1, Thm 4.2: the single-head probe minimum (= 1 for the rotation teacher);
- T2, Thm 4.4: the exact H = k construction (r = n) and its rank-refined factorisation;
- T3, Appendix A: translation-invariant (lag-only) complex features of dimension r = k;
- T5, Thm 5.1 (2): the adversarial "gradient highway" input, the corrected attention weight (pitfall P8)
  and the gamma that the proof's two conditions ask for;
- T6: the projection error of a value subspace (the optimum is the top principal subspace);
- Figure 3 right: the pair unfolding of an interaction operator and its singular values.

T4 (Thm 5.1 (1), the linear SSM Jacobian C A^tau B and its bound) lives with the model,
``seqmix.mixers.lti_ssm.LinearSSM.lag_operator`` / ``jacobian_bound``.
"""

from __future__ import annotations

import math

import torch

from ....ops.lowrank import lag_unfolding


def interaction_rank(W: torch.Tensor, tol: float = 1e-9) -> int:
    """dim span{W(tau)}: numerical rank of the (unweighted) lag unfolding."""
    s = torch.linalg.svdvals(lag_unfolding(W, weighted=False))
    return int((s > tol * s[0]).sum()) if s.numel() and s[0] > 0 else 0


def singular_values(W: torch.Tensor) -> list[float]:
    return torch.linalg.svdvals(lag_unfolding(W)).tolist()


# ----------------------------------------------------------------------------- T1: Thm 4.2 (rank gap)


def probe_targets(W: torch.Tensor) -> torch.Tensor:
    """Thm 4.2's probe X = [e_1, 0, ..., 0]: the teacher's first two outputs W(0) e_1, W(1) e_1, as the
    columns of a (p, 2) float64 matrix (for the rotation teacher: e_1 and A e_1, orthonormal)."""
    return torch.stack([W[0][:, 0], W[1][:, 0]], dim=1).double()


def single_head_probe_min(W: torch.Tensor) -> float:
    """min over (a, b, v) of ||y_1 - a v||^2 + ||y_2 - b v||^2: a single head (one value matrix V) answers the
    probe with multiples of one vector v = V e_1 only. Closed form: ||Y||_F^2 - lambda_max(Y Y^T) (Eckart-Young
    for a rank-1 fit of Y = [y_1 y_2]); 2 - 1 = 1 for the rotation teacher, whatever n and d (Remark 4.3)."""
    Y = probe_targets(W)
    return float((Y**2).sum() - torch.linalg.eigvalsh(Y @ Y.T).max())


def single_head_probe_search(W: torch.Tensor, restarts: int = 8, seed: int = 0) -> list[float]:
    """The same minimum by honest optimisation (L-BFGS from random starts, float64): one final value per start."""
    Y = probe_targets(W)
    y1, y2 = Y[:, 0], Y[:, 1]
    g = torch.Generator().manual_seed(seed)
    finals = []
    for _ in range(restarts):
        a = (torch.randn(1, generator=g, dtype=torch.float64) * 2).requires_grad_()
        b = (torch.randn(1, generator=g, dtype=torch.float64) * 2).requires_grad_()
        v = (torch.randn(Y.shape[0], generator=g, dtype=torch.float64) * 2).requires_grad_()
        opt = torch.optim.LBFGS(
            [a, b, v], lr=1, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-14, line_search_fn="strong_wolfe"
        )

        def f():
            return ((y1 - a * v) ** 2).sum() + ((y2 - b * v) ** 2).sum()

        def closure():
            opt.zero_grad()
            loss = f()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        with torch.no_grad():
            finals.append(float(f()))
    return finals


# ----------------------------------------------------------------------------- T2: Thm 4.4 (sufficiency)


def subspace_basis(W: torch.Tensor, heads: int) -> torch.Tensor:
    """The top-``heads`` right singular vectors of the weighted lag unfolding, as (heads, p, d) matrices
    M_h: an orthonormal basis of S_target when heads >= k, the Eckart-Young optimal subspace when heads < k."""
    n, p, d = W.shape
    _, _, Vt = torch.linalg.svd(lag_unfolding(W), full_matrices=False)
    basis = torch.zeros(heads, p * d, dtype=torch.float64)
    m = min(heads, Vt.shape[0])
    basis[:m] = Vt[:m]
    return basis.reshape(heads, p, d)


def exact_construction(W: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Thm 4.4's constructive student (heads spec §4.2): V^(h) = M_h, c_{tau,h} = <vec W(tau), vec M_h>,
    alpha^(h)_ij = c_{i-j,h} 1[i >= j]. Returns (V: (H, p, d), alpha: (H, n, n)); with Phi_h = I_n and
    Psi_h = alpha^(h)^T the student has r = n."""
    n = W.shape[0]
    V = subspace_basis(W, heads)
    c = W.reshape(n, -1).double() @ V.reshape(heads, -1).T  # (n, H)
    idx = torch.arange(n)
    lag = (idx[:, None] - idx[None, :]).clamp(min=0)
    mask = (idx[:, None] >= idx[None, :]).double()
    alpha = c.T[:, lag] * mask  # (H, n, n)
    return V, alpha


def student_operator(V: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """K_ij = sum_h alpha^(h)_ij V^(h): (n, n, p, d)."""
    return torch.einsum("hij,hpd->ijpd", alpha, V)


def toeplitz_operator(W: torch.Tensor) -> torch.Tensor:
    """The LTI teacher as a block operator: K_ij = W(i - j) 1[i >= j], (n, n, p, d)."""
    n = W.shape[0]
    idx = torch.arange(n)
    lag = (idx[:, None] - idx[None, :]).clamp(min=0)
    return W.double()[lag] * (idx[:, None] >= idx[None, :]).double()[:, :, None, None]


def rank_refined_features(alpha: torch.Tensor, tol: float = 1e-10) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Thm 4.4's refinement r = max_h rank A^(h): alpha^(h) = P_h Q_h^T from its SVD, truncated at the
    numerical rank. Returns (Phi, Psi: (H, n, r), ranks)."""
    H, n, _ = alpha.shape
    U, S, Vh = torch.linalg.svd(alpha)
    ranks = [int((S[h] > tol * S[h, 0]).sum()) if S[h, 0] > 0 else 0 for h in range(H)]
    r = max(ranks + [1])
    Phi = torch.zeros(H, n, r, dtype=torch.float64)
    Psi = torch.zeros(H, n, r, dtype=torch.float64)
    for h, rk in enumerate(ranks):
        s = S[h, :rk].sqrt()
        Phi[h, :, :rk] = U[h, :, :rk] * s
        Psi[h, :, :rk] = Vh[h, :rk].T * s
    return Phi, Psi, ranks


# ----------------------------------------------------------------------------- T3: Appendix A


def lag_only_features(
    A: torch.Tensor, W: torch.Tensor, basis: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Appendix A (diagonalisable A, J = 1): translation-invariant complex features of dimension r = the
    number of distinct eigenvalues lambda_l of A. The coefficients c_{tau,h} = <vec W(tau), vec M_h> are fitted
    as sum_l b_{h,l} lambda_l^tau by least squares on the Vandermonde system tau = 0..n-1, then
    phi(i)_l = lambda_l^i, psi^(h)(j)_l = b_{h,l} lambda_l^(-j), so <phi(i), psi(j)> (bilinear) = g_h(i - j).

    Returns (phi: (n, r) complex, psi: (H, n, r) complex, lambdas: (r,)). Pitfall P6: lambda^(-j) grows like
    rho^(-n) for |lambda| < 1; harmless for the rotation teacher (|lambda| = 1)."""
    n = W.shape[0]
    lam = torch.linalg.eigvals(A.double())
    # distinct eigenvalues (the rotation teacher's are distinct by construction; merge numerically equal ones)
    uniq: list[complex] = []
    for z in lam.tolist():
        if all(abs(z - u) > 1e-9 for u in uniq):
            uniq.append(z)
    lam = torch.tensor(uniq, dtype=torch.complex128)
    tau = torch.arange(n, dtype=torch.float64)
    vander = lam[None, :] ** tau[:, None].to(torch.complex128)  # (n, r)
    c = (W.reshape(n, -1).double() @ basis.reshape(basis.shape[0], -1).T).to(torch.complex128)  # (n, H)
    b = torch.linalg.lstsq(vander, c).solution.T  # (H, r)
    pos = torch.arange(1, n + 1, dtype=torch.float64).to(torch.complex128)  # 1-indexed positions
    phi = lam[None, :] ** pos[:, None]  # (n, r)
    psi = b[:, None, :] * lam[None, None, :] ** (-pos)[None, :, None]  # (H, n, r)
    return phi, psi, lam


def lag_only_coefficients(phi: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """alpha^(h)_ij = Re <phi(i), psi^(h)(j)> 1[i >= j] (bilinear, no conjugate): (H, n, n) float64."""
    n = phi.shape[0]
    g = torch.einsum("ir,hjr->hij", phi, psi).real
    return g * torch.tril(torch.ones(n, n, dtype=torch.float64))


def realify_features(phi: torch.Tensor, psi: torch.Tensor, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The equivalent real construction via conjugate pairs. For a real A the eigenvalues come in pairs
    (lambda, conj lambda) with conjugate coefficients, whose two complex features sum to 2 Re(b lambda^(i-j));
    with Re(z w) = Re z Re w - Im z Im w that is two real features per pair ([Re, Im] of lambda^i and
    2 [Re, -Im] of b lambda^(-j)), and one per real eigenvalue: r = k real features for the rotation teacher.
    Returns (phi: (n, r) real, psi: (H, n, r) real)."""
    ph, ps = [], []
    for l, z in enumerate(lam.tolist()):
        if abs(z.imag) <= 1e-12:  # a real eigenvalue: one real feature
            ph.append(phi[:, l : l + 1].real)
            ps.append(psi[..., l : l + 1].real)
        elif z.imag > 0:  # one member of each conjugate pair stands for both
            ph += [phi[:, l : l + 1].real, phi[:, l : l + 1].imag]
            ps += [2 * psi[..., l : l + 1].real, -2 * psi[..., l : l + 1].imag]
    return torch.cat(ph, dim=-1), torch.cat(ps, dim=-1)


# ----------------------------------------------------------------------------- T5: Thm 5.1 (2), attention


def highway_alpha_corrected(gamma: float, i: int, a_dot_u: float) -> float:
    """The attention weight alpha_ij of Thm 5.1's construction (1-indexed, j < i), corrected for the query's
    own logit s_ii = a^T u (spec pitfall P8): e^gamma / (e^gamma + (i - 2) + e^(a^T u))."""
    return math.exp(gamma) / (math.exp(gamma) + (i - 2) + math.exp(a_dot_u))


def highway_alpha_paper(gamma: float, i: int) -> float:
    """The paper's formula, which takes s_ii = 0: e^gamma / (e^gamma + i - 1) (off by the self-logit)."""
    return math.exp(gamma) / (math.exp(gamma) + i - 1)


def highway_input(W_Q: torch.Tensor, W_K: torch.Tensor, u: torch.Tensor, gamma: float, tau: int) -> torch.Tensor:
    """Thm 5.1's input for distance tau (1-indexed j = 1, i = tau + 1): x_i = u, x_j = gamma a / ||a||^2 with
    a = W_K^T W_Q u, every other token 0. Shape (tau + 1, d)."""
    a = W_K.T @ W_Q @ u
    X = torch.zeros(tau + 1, u.shape[0], dtype=u.dtype)
    X[-1] = u
    X[0] = gamma * a / (a @ a)
    return X


def highway_gamma(norm_v: float, eps: float, i: int, a_dot_u: float, hi: float = 1.0) -> float:
    """The smallest gamma (to 1e-6, by doubling then bisection) with both conditions of the proof:
    1 - alpha_ij <= eps / (2 ||V||_2) (with the corrected alpha) and ||V||_2 gamma (i - 1) e^(-gamma) <= eps / 2."""

    def ok(g: float) -> bool:
        return (
            1 - highway_alpha_corrected(g, i, a_dot_u) <= eps / (2 * norm_v)
            and norm_v * g * (i - 1) * math.exp(-g) <= eps / 2
            and g >= 1
        )

    while not ok(hi):
        hi *= 2
    lo = 1.0 if not ok(1.0) else 0.0
    if lo == 0.0:
        return 1.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


# ----------------------------------------------------------------------------- T6: Eckart-Young


def projection_mse(W: torch.Tensor, basis: torch.Tensor) -> float:
    """Expected MSE of the best student with value subspace span(basis) (any (m, p, d) matrices), under
    i.i.d. N(0, I) inputs: sum_{i >= j} ||W(i-j) - P W(i-j)||_F^2 / (n p) = sum_tau (n - tau) ||(I - P)
    W(tau)||^2 / (n p)."""
    n, p, _ = W.shape
    Wf = W.reshape(n, -1).double()
    if basis.numel():
        Q, _ = torch.linalg.qr(basis.reshape(basis.shape[0], -1).double().T)
        Wf = Wf - (Wf @ Q) @ Q.T
    weights = torch.arange(n, 0, -1, dtype=torch.float64)
    return float((weights * (Wf**2).sum(dim=1)).sum() / (n * p))


# ----------------------------------------------------------------------------- Figure 3 right


def pair_unfolding(K: torch.Tensor) -> torch.Tensor:
    """The learned interaction operator's pair unfolding (heads spec U-I-10): rows vec K_ij for every causal pair
    i >= j, shape (n (n + 1) / 2, p d), float64."""
    n = K.shape[0]
    il = torch.tril_indices(n, n)
    return K.double()[il[0], il[1]].reshape(il.shape[1], -1)


def operator_spectrum(K: torch.Tensor) -> torch.Tensor:
    """Singular values of the pair unfolding (float64, descending)."""
    return torch.linalg.svdvals(pair_unfolding(K))
