"""Closed forms and reduced models of the frontier-superposition paper (superposition spec §2.4, §2.5, §4).

The closed forms (k_c = (np)^c, m_f^(c) = k_{c+1} - k_c, tree regime) live in ``superposition_closed_forms`` and
are re-exported here. Every function is plain torch / math; the reduced experiments (E3 Möbius, E6 gradient
law) run in float64; the W^emb model (E7 Conjecture D, App. H.1, Lemma 9) is in ``superposition_wemb``.
"""

from __future__ import annotations

import math

import torch

from ....rng import counter_generator

# the closed forms are part of this module's API (callers use superposition.cos_step etc.)

F64 = torch.float64


# ----------------------------------------------------------------------------- Möbius reduction (Prop. 2-3, App. F/G)


def mobius_alpha_eff(
    theta: torch.Tensor, k: torch.Tensor, K: torch.Tensor, relu: bool | torch.Tensor = True
) -> torch.Tensor:
    """alpha_eff,c of the two-channel reduced MLP; theta (..., 4) = (alpha, a, b1', eta); k, K (C,).
    Returns (..., C). Without ``relu`` both channels are linear (the Möbius form (αA + m_f B)/(A + sqrt k B));
    ``relu`` may be a bool tensor (...,) choosing the form per row, so both forms train in one batch."""
    alpha, a, b, eta = (theta[..., i : i + 1] for i in range(4))
    mf = K - k
    if isinstance(relu, torch.Tensor):  # per row: exactly relu(t) or t, and their gradients
        act = lambda t: torch.where(relu[..., None], torch.relu(t), t)
    else:
        act = torch.relu if relu else (lambda t: t)
    h_old = eta * act(a / k.sqrt() + b)
    h_new = eta * act(a * alpha / mf + b)
    return (alpha + mf * h_new) / (1 + k.sqrt() * h_old)


def mobius_loss(
    theta: torch.Tensor, k: torch.Tensor, K: torch.Tensor, relu: bool | torch.Tensor = True
) -> torch.Tensor:
    """L~(theta) = sum_c (1 - cos_c(alpha_eff,c)), (...,)."""
    x = mobius_alpha_eff(theta, k, K, relu)
    mf = K - k
    cos = (k.sqrt() + x) / (K.sqrt() * torch.sqrt(1 + x**2 / mf))
    return (1 - cos).sum(-1)


def mobius_AB(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return 1 + theta[..., 3] * theta[..., 1], theta[..., 3] * theta[..., 2]


def lemma29_dL_dt(alpha: float, t: float, k: torch.Tensor, K: torch.Tensor) -> float:
    """Lemma 29: ∂L~/∂t = Σ_c k_c (α - α*_c)(α_eff,c - α*_c) / (m_f sqrt K (1 + α_eff²/m_f)^{3/2} (t + sqrt k)²),
    with α_eff,c(t) = (α t + m_f)/(t + sqrt k_c), t = A/B."""
    mf = K - k
    ast = mf / k.sqrt()
    ae = (alpha * t + mf) / (t + k.sqrt())
    terms = k * (alpha - ast) * (ae - ast) / (mf * K.sqrt() * (1 + ae**2 / mf) ** 1.5 * (t + k.sqrt()) ** 2)
    return float(terms.sum())


def lemma29_autograd(alpha: float, t: float, k: torch.Tensor, K: torch.Tensor) -> float:
    tt = torch.tensor(t, dtype=F64, requires_grad=True)
    mf = K - k
    ae = (alpha * tt + mf) / (tt + k.sqrt())
    L = (1 - (k.sqrt() + ae) / (K.sqrt() * torch.sqrt(1 + ae**2 / mf))).sum()
    (g,) = torch.autograd.grad(L, tt)
    return float(g)


def mobius_inits(count: int, seed: int = 0) -> torch.Tensor:
    """Generic inits (alpha, a, b1', eta): alpha = 1, a ~ U(0.3, 1.2), b1' ~ U(-0.4, -0.05), eta ~ U(-1.5, -0.3)."""
    g = counter_generator("superposition/mobius-init", seed)
    u = torch.rand(count, 3, generator=g, dtype=F64)
    return torch.stack(
        [torch.ones(count, dtype=F64), 0.3 + 0.9 * u[:, 0], -0.4 + 0.35 * u[:, 1], -1.5 + 1.2 * u[:, 2]], -1
    )


SPEC_INIT = (1.0, 0.82, -0.25, -1.32)  # the spec author's init (U15), reported separately and labelled


def train_mobius(
    theta0: torch.Tensor,
    np_: float = 2.0,
    D: int = 3,
    steps: int = 10_000,
    lr: float = 1e-3,
    relu: bool | torch.Tensor = True,
    log_every: int = 100,
) -> dict:
    """Adam on L~ over a batch of inits (R, 4), float64, k_c = (np)^c for c = 0..D-1, steps c = 0..D-1;
    ``relu`` one form for all or a bool tensor (R,) per init (Adam and the loss act row by row, so each row
    ends as it would alone). Returns {"theta": (R, 4) final, "trace": [{"step", "run", "A", "B", "loss"}...]}."""
    k = torch.tensor([np_**c for c in range(D)], dtype=F64)
    K = k * np_
    theta = theta0.clone().to(F64).requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=lr)
    trace = []
    for step in range(steps + 1):
        loss = mobius_loss(theta, k, K, relu)
        if step % log_every == 0 or step == steps:
            A, B = mobius_AB(theta.detach())
            for r in range(theta.shape[0]):
                trace.append(
                    {"step": step, "run": r, "A": float(A[r]), "B": float(B[r]), "loss": float(loss[r].detach())}
                )
        if step == steps:
            break
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    return {"theta": theta.detach(), "trace": trace, "k": k, "K": K}


