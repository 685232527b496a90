"""Independent slow oracles for the mixer library, written from the papers' equations as token-by-token
loops or dense float64 operators. They never import seqmix (in particular not seqmix.ops), so a shared bug
cannot hide in both sides of a comparison.
"""

from __future__ import annotations

import math

import torch

F64, C128 = torch.float64, torch.complex128


def selective_scan_loop(u, delta, A, B, C, B_bias=None, D=None, disc="zoh", x0=None):
    """b2s6 spec eqs. (3)-(4), (7)-(8), per token and channel: Abar = exp(Delta A),
    Bbar = A^{-1}(Abar - 1) Bin (zoh) or Delta Bin (euler), x = Abar x + Bbar u, y = Re(C x) + D u.
    u, delta: (Nb, L, d); A: (d, n) or (n,); B, C: (Nb, L, G, n); B_bias: (d, n). Returns (y, last state)."""
    Nb, L, d = u.shape
    G, n = B.shape[2], B.shape[3]
    p = d // G
    A = A.to(C128).expand(d, n)
    x = torch.zeros(Nb, d, n, dtype=C128) if x0 is None else x0.to(C128).clone()
    y = torch.zeros(Nb, L, d, dtype=F64)
    for k in range(L):
        for i in range(d):
            g = i // p
            Bin = B[:, k, g].to(C128)
            if B_bias is not None:
                Bin = Bin + B_bias[i].to(C128)
            dl = delta[:, k, i].to(F64)[:, None]
            Abar = torch.exp(dl * A[i])
            Bbar = (Abar - 1) / A[i] * Bin if disc == "zoh" else dl * Bin
            x[:, i] = Abar * x[:, i] + Bbar * u[:, k, i].to(F64)[:, None]
            y[:, k, i] = (C[:, k, g].to(C128) * x[:, i]).sum(-1).real
            if D is not None:
                y[:, k, i] += D[i].to(F64) * u[:, k, i].to(F64)
    return y, x


def ssd_dense(x, dt, A, B, C, D=None):
    """Mamba2 as a dense causal operator: y_t = sum_{s<=t} (C_t . B_s) exp(A_h sum_{s<r<=t} dt_r) dt_s x_s + D x_t.
    x: (Nb, L, H, P); dt: (Nb, L, H); A: (H,); B, C: (Nb, L, G, N)."""
    Nb, L, H, P = x.shape
    G = B.shape[2]
    y = torch.zeros(Nb, L, H, P, dtype=F64)
    for h in range(H):
        g = h // (H // G)
        for t in range(L):
            for s in range(t + 1):
                decay = torch.exp(A[h].to(F64) * dt[:, s + 1 : t + 1, h].to(F64).sum(1))  # (Nb,)
                cb = (C[:, t, g].to(F64) * B[:, s, g].to(F64)).sum(-1)
                y[:, t, h] += (cb * decay * dt[:, s, h].to(F64))[:, None] * x[:, s, h].to(F64)
            if D is not None:
                y[:, t, h] += D[h].to(F64) * x[:, t, h].to(F64)
    return y


