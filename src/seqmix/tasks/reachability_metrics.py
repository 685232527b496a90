"""Quantities extracted from a trained cascade transformer (superposition spec §2.7), on an evaluation batch.

Per slot c = 1..L: cos_c = mean cos(z_c, z_c*), top-k_c recall. Per layer c = 0..L-1 (the step z_c -> z_{c+1}):
selectivity S^front (mass on frontier edges F_c) and S^src (mass on edges leaving V_c), alpha_eff (median/mean
over instances with m_f > 0), the Lemma 18 single-step bound cos_theory at the measured alpha_eff, r = cos/
cos_theory, the Möbius A, B (regression of post-MLP on pre-MLP node amplitudes over v ∈ V_{c+1}), gamma_c and
alpha_c (traces of U^T W_QK U and U^T W_OV U over n), S_n-projection ratios of both matrices, per-layer
gradient norms of the training loss. Final slot: three accuracies (spec U3).
"""

from __future__ import annotations

import math

import torch

from ..capabilities import LayerwiseEdgeAttention
from ..ops.graphs import GraphBatch
from ..rng import counter_generator
from .base import Task
from .reachability_losses import cosine, ideal_targets


def lemma18_cos(x: torch.Tensor, k: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """cos_c(x) = (sqrt k + x) / (sqrt K sqrt(1 + x^2 / m_f)), m_f = K - k > 0."""
    mf = K - k
    return (k.sqrt() + x) / (K.sqrt() * torch.sqrt(1 + x**2 / mf))


def sn_projection(M: torch.Tensor) -> dict:
    """Fit M ≈ γI + μJ; ratios of diagonal to off-diagonal entries (superposition spec §2.7)."""
    M = M.double()
    n = M.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    dg, od = torch.diagonal(M), M[off]
    mu = float(od.mean())
    gam = float(dg.mean()) - mu
    perp = M - gam * torch.eye(n, dtype=M.dtype) - mu * torch.ones_like(M)
    return {
        "r_abs": float(dg.abs().mean() / od.abs().mean().clamp(min=1e-300)),
        "r_signed": abs(float(dg.mean())) / max(abs(mu), 1e-300),
        "r_frob": float(dg.norm() / od.norm().clamp(min=1e-300)),
        "mu_over_gamma": mu / gam if gam != 0 else float("nan"),
        "offmanifold": float(perp.norm() / M.norm().clamp(min=1e-300)),
        "gamma": gam,
        "mu": mu,
    }


def _nanmedian(x: torch.Tensor) -> float:
    x = x[torch.isfinite(x)]
    return float(x.median()) if x.numel() else float("nan")


def _nanmean(x: torch.Tensor) -> float:
    x = x[torch.isfinite(x)]
    return float(x.mean()) if x.numel() else float("nan")


def _require_internals(model) -> None:
    if not isinstance(model, LayerwiseEdgeAttention):
        raise TypeError(
            f"reachability metrics read per-layer attention internals; {type(model).__name__} does not "
            "implement seqmix.capabilities.LayerwiseEdgeAttention"
        )


def cascade_diagnostics(task, model, b: GraphBatch, grad_norms: bool = True) -> dict:
    """The §2.7 quantities of ``model`` on batch ``b`` (module docstring); U is the task's fixed embedding."""
    _require_internals(model)
    U = task.U.to(b.adj.dtype)
    L = task.L
    # Task.predict slices one tensor and returns one; this model reads (adj, root) and returns its internals
    # (a dict), so the whole batch is one step of predict's eval-mode, no-grad loop
    (res,) = Task.in_batches(model, 1, 1, lambda *_: model((b.adj, b.root), internals=True))
    k = b.V.sum(-1).to(torch.float64)  # (B, L+1)
    zstar = ideal_targets(b.V, U)  # (B, L+1, d)
    logits = res["z"] @ U  # (B, L+1, n)
    out = _slot_metrics(res["z"], zstar, logits, b.V, k)
    for c in range(L):
        _layer_selectivity(out, c, res, b, U, zstar, k)
        _layer_maps(out, c, model, U, task.n, task.d)
    for c in range(L):
        out[f"gap_z{c + 1}"] = out[f"cos_theory_l{c}"] - out[f"cos_z{c + 1}"]
    for key in (
        "qk_r_signed",
        "qk_r_abs",
        "qk_r_frob",
        "qk_mu_over_gamma",
        "qk_offmanifold",
        "ov_r_signed",
        "ov_r_abs",
        "ov_r_frob",
        "ov_mu_over_gamma",
    ):
        out[f"{key}_mean"] = sum(out[f"{key}_l{c}"] for c in range(L)) / L
    out["absA_max"] = max(abs(out[f"A_l{c}"]) for c in range(L))
    out.update(_final_slot_accuracies(logits[:, L].double(), b, L, task.n))
    if grad_norms:
        out.update(layer_grad_norms(task, model, b))
    return out


def _slot_metrics(
    z: torch.Tensor, zstar: torch.Tensor, logits: torch.Tensor, V: torch.Tensor, k: torch.Tensor
) -> dict[str, float]:
    """Per slot c: mean cos(z_c, z_c*) and the top-k_c recall of the readout logits."""
    cos = cosine(z, zstar).double()  # (B, L+1)
    out = {"cos_z0": float(cos[:, 0].mean())}  # z_0 = u_r: 1 by construction (Table 2's c = 0 column)
    for c in range(1, z.shape[1]):
        out[f"cos_z{c}"] = float(cos[:, c].mean())
        ranks = logits[:, c].argsort(-1, descending=True).argsort(-1)
        top = ranks < k[:, c : c + 1]
        out[f"recall_z{c}"] = float(((top & V[:, c]).sum(-1) / k[:, c]).mean())
    return out


def _layer_selectivity(
    out: dict, c: int, res: dict, b: GraphBatch, U: torch.Tensor, zstar: torch.Tensor, k: torch.Tensor
) -> None:
    """Layer c (the step z_c -> z_{c+1}): attention selectivity, alpha_eff against Lemma 18, Möbius A and B."""
    z, V = res["z"], b.V
    Vc, Vn = V[:, c], V[:, c + 1]
    new = Vn & ~Vc
    mf = k[:, c + 1] - k[:, c]
    Pc = res["P"][:, c].double()
    out[f"sel_src_l{c}"] = float((Pc * Vc).sum(-1).mean())
    to_new = torch.bmm(b.adj, new.unsqueeze(-1).to(b.adj.dtype)).squeeze(-1).double()  # edges s -> N_{c+1}
    out[f"sel_front_l{c}"] = float((Pc * Vc * to_new / b.adj.sum(-1).double().clamp(min=1)).sum(-1).mean())
    # alpha_eff from z_{c+1} ∝ z_c* + alpha m_f^{-1/2} z_new*
    grow = mf > 0
    znew = (new.to(U.dtype) @ U.T) / mf.clamp(min=1).sqrt().unsqueeze(-1).to(U.dtype)
    zc1 = z[:, c + 1].double()
    num = (zc1 * znew.double()).sum(-1)
    den = (zc1 * zstar[:, c].double()).sum(-1)
    alpha = (mf.sqrt() * num / den)[grow]
    out[f"alpha_eff_med_l{c}"] = _nanmedian(alpha)
    out[f"alpha_eff_mean_l{c}"] = _nanmean(alpha)
    bound = torch.ones_like(mf)
    bound[grow] = lemma18_cos(alpha, k[grow, c], k[grow, c + 1])
    out[f"cos_theory_l{c}"] = _nanmean(bound)
    out[f"r_z{c + 1}"] = out[f"cos_z{c + 1}"] / out[f"cos_theory_l{c}"]
    out[f"r_ideal_z{c + 1}"] = out[f"cos_z{c + 1}"]  # cos_theory = 1 (spec T1b)
    # Möbius A, B: post-MLP amplitude vs pre-MLP amplitude over reached nodes v ∈ V_{c+1}
    a_pre = (res["pre"][:, c] @ U).double()[Vn]
    a_post = (res["post"][:, c] @ U).double()[Vn]
    if a_pre.numel() > 1 and float(a_pre.var()) > 0:
        xm, ym = a_pre.mean(), a_post.mean()  # least squares with intercept, in closed form (deterministic)
        slope = ((a_pre - xm) * (a_post - ym)).sum() / ((a_pre - xm) ** 2).sum()
        out[f"A_l{c}"], out[f"B_l{c}"] = float(slope), float(ym - slope * xm)
    else:
        out[f"A_l{c}"] = out[f"B_l{c}"] = float("nan")


def _layer_maps(out: dict, c: int, model, U: torch.Tensor, n: int, d: int) -> None:
    """Layer c's bilinear maps in node coordinates: gamma_c, alpha_c (traces over n), S_n-projection ratios."""
    with torch.no_grad():
        w_qk, w_ov = model.attention_maps(c)
        Mqk = U.T @ w_qk.to(U.dtype) @ U
        Mov = U.T @ w_ov.to(U.dtype) @ U
    out[f"gamma_l{c}"] = float(torch.trace(Mqk)) / n
    out[f"gamma_scaled_l{c}"] = out[f"gamma_l{c}"] / math.sqrt(d)
    out[f"qk_specnorm_l{c}"] = float(torch.linalg.matrix_norm(w_qk.double(), ord=2))
    out[f"alpha_l{c}"] = float(torch.trace(Mov)) / n
    for name, M in (("qk", Mqk), ("ov", Mov)):
        for key, val in sn_projection(M).items():
            if key not in ("gamma",):
                out[f"{name}_{key}_l{c}"] = val


def _final_slot_accuracies(zL: torch.Tensor, b: GraphBatch, L: int, n: int) -> dict[str, float]:
    """Spec U3 on the final slot's logits zL (B, n): new-frontier pick, lex-min, two-candidate ordering."""
    VL, Vp = b.V[:, L], b.V[:, L - 1]
    newL = VL & ~Vp
    has_new = newL.any(-1)
    pick = zL.masked_fill(Vp, float("-inf")).argmax(-1)
    ok = newL[torch.arange(len(b)), pick]
    out = {
        "acc_new_frontier": float(ok[has_new].double().mean()) if has_new.any() else float("nan"),
        "acc_lexmin": float((zL.argmax(-1) == b.lexmin).double().mean()),
    }
    g = counter_generator("superposition/two-candidate", len(b), n)
    others = VL.clone()
    others[torch.arange(len(b)), b.root] = False
    outside = ~VL
    valid = others.any(-1) & outside.any(-1)
    r1 = torch.rand(len(b), n, generator=g)
    r2 = torch.rand(len(b), n, generator=g)
    c1 = (r1 * others).argmax(-1)
    c2 = (r2 * outside).argmax(-1)
    idx = torch.arange(len(b))
    two = zL[idx, c1] > zL[idx, c2]
    out["acc_two_candidate"] = float(two[valid].double().mean()) if valid.any() else float("nan")
    out["frac_mf0_last"] = float((~has_new).double().mean())
    return out


def layer_grad_norms(task, model, b: GraphBatch) -> dict:
    """||∂L/∂θ_c|| of the training loss on the batch, per layer (torch.autograd.grad: no .grad side effects)."""
    _require_internals(model)
    params = model.layer_parameters()
    flat = [p for ps in params for p in ps]
    with torch.enable_grad():
        loss = task.loss(model((b.adj, b.root)), b)
        grads = torch.autograd.grad(loss, flat, allow_unused=True)
    out, i = {}, 0
    for li, ps in enumerate(params):
        sq = sum(float((g.double() ** 2).sum()) for g in grads[i : i + len(ps)] if g is not None)
        out[f"grad_norm_l{li}"] = math.sqrt(sq)
        i += len(ps)
    out["eval_loss"] = float(loss.detach())
    return out


__all__ = ["cascade_diagnostics", "layer_grad_norms", "lemma18_cos", "sn_projection"]
