"""The cascade transformer of the frontier-superposition paper (superposition spec §2.2-2.3).

Layer 1 of Zhu et al. (the "ideal copy") is not trained: edge token i carries (u_{s_i}, u_{t_i}); keys are
built from the source embedding, values from the target embedding, the query is the current thought z_c.
Each of the L cascade layers is one attention head + residual + ReLU MLP + parameter-free L2 "LayerNorm"
(x / ||x||, no mean-centring; spec I8):

    q = W_Q z_c;  l_i = (W_Q z_c) . (W_K u_{s_i}) / sqrt(d);  a = softmax over the graph's edges
    o = W_O sum_i a_i W_V u_{t_i};  ã = z_c + o (NoRes: ã = o)
    h = W_2 ReLU(W_1 ã + b_1) + b_2;  z_{c+1} = (ã + h) / max(||ã + h||, eps) (NoLN: ã + h)

Edge attention in exact adjacency-matrix form: keys depend only on the source, so softmax over edges is a
softmax over source nodes with log-weight l_s + log outdeg_s, and the attention mass reaching target t is
y_t = sum_s P_s A_st / outdeg_s; then sum_i a_i u_{t_i} = U y. Per-edge weights a_i = P_{s_i} / outdeg_{s_i}.
"""

from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import nn

from .. import registry
from ..ops.graphs import source_softmax
from ..options import Opt, PosInt

EPS = 1e-12


class CascadeLayer(nn.Module):
    def __init__(self, d: int, d_mlp: int, mlp: bool = True, qk_init_std: float | None = None):
        super().__init__()
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d)) if mlp else None
        if qk_init_std is not None:
            nn.init.normal_(self.q.weight, std=qk_init_std)
            nn.init.normal_(self.k.weight, std=qk_init_std)

    def w_qk(self) -> torch.Tensor:
        """W_QK with logit = z^T W_QK u (so W_QK = W_Q^T W_K in nn.Linear's convention), (d, d)."""
        return self.q.weight.T @ self.k.weight

    def w_ov(self) -> torch.Tensor:
        """W_OV = W_O W_V, (d, d)."""
        return self.o.weight @ self.v.weight


