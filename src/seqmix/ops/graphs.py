"""Directed graphs as dense adjacency tensors: Erdős–Rényi sampling, reachable sets, and the source-node
softmax of attention over a graph's edges.

Pure torch on tensors and sizes (no task, no model): the reachability task, the cascade transformer and the
superposition theory all build on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class GraphBatch:
    """adj: (B, n, n) float {0,1}, adj[b, s, t] = 1 iff edge s -> t; root: (B,) long;
    V: (B, L+1, n) bool, V[:, c] = reachable set of slot c; lexmin: (B,) long (min V_L)."""

    adj: torch.Tensor
    root: torch.Tensor
    V: torch.Tensor
    lexmin: torch.Tensor

    def __len__(self) -> int:
        return self.adj.shape[0]


def reachable_sets(adj: torch.Tensor, root: torch.Tensor, L: int, semantics: str = "cumulative") -> torch.Tensor:
    """(B, L+1, n) bool: cumulative V_0..V_L (or, with ``exact``, {r} then the nodes first reached at hop c)."""
    B, n, _ = adj.shape
    cur = torch.zeros(B, n, dtype=torch.bool)
    cur[torch.arange(B), root] = True
    out = [cur]
    for _ in range(L):
        nxt = cur | (torch.bmm(cur.unsqueeze(1).to(adj.dtype), adj).squeeze(1) > 0)
        out.append(nxt)
        cur = nxt
    V = torch.stack(out, 1)
    if semantics == "exact":
        first = V.clone()
        first[:, 1:] = V[:, 1:] & ~V[:, :-1]
        return first
    if semantics != "cumulative":
        raise ValueError(f"unknown set_semantics {semantics!r}")
    return V


def lexmin(mask: torch.Tensor) -> torch.Tensor:
    """Smallest index of each row's True entries (every row has one: the root)."""
    n = mask.shape[-1]
    score = mask.to(torch.int64) * (n - torch.arange(n))
    return score.argmax(-1)


def sample_graphs(
    g: torch.Generator, size: int, n: int, p: float, L: int, semantics: str = "cumulative", min_final_reach: int = 0
) -> GraphBatch:
    """``size`` instances of directed G(n, p) without self-loops, a uniform root, and the reachable sets.

    ``min_final_reach`` > 0 keeps only instances with k_L >= min_final_reach (drawing more from the same
    generator until ``size`` are kept)."""
    adjs, roots, Vs = [], [], []
    kept = 0
    while kept < size:
        want = size - kept if not min_final_reach else 2 * (size - kept) + 8
        adj = (torch.rand(want, n, n, generator=g) < p).float()
        adj.diagonal(dim1=1, dim2=2).zero_()
        root = torch.randint(0, n, (want,), generator=g)
        V = reachable_sets(adj, root, L, "cumulative")
        if min_final_reach:
            keep = V[:, L].sum(-1) >= min_final_reach
            adj, root, V = adj[keep], root[keep], V[keep]
        adjs.append(adj), roots.append(root), Vs.append(V)
        kept += adj.shape[0]
    adj, root, V = torch.cat(adjs)[:size], torch.cat(roots)[:size], torch.cat(Vs)[:size]
    lm = lexmin(V[:, L])
    if semantics != "cumulative":
        V = reachable_sets(adj, root, L, semantics)
    return GraphBatch(adj, root, V, lm)


def source_softmax(logits: torch.Tensor, outdeg: torch.Tensor) -> torch.Tensor:
    """Softmax over an edge set whose keys depend only on the source: a softmax over source nodes with
    log-weight logit_s + log outdeg_s. logits (..., n); outdeg broadcastable to it. Sources without out-edges
    get 0; a graph without edges gets all-zero mass (and no NaN in the backward pass)."""
    logits = logits + torch.log(outdeg.clamp(min=1))
    has = outdeg > 0
    logits = logits.masked_fill(~has, float("-inf"))
    any_edge = has.any(-1, keepdim=True)
    logits = torch.where(any_edge, logits, torch.zeros_like(logits))
    return torch.softmax(logits, -1) * any_edge.to(logits.dtype)
