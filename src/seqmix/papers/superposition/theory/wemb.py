"""The reduced W^emb model of the frontier-superposition paper (superposition spec E7, App. H.1, Lemma 9):
a full logit matrix per layer on the one-hot embedding (U = I_n), OV = α_c I, residual + L2 norm.

- ``wemb_forward`` / ``wemb_grad``: the model and ∇_W L_sup;
- ``diag_off_split``, ``conjecture_d``, ``diagonal_advantage``: Conjecture D (the gradient at W = 0 is
  diagonal-dominated) and App. H.1's diagonal advantage;
- ``hessian_gap``: Lemma 9, the smallest eigenvalue of the population Hessian of L_sup w.r.t. W^emb at
  W* = γ I restricted to M_inv^⊥, against 1/(8 d n³).

All float64.
"""

from __future__ import annotations

import itertools
import math

import torch

from ....ops.graphs import reachable_sets, sample_graphs, source_softmax
from ....rng import counter_generator
from .closed_forms import gamma_sat
from .reduced import F64

# ----------------------------------------------------------------------------- W^emb gradients (E7, App. H.1)


def wemb_forward(W: torch.Tensor, adj: torch.Tensor, root: torch.Tensor, alphas, d: int) -> list[torch.Tensor]:
    """Reduced model with a full logit matrix per layer: logit_s = z^T W_c e_s / sqrt(d) (U = I_n), OV = α_c I,
    residual + L2 norm. W (L, n, n); adj (B, n, n)."""
    B, n, _ = adj.shape
    outdeg = adj.sum(-1)
    z = torch.zeros(B, n, dtype=F64)
    z[torch.arange(B), root] = 1
    zs = [z]
    for c, alpha in enumerate(alphas):
        P = source_softmax((z @ W[c]) / math.sqrt(d), outdeg)
        y = torch.bmm((P / outdeg.clamp(min=1)).unsqueeze(1), adj).squeeze(1)
        a = z + alpha * y
        z = a / a.norm(dim=-1, keepdim=True)
        zs.append(z)
    return zs


def wemb_grad(W: torch.Tensor, adj, root, V, alphas, d: int) -> torch.Tensor:
    """∇_W L_sup (L_sup = Σ_{c>=1} mean(1 - cos(z_c, z_c*))), (L, n, n)."""
    W = W.clone().requires_grad_(True)
    zs = wemb_forward(W, adj, root, alphas, d)
    zstar = V.to(F64) / V.sum(-1, keepdim=True).to(F64).sqrt()
    loss = sum((1 - (zs[c] * zstar[:, c]).sum(-1)).mean() for c in range(1, len(zs)))
    (g,) = torch.autograd.grad(loss, W)
    return g


def diag_off_split(G: torch.Tensor, basis: str = "I") -> tuple[float, float]:
    """(||G_off||_F, ||G_diag||_F): G_diag = projection on span{I} (or span{I, J}), G_off the remainder."""
    n = G.shape[-1]
    eye = torch.eye(n, dtype=G.dtype)
    if basis == "I":
        proj = torch.diagonal(G).mean() * eye
    else:
        off = ~torch.eye(n, dtype=torch.bool)
        mu = G[off].mean()
        gam = torch.diagonal(G).mean() - mu
        proj = gam * eye + mu * torch.ones_like(G)
    return float((G - proj).norm()), float(proj.norm())


def conjecture_d(
    points: int,
    n: int = 50,
    np_: float = 2.0,
    L: int = 3,
    d: int = 64,
    batch: int = 64,
    perturb: float = 0.01,
    seed: int = 0,
) -> list[dict]:
    """App. H.5: R(γ) = ||(∇L)_off||_F / ||(∇L)_diag||_F at W^emb = γ(I - J/n) (+ a small relative perturbation),
    γ log-uniform in [1e-2, γ_sat]; one fresh batch of graphs per point; per layer and all layers together."""
    k = [sum(np_**j for j in range(c + 1)) for c in range(L + 1)]
    alphas = [(k[c + 1] - k[c]) / math.sqrt(k[c]) for c in range(L)]
    gsat = gamma_sat(d, np_ ** (L - 1), n)
    g = counter_generator("superposition/conjD", n, np_, L, seed)
    eye = torch.eye(n, dtype=F64)
    J = torch.ones(n, n, dtype=F64)
    rows = []
    for i in range(points):
        gam = math.exp(
            math.log(1e-2) + (math.log(gsat) - math.log(1e-2)) * float(torch.rand(1, generator=g, dtype=F64))
        )
        W = gam * (eye - J / n).expand(L, n, n).clone()
        W = W + perturb * gam * torch.randn(L, n, n, generator=g, dtype=F64) / math.sqrt(n)
        b = sample_graphs(g, batch, n, np_ / n, L)
        G = wemb_grad(W, b.adj.to(F64), b.root, b.V, alphas, d)
        for c in range(L):
            off, dg = diag_off_split(G[c], "I")
            off2, dg2 = diag_off_split(G[c], "IJ")
            rows.append(
                {
                    "point": i,
                    "gamma": gam,
                    "layer": c,
                    "R": off / max(dg, 1e-300),
                    "R_IJ": off2 / max(dg2, 1e-300),
                    "grad_norm": float(G[c].norm()),
                }
            )
    return rows