def ssd_loop(x, dt, A, B, C, D=None, h0=None):
    """Mamba2 per token in float64, differentiable: h_t = exp(dt_t A_h) h_{t-1} + dt_t x_t B_t^T (head h reads
    group h // (H / G)), y_t = h_t C_t + D_h x_t. x: (Nb, L, H, P); dt: (Nb, L, H); A: (H,); B, C: (Nb, L, G, N);
    h0: (Nb, H, P, N). Returns (y: (Nb, L, H, P), last state: (Nb, H, P, N))."""
    Nb, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    group = [h * G // H for h in range(H)]
    Bh, Ch = B.to(F64)[:, :, group], C.to(F64)[:, :, group]  # (Nb, L, H, N)
    x, dt, A = x.to(F64), dt.to(F64), A.to(F64)
    h = torch.zeros(Nb, H, P, N, dtype=F64) if h0 is None else h0.to(F64)
    ys = []
    for t in range(L):
        decay = torch.exp(dt[:, t] * A)[:, :, None, None]
        h = decay * h + (dt[:, t, :, None] * x[:, t])[..., None] * Bh[:, t, :, None, :]
        y = (h * Ch[:, t, :, None, :]).sum(-1)
        ys.append(y if D is None else y + D.to(F64)[:, None] * x[:, t])
    y = torch.stack(ys, 1) if ys else torch.zeros(Nb, 0, H, P, dtype=F64)
    return y, h


def feedback_recurrence(f, gamma, alpha):
    """s_0 = f_0; s_t = f_t + gamma_t sum_{j<t} alpha[t, j] s_j (sessa spec §2.2). f: (Nb, T, D)."""
    f, gamma, alpha = f.to(F64), gamma.to(F64), alpha.to(F64)
    s = torch.zeros_like(f)
    for t in range(f.shape[1]):
        s[:, t] = f[:, t]
        for j in range(t):
            s[:, t] += gamma[:, t, None] * alpha[:, t, j, None] * s[:, j]
    return s


def feedback_dense_solve(f, gamma, alpha):
    """s = (I - B)^{-1} f with B[t, j] = gamma_t alpha[t, j] for j < t, by a general dense solve."""
    T = f.shape[1]
    Bm = torch.tril(gamma.to(F64)[..., None] * alpha.to(F64), diagonal=-1)
    return torch.linalg.solve(torch.eye(T, dtype=F64) - Bm, f.to(F64))


def rot2(theta: float) -> torch.Tensor:
    c, s = math.cos(theta), math.sin(theta)
    return torch.tensor([[c, -s], [s, c]], dtype=F64)


def step_matrix(psi: torch.Tensor) -> torch.Tensor:
    """M = blockdiag(R(psi_b)) in the half-split layout (block b = coordinates (b, b + d/2)): (d, d)."""
    Bn = psi.shape[0]
    M = torch.zeros(2 * Bn, 2 * Bn, dtype=F64)
    for b in range(Bn):
        R = rot2(float(psi[b]))
        idx = [b, b + Bn]
        for r in range(2):
            for c in range(2):
                M[idx[r], idx[c]] = R[r, c]
    return M


def transport(psi: torch.Tensor, j: int, i: int) -> torch.Tensor:
    """P_{j->i} = M_{i-1}^{-1} ... M_j^{-1} (rotations paper eq. 6), explicit matrix product. psi: (T, B)."""
    d = 2 * psi.shape[1]
    P = torch.eye(d, dtype=F64)
    for t in range(j, i):
        P = step_matrix(psi[t]).T @ P  # M^{-1} = M^T; later steps act last (on the left)
    return P


def transported_attention(q, k, v, psi, psi_v=None, scale=None):
    """One head: logits q_i^T P_{j->i} k_j * scale over j <= i; out_i = sum_j alpha_ij P^v_{j->i} v_j
    (P^v from psi_v; identity transport when psi_v is None). q, k, v: (T, d); psi: (T, d/2)."""
    T, d = q.shape
    scale = d**-0.5 if scale is None else scale
    q, k, v = q.to(F64), k.to(F64), v.to(F64)
    out = torch.zeros(T, d, dtype=F64)
    for i in range(T):
        logits = torch.stack([q[i] @ transport(psi, j, i) @ k[j] for j in range(i + 1)]) * scale
        a = torch.softmax(logits, 0)
        for j in range(i + 1):
            vj = v[j] if psi_v is None else transport(psi_v, j, i) @ v[j]
            out[i] += a[j] * vj
    return out


def rotate_blocks(x, theta, layout="half"):
    """Each position's 2-d blocks rotated by R(theta_b), one 2 x 2 product per block. x: (T, d); theta: (T, d/2);
    block b is coordinates (b, b + d/2) ("half") or (2b, 2b + 1) ("interleaved")."""
    T, d = x.shape
    out = torch.zeros(T, d, dtype=F64)
    for i in range(T):
        for b in range(d // 2):
            e, o = (b, b + d // 2) if layout == "half" else (2 * b, 2 * b + 1)
            out[i, [e, o]] = rot2(float(theta[i, b])) @ x[i, [e, o]].to(F64)
    return out


def path_logits_explicit(q, k, w, beta):
    """logit_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j with H_t = I - beta_t w_t w_t^T, explicit d x d products.
    q, k, w: (T, d); beta: (T,). Returns (T, T) with zeros above the diagonal."""
    T, d = q.shape
    Hs = [torch.eye(d, dtype=F64) - beta[t].to(F64) * torch.outer(w[t].to(F64), w[t].to(F64)) for t in range(T)]
    S = torch.zeros(T, T, dtype=F64)
    for i in range(T):
        for j in range(i + 1):
            P = torch.eye(d, dtype=F64)
            for s in range(j + 1, i + 1):
                P = Hs[s] @ P
            S[i, j] = q[i].to(F64) @ P @ k[j].to(F64)
    return S


def causal_conv_loop(u, K):
    """y[t, c] = sum_{m<=t} K[m, c] u[t - m, c]. u: (Nb, L, d); K: (taps, d), taps past the end are zero."""
    Nb, L, d = u.shape
    y = torch.zeros(Nb, L, d, dtype=F64)
    for t in range(L):
        for m in range(min(t + 1, K.shape[0])):
            y[:, t] += K[m].to(F64) * u[:, t - m].to(F64)
    return y


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    to = C128 if (a.is_complex() or b.is_complex()) else F64
    a, b = a.detach().to(to), b.detach().to(to)
    return float((a - b).norm() / b.norm().clamp_min(1e-300))