def multihead_edge_attention(
    q: torch.Tensor, adj: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, heads: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """H heads of source-node attention (App. J): q (B, d) = W_Q z; keys, values (n, d) = (W_K U)^T, (W_V U)^T.
    Each head attends with its d/H slice at scale 1/sqrt(d/H) and reads its slice of the values.
    Returns (P (B, H, n) per-head source mass, head outputs concatenated (B, d), before W_O)."""
    B, d = q.shape
    n = keys.shape[0]
    dh = d // heads
    logits = torch.einsum("bhe,nhe->bhn", q.view(B, heads, dh), keys.view(n, heads, dh)) / math.sqrt(dh)
    outdeg = adj.sum(-1)  # (B, n)
    P = source_softmax(logits, outdeg.unsqueeze(1))
    y = torch.bmm(P / outdeg.clamp(min=1).unsqueeze(1), adj)  # (B, H, n): mass arriving at each target
    out = torch.einsum("bhn,nhe->bhe", y, values.view(n, heads, dh)).reshape(B, d)
    return P, out


def edge_attention(z: torch.Tensor, adj: torch.Tensor, keys: torch.Tensor, scale: float):
    """Source-node attention of query z over a graph's edges.

    z: (B, d) queries (already W_Q z); adj: (B, n, n); keys: (n, d) = (W_K U)^T.
    Returns (P, y): P (B, n) attention mass on each source node (sums to 1 over sources with out-edges,
    0 for a graph without edges), y (B, n) attention mass arriving at each target node.
    """
    outdeg = adj.sum(-1)  # (B, n)
    P = source_softmax((z @ keys.T) * scale, outdeg)
    y = torch.bmm((P / outdeg.clamp(min=1)).unsqueeze(1), adj).squeeze(1)
    return P, y


@registry.register_model("cascade")
class CascadeTransformer(nn.Module):
    def __init__(
        self,
        U: torch.Tensor,
        L: int,
        node_logit_scale: float | None = None,
        *,
        d_mlp: PosInt = 256,
        ln: Annotated[bool, Opt(description="parameter-free L2 LayerNorm after each layer")] = True,
        residual: bool = True,
        mlp: bool = True,
        tie_layers: Annotated[bool, Opt(description="one set of weights for every layer")] = False,
        qk_init_std: Annotated[float | None, Opt(exclusive_minimum=0)] = None,
        heads: Annotated[int, Opt(minimum=1, description="attention heads per layer (App. J); must divide d")] = 1,
    ):
        """U: (d, n) fixed node embedding; L: cascade layers; node_logit_scale: init of the learnable
        readout-softmax scale (spec U9), None for none. These three come from ``Reachability.model_inputs``."""
        super().__init__()
        d, n = U.shape
        if d % heads:
            raise ValueError(f"cascade: heads = {heads} must divide d = {d}")
        self.heads = heads
        self.L, self.d, self.n = L, d, n
        self.ln, self.residual, self.tie = ln, residual, tie_layers
        self.register_buffer("U", U.clone())  # (d, n), fixed (not trained)
        count = 1 if tie_layers else self.L
        self.layers = nn.ModuleList(CascadeLayer(self.d, d_mlp, mlp, qk_init_std) for _ in range(count))
        # the task's optional learnable readout-softmax scale is a parameter, so it lives here
        self.logit_scale = nn.Parameter(torch.tensor(float(node_logit_scale))) if node_logit_scale is not None else None

    def layer(self, c: int) -> CascadeLayer:
        return self.layers[0 if self.tie else c]

    def attention_maps(self, c: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_QK, W_OV) of the layer applied at step c, each (d, d) (capabilities.LayerwiseEdgeAttention)."""
        lay = self.layer(c)
        return lay.w_qk(), lay.w_ov()

    def layer_parameters(self) -> list[list[nn.Parameter]]:
        """The parameters of each distinct layer, in order (one list when the layers are tied)."""
        return [list(lay.parameters()) for lay in self.layers]

    def forward(self, x, internals: bool = False) -> dict:
        """x = (adj (B, n, n), root (B,)). Returns {"z": (B, L+1, d)} (z_0 = u_r; unnormalised under NoLN),
        "logit_scale" () when the task asks for a learnable readout scale;
        with ``internals`` also per layer "P" (B, L, n) source attention mass (averaged over heads), "pre"
        (B, L, d) = ã,
        "post" (B, L, d) = ã + h (before LN)."""
        adj, root = x
        U = self.U.to(adj.dtype)
        z = U.T[root]  # (B, d)
        zs, Ps, pres, posts = [z], [], [], []
        scale = 1.0 / math.sqrt(self.d)
        for c in range(self.L):
            lay = self.layer(c)
            keys = lay.k(U.T)  # (n, d): W_K u_s
            if self.heads == 1:
                P, y = edge_attention(lay.q(z), adj, keys, scale)
                o = lay.o(lay.v(y @ U.T))
            else:
                Ph, heads_out = multihead_edge_attention(lay.q(z), adj, keys, lay.v(U.T), self.heads)
                P, o = Ph.mean(1), lay.o(heads_out)  # diagnostics read the head-averaged source mass
            a = z + o if self.residual else o
            post = a + lay.mlp(a) if lay.mlp is not None else a
            z = post / post.norm(dim=-1, keepdim=True).clamp(min=EPS) if self.ln else post
            zs.append(z)
            if internals:
                Ps.append(P), pres.append(a), posts.append(post)
        out = {"z": torch.stack(zs, 1)}
        if self.logit_scale is not None:
            out["logit_scale"] = self.logit_scale
        if internals:
            out.update(P=torch.stack(Ps, 1), pre=torch.stack(pres, 1), post=torch.stack(posts, 1))
        return out


def params_per_layer(d: int, d_mlp: int) -> int:
    """4 d^2 (Q, K, V, O, no bias) + 2 d d_mlp + d_mlp + d (MLP with biases): 49,472 at d = 64, d_mlp = 256."""
    return 4 * d * d + 2 * d * d_mlp + d_mlp + d