# ----------------------------------------------------------------------------- reduced order-parameter model (E6)


def sparse_er(g: torch.Generator, B: int, n: int, p: float):
    """B directed G(n, p) graphs as edge lists over global node ids b*n + v (edge count ~ Poisson(n(n-1)p),
    pairs uniform without self-loops, duplicates removed: G(n, p) up to O(1/n) corrections). Returns src, tgt."""
    M = torch.poisson(torch.full((B,), n * (n - 1) * p, dtype=F64), generator=g).long()
    tot = int(M.sum())
    b = torch.repeat_interleave(torch.arange(B), M)
    s = torch.randint(0, n, (tot,), generator=g)
    t = (s + torch.randint(1, n, (tot,), generator=g)) % n
    key = torch.unique((b * n + s) * n + t)
    return key // n, (key // (n * n)) * n + key % n


def reduced_forward(
    z0: torch.Tensor, src: torch.Tensor, tgt: torch.Tensor, betas, alphas, B: int, n: int, attention: list | None = None
):
    """U = I_n, one scalar selectivity beta_c and one OV scale alpha_c per layer, residual + L2 norm, no MLP.
    z0 (B, n); returns the slots [z_0, ..., z_L], each (B, n). ``attention``, when given, receives each
    layer's source-attention mass P (B, n)."""
    outdeg = torch.zeros(B * n, dtype=F64).index_add_(0, src, torch.ones_like(src, dtype=F64))
    has = outdeg > 0
    zs = [z0]
    z = z0
    for beta, alpha in zip(betas, alphas):
        logit = (beta * z.reshape(-1) + torch.log(outdeg.clamp(min=1))).masked_fill(~has, float("-inf")).view(B, n)
        P = torch.softmax(logit, -1).reshape(-1)
        P = torch.nan_to_num(P, nan=0.0)
        if attention is not None:
            attention.append(P.view(B, n))
        w = (P / outdeg.clamp(min=1))[src]
        y = torch.zeros(B * n, dtype=F64).index_add_(0, tgt, w).view(B, n)
        a = z + alpha * y
        z = a / a.norm(dim=-1, keepdim=True).clamp(min=1e-300)
        zs.append(z)
    return zs


def reduced_sets(root: torch.Tensor, src: torch.Tensor, tgt: torch.Tensor, B: int, n: int, L: int) -> torch.Tensor:
    V = torch.zeros(B * n, dtype=F64)
    V[torch.arange(B) * n + root] = 1
    out = [V.view(B, n).clone()]
    for _ in range(L):
        V = ((V + torch.zeros_like(V).index_add_(0, tgt, V[src])) > 0).to(F64)
        out.append(V.view(B, n).clone())
    return torch.stack(out, 1)  # (B, L+1, n)