def diagonal_advantage(
    n: int = 50, np_: float = 2.0, L: int = 3, d: int = 64, batches: int = 20, batch: int = 256, seed: int = 0
) -> dict:
    """App. H.1: Monte-Carlo population gradient of L_sup w.r.t. W^emb at W = 0 (all layers), summed over
    layers; signed ratio |mean diag| / |mean off-diag|, entrywise |.| ratio, and the I / J coefficients."""
    k = [sum(np_**j for j in range(c + 1)) for c in range(L + 1)]
    alphas = [(k[c + 1] - k[c]) / math.sqrt(k[c]) for c in range(L)]
    g = counter_generator("superposition/diag-adv", n, np_, L, seed)
    G = torch.zeros(L, n, n, dtype=F64)
    for _ in range(batches):
        b = sample_graphs(g, batch, n, np_ / n, L)
        G += wemb_grad(torch.zeros(L, n, n, dtype=F64), b.adj.to(F64), b.root, b.V, alphas, d) / batches
    Gs = G.sum(0)
    off = ~torch.eye(n, dtype=torch.bool)
    md, mo = float(torch.diagonal(Gs).mean()), float(Gs[off].mean())
    row_sum = float(Gs.sum(-1).abs().max() / Gs.abs().max())
    return {
        "signed_ratio": abs(md) / abs(mo),
        "abs_ratio": float(torch.diagonal(Gs).abs().mean() / Gs[off].abs().mean()),
        "I_coef": md - mo,
        "J_coef": mo,
        "row_sum_rel": row_sum,
    }


# ----------------------------------------------------------------------------- Lemma 9


def _all_graphs(n: int, p: float):
    """Every directed graph on n nodes without self-loops with its G(n, p) probability: (adj (G, n, n), w (G,))."""
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    bits = torch.tensor(list(itertools.product((0.0, 1.0), repeat=len(pairs))), dtype=F64)  # (G, n(n-1))
    adj = torch.zeros(bits.shape[0], n, n, dtype=F64)
    idx = torch.tensor(pairs)
    adj[:, idx[:, 0], idx[:, 1]] = bits
    e = bits.sum(-1)
    w = p**e * (1 - p) ** (len(pairs) - e)
    return adj, w


def _perp_basis(n: int, gauge: bool = False) -> torch.Tensor:
    """Orthonormal basis (n², n² - 2) of the complement of span{I, J} in R^{n x n} (flattened); with ``gauge``
    also without the row-constant directions u 1^T (logit shifts that leave every softmax unchanged), (n², n²
    - n - 1)."""
    cols = [torch.eye(n, dtype=F64).reshape(-1), torch.ones(n, n, dtype=F64).reshape(-1)]
    if gauge:
        cols += [torch.outer(torch.eye(n, dtype=F64)[i], torch.ones(n, dtype=F64)).reshape(-1) for i in range(n)]
    M = torch.stack(cols, 1)
    rank = int(torch.linalg.matrix_rank(M))
    Q, _ = torch.linalg.qr(torch.cat([M, torch.eye(n * n, dtype=F64)], 1))
    return Q[:, rank : n * n]


def hessian_gap(
    n: int, np_: float, L: int, d: int, gamma: float, graphs: str = "exact", samples: int = 4096, seed: int = 0
) -> dict:
    """Lemma 9: λ_min of the Hessian of L_pop (L_sup of the reduced W^emb model, U = I_n, OV = α*_c I) w.r.t.
    W = (W_1..W_L) at W_c = γ I, restricted to M_inv^⊥ in every layer; against 1/(8 d n³).

    ``graphs``: ``exact`` enumerates every graph on n nodes weighted by its G(n, p) probability and every
    root (the population itself; n <= 5), ``mc`` draws ``samples`` graphs (then the S_n symmetry holds only up
    to sampling noise, reported as the split-half difference of λ_min)."""
    p = np_ / n
    k = [sum(np_**j for j in range(c + 1)) for c in range(L + 1)]
    alphas = [(k[c + 1] - k[c]) / math.sqrt(k[c]) for c in range(L)]
    if graphs == "exact":
        adj, w = _all_graphs(n, p)
        G = adj.shape[0]
        adj = adj.repeat_interleave(n, 0)
        root = torch.arange(n).repeat(G)
        w = w.repeat_interleave(n) / n
    else:
        b = sample_graphs(counter_generator("superposition/lemma9", n, np_, L, seed), samples, n, p, L)
        adj, root = b.adj.to(F64), b.root
        w = torch.full((samples,), 1.0 / samples, dtype=F64)
    V = reachable_sets(adj, root, L)
    zstar = V.to(F64) / V.sum(-1, keepdim=True).to(F64).sqrt()

    def loss_of(weights):
        def f(flat):
            zs = wemb_forward(flat.reshape(L, n, n), adj, root, alphas, d)
            return sum(((1 - (zs[c] * zstar[:, c]).sum(-1)) * weights).sum() for c in range(1, L + 1))

        return f

    W0 = (gamma * torch.eye(n, dtype=F64)).expand(L, n, n).reshape(-1).clone()
    P = torch.block_diag(*([_perp_basis(n)] * L))
    Pg = torch.block_diag(*([_perp_basis(n, gauge=True)] * L))

    def lam_min(weights) -> tuple[float, float]:
        H = torch.autograd.functional.hessian(loss_of(weights), W0, vectorize=True)
        H = (H + H.T) / 2
        return tuple(float(torch.linalg.eigvalsh(B.T @ H @ B)[0]) for B in (P, Pg))

    lam, lam_g = lam_min(w)
    out = {
        "n": n,
        "d": d,
        "L": L,
        "gamma": gamma,
        "graphs": graphs,
        "lambda_min": lam,
        "lambda_min_gauge_free": lam_g,
        "bound": 1.0 / (8 * d * n**3),
        "split_half_diff": 0.0,
    }
    if graphs == "mc":
        half = samples // 2
        w1 = torch.zeros_like(w)
        w1[:half] = 2 * w[:half]
        out["split_half_diff"] = abs(lam_min(w1)[1] - lam_min(2 * w - w1)[1])
    return out