def gradient_law(n: int, np_: float, L: int, batch: int, seed: int = 0, point: str = "uniform") -> list[dict]:
    """R_c = |∂_{beta_c} L_e2e| / |∂_{beta_c} L_c| for c = 0..L-1 on the reduced model (U = I_n), with
    L_e2e = 1 - cos(z_L, z_L*) and L_c = 1 - cos(z_{c+1}, z_{c+1}*) (the layer's own cascade loss).
    ``point``: uniform (beta_c = 0) or ideal (beta_c = 2 sqrt(k_c) log(n np), selective); alpha_c = α*_c at the
    batch's mean sizes. Predicted (Prop. 7): R_c ∝ (np)^{-(L-1-c)/2}."""
    g = counter_generator("superposition/gradlaw", n, np_, L, batch, seed)
    p = np_ / n
    src, tgt = sparse_er(g, batch, n, p)
    root = torch.randint(0, n, (batch,), generator=g)
    V = reduced_sets(root, src, tgt, batch, n, L)
    k = V.sum(-1).mean(0)  # (L+1,)
    alphas = [float((k[c + 1] - k[c]) / k[c].sqrt()) for c in range(L)]
    b0 = [0.0 if point == "uniform" else 2 * math.sqrt(float(k[c])) * math.log(n * np_) for c in range(L)]
    betas = [torch.tensor(b, dtype=F64, requires_grad=True) for b in b0]
    z0 = V[:, 0].clone()
    zs = reduced_forward(z0, src, tgt, betas, alphas, batch, n)
    zstar = V / V.sum(-1, keepdim=True).sqrt()

    def cosloss(c):
        return (1 - (zs[c] * zstar[:, c]).sum(-1)).mean()

    e2e = torch.autograd.grad(cosloss(L), betas, retain_graph=True)
    rows = []
    for c in range(L):
        (loc,) = torch.autograd.grad(cosloss(c + 1), [betas[c]], retain_graph=True)
        R = abs(float(e2e[c])) / max(abs(float(loc)), 1e-300)
        rows.append(
            {
                "n": n,
                "np": np_,
                "L": L,
                "c": c,
                "point": point,
                "depth_after": L - 1 - c,
                "x": (L - 1 - c) * math.log10(np_),
                "R": R,
                "log10_R": math.log10(max(R, 1e-300)),
                "predicted": np_ ** (-(L - 1 - c) / 2),
                "grad_e2e": float(e2e[c]),
                "grad_local": float(loc),
            }
        )
    return rows


def selectivity_ladder(n: int, np_: float, L: int, batch: int, betas, delta: float = 0.1, seed: int = 0) -> list[dict]:
    """E11 "quality vs β" (Lemmas 19-20): the reduced model with one β shared by every layer and α_c = α*_c at
    the batch's mean sizes; per β and layer c the selectivity S_c (attention mass on reached sources V_c, over
    graphs where some reached node has an out-edge) and cos(z_{c+1}, z*_{c+1}). Lemma 20 predicts that the β
    needed for S_c >= 1 - δ grows with c (γ*_c ∝ sqrt k_c: the query's amplitude on a reached node is
    1/sqrt k_c)."""
    g = counter_generator("superposition/ladder", n, np_, L, batch, seed)
    src, tgt = sparse_er(g, batch, n, np_ / n)
    root = torch.randint(0, n, (batch,), generator=g)
    V = reduced_sets(root, src, tgt, batch, n, L)
    k = V.sum(-1).mean(0)
    alphas = [float((k[c + 1] - k[c]) / k[c].sqrt()) for c in range(L)]
    zstar = V / V.sum(-1, keepdim=True).sqrt()
    outdeg = torch.zeros(batch * n, dtype=F64).index_add_(0, src, torch.ones_like(src, dtype=F64)).view(batch, n)
    rows = []
    for beta in betas:
        att: list = []
        zs = reduced_forward(V[:, 0].clone(), src, tgt, [float(beta)] * L, alphas, batch, n, att)
        for c in range(L):
            live = ((V[:, c] > 0) & (outdeg > 0)).any(-1)
            S = (att[c] * V[:, c]).sum(-1)[live].mean()
            cos = (zs[c + 1] * zstar[:, c + 1]).sum(-1).mean()
            rows.append({"beta": float(beta), "c": c, "S": float(S), "cos": float(cos), "k_c": float(k[c])})
    return rows


def ladder_thresholds(rows: list[dict], delta: float = 0.1) -> dict[int, float]:
    """β*_c = the smallest swept β with S_c >= 1 - δ (inf when none reaches it)."""
    out = {}
    for c in sorted({r["c"] for r in rows}):
        ok = [r["beta"] for r in rows if r["c"] == c and r["S"] >= 1 - delta]
        out[c] = min(ok) if ok else float("inf")
    return out
