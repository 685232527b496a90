"""The cascade transformer and the supervision losses of the frontier-superposition paper."""

from __future__ import annotations

import math

import pytest
import torch

from seqmix.models.cascade import CascadeTransformer, edge_attention, params_per_layer
from seqmix.ops.graphs import sample_graphs
from seqmix.rng import counter_generator
from seqmix.tasks.reachability import Reachability
from seqmix.tasks.reachability_losses import ideal_targets, supervision_loss
from seqmix.training.loop import build, train


def test_paper_scale_parameter_count():
    task = Reachability(n=50, p=0.04, L=3, d=64)
    torch.manual_seed(0)
    m = CascadeTransformer(**task.model_inputs(), d_mlp=256)
    per_layer = [sum(p.numel() for p in lay.parameters()) for lay in m.layers]
    assert per_layer == [49_472] * 3 == [params_per_layer(64, 256)] * 3
    assert sum(p.numel() for p in m.parameters()) == 148_416  # U is a buffer, not a parameter
    assert not any(n == "U" for n, _ in m.named_parameters())
    tied = CascadeTransformer(**task.model_inputs(), tie_layers=True)
    assert sum(p.numel() for p in tied.parameters()) == 49_472


def test_edge_attention_equals_softmax_over_edges():
    """The adjacency-matrix form is exact: per-edge softmax of q·k_{s_i}/sqrt(d) summed onto targets."""
    g = counter_generator("edge-attn", 0)
    b = sample_graphs(g, 6, 12, 0.2, 2)
    d = 8
    q = torch.randn(6, d, generator=g, dtype=torch.float64)
    keys = torch.randn(12, d, generator=g, dtype=torch.float64)
    P, y = edge_attention(q, b.adj.double(), keys, 1 / math.sqrt(d))
    for i in range(6):
        edges = torch.nonzero(b.adj[i])
        logits = torch.stack([q[i] @ keys[s] / math.sqrt(d) for s, _ in edges])
        a = torch.softmax(logits, 0)
        want = torch.zeros(12, dtype=torch.float64).index_add_(0, edges[:, 1], a)
        assert torch.allclose(y[i], want, atol=1e-12)
        src_mass = torch.zeros(12, dtype=torch.float64).index_add_(0, edges[:, 0], a)
        assert torch.allclose(P[i], src_mass, atol=1e-12)


def test_empty_graph_gives_no_nan():
    q, keys = torch.randn(2, 4), torch.randn(5, 4)
    P, y = edge_attention(q, torch.zeros(2, 5, 5), keys, 0.5)
    assert torch.isfinite(P).all() and (P == 0).all() and (y == 0).all()


@pytest.mark.parametrize("ln,res", [(True, True), (False, True), (True, False), (False, False)])
def test_ablations_forward(ln, res):
    task = Reachability(n=20, p=0.1, L=3, d=24)
    torch.manual_seed(0)
    m = CascadeTransformer(**task.model_inputs(), d_mlp=32, ln=ln, residual=res)
    (adj, root), b = task.batch(0, 0, 0, 8)
    out = m((adj, root), internals=True)
    z = out["z"]
    assert z.shape == (8, 4, 24) and torch.isfinite(z).all()
    assert torch.allclose(z[:, 0], task.U.T[root])
    norms = z[:, 1:].norm(dim=-1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5) == ln
    # the residual: pre-MLP ã = z_c + o with, ã = o without
    lay = m.layer(0)
    o = out["pre"][:, 0] - (z[:, 0] if res else 0)
    assert torch.allclose(out["post"][:, 0], out["pre"][:, 0] + lay.mlp(out["pre"][:, 0]), atol=1e-6)
    assert o.shape == (8, 24)


def test_losses():
    task = Reachability(n=30, p=0.07, L=3, d=32)
    _, b = task.batch(0, 0, 0, 16)
    U = task.U
    zstar = ideal_targets(b.V, U)
    assert supervision_loss(zstar, b, U, "sup").abs() < 1e-5
    assert supervision_loss(zstar, b, U, "e2e_cos").abs() < 1e-5
    z = torch.randn(16, 4, 32)
    ce = torch.nn.functional.cross_entropy(z[:, 3] @ U, b.lexmin)
    assert torch.allclose(supervision_loss(z, b, U, "e2e_ce"), ce)
    # node: -(1/k) Σ_{v ∈ V_c} log softmax(U^T z_c)_v summed over slots 1..3
    logp = torch.log_softmax(z @ U, -1)
    want = sum((-(logp[:, c] * b.V[:, c]).sum(-1) / b.V[:, c].sum(-1)).mean() for c in (1, 2, 3))
    assert torch.allclose(supervision_loss(z, b, U, "node"), want, atol=1e-5)
    cos = torch.nn.functional.cosine_similarity(z, zstar, dim=-1)
    assert torch.allclose(supervision_loss(z, b, U, "sup"), (1 - cos[:, 1:]).sum(-1).mean(), atol=1e-5)
    assert torch.allclose(supervision_loss(z, b, U, "sup", "intermediate"), (1 - cos[:, 1:3]).sum(-1).mean(), atol=1e-5)
    assert torch.allclose(supervision_loss(z, b, U, "composite_sup"), ce + (1 - cos[:, 1:3]).sum(-1).mean(), atol=1e-5)
    with pytest.raises(ValueError):
        Reachability(n=30, p=0.07, L=3, d=32, loss="nope")


CFG = {
    "seed": 42,
    "task": {"name": "reachability", "n": 20, "p": 0.1, "L": 3, "d": 24, "loss": "sup", "eval_size": 64},
    "model": {"name": "cascade", "d_mlp": 32},
    "train": {"optimizer": "adam", "lr": 1e-3, "steps": 20, "batch": 16, "checkpoint_every": 10, "log_every": 5},
    "eval": {"every": 10},
}


def test_diagnostics_logged_per_epoch_and_resume_is_exact(tmp_path):
    full = train(CFG, tmp_path / "a", "h")
    diag = full["history"]["diagnostics"]
    assert diag["step"] == [0, 10, 20]
    for key in (
        "cos_z1",
        "cos_z3",
        "sel_front_l0",
        "sel_src_l2",
        "alpha_eff_med_l0",
        "cos_theory_l0",
        "r_z1",
        "A_l0",
        "gamma_l0",
        "alpha_l0",
        "qk_r_signed_l0",
        "grad_norm_l2",
        "acc_new_frontier",
        "acc_lexmin",
        "acc_two_candidate",
    ):
        assert len(diag[key]) == 3, key
    # a run stopped after the first checkpoint and resumed ends identical, diagnostics included
    train(CFG, tmp_path / "b", "h", stop_after=10)
    resumed = train(CFG, tmp_path / "b", "h")
    assert resumed["resumed_from"] == 10
    assert resumed["history"] == full["history"]
    a = torch.load(tmp_path / "a" / "model.pt", weights_only=True)
    b = torch.load(tmp_path / "b" / "model.pt", weights_only=True)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_diagnostics_at_the_ideal_point():
    """A model whose slots are exactly IDEAL has cos = 1, r <= 1 and α_eff = α*_c per instance."""
    from seqmix.tasks.reachability_metrics import lemma18_cos, sn_projection

    k = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    K = 2 * k
    assert torch.allclose(lemma18_cos((K - k) / k.sqrt(), k, K), torch.ones(3, dtype=torch.float64))
    n = 50
    M = 3.0 * (torch.eye(n, dtype=torch.float64) - torch.ones(n, n, dtype=torch.float64) / n)
    s = sn_projection(M)
    assert abs(s["r_abs"] - 49) < 1e-6 and abs(s["r_signed"] - 49) < 1e-6 and abs(s["r_frob"] - 7) < 1e-6
    assert abs(s["mu_over_gamma"] + 1 / n) < 1e-9 and s["offmanifold"] < 1e-9
    task, model = build(CFG)
    d = task.evaluate(model)
    assert 0 <= d["sel_front_l0"] <= d["sel_src_l0"] + 1e-9 <= 1 + 1e-6
    assert abs(d["sel_front_l0"] - d["sel_src_l0"]) < 1e-9, "at layer 0 every edge leaving V_0 = {r} is a frontier edge"


def test_node_logit_scale_is_a_learnable_readout_temperature():
    """Spec U9: the option adds one parameter (init = the configured value) that scales U^T z in the node and
    cross-entropy losses; at init 1 the loss equals the §3 loss without a scale, and it receives gradient."""
    g = counter_generator("logit-scale", 0)
    b = sample_graphs(g, 16, 20, 0.1, 3)
    plain = Reachability(n=20, p=0.1, L=3, d=32, loss="node")
    scaled = Reachability(n=20, p=0.1, L=3, d=32, loss="node", node_logit_scale=1.0)
    torch.manual_seed(0)
    m_plain = CascadeTransformer(**plain.model_inputs(), d_mlp=16)
    torch.manual_seed(0)
    m_scaled = CascadeTransformer(**scaled.model_inputs(), d_mlp=16)
    assert m_plain.logit_scale is None and float(m_scaled.logit_scale) == 1.0
    x = (b.adj, b.root)
    out_p, out_s = m_plain(x), m_scaled(x)
    assert torch.allclose(plain.loss(out_p, b), scaled.loss(out_s, b))
    scaled.loss(out_s, b).backward()
    assert m_scaled.logit_scale.grad is not None and m_scaled.logit_scale.grad.abs() > 0
    # a larger scale sharpens the readout: the node loss changes with it, the cosine loss does not
    with torch.no_grad():
        m_scaled.logit_scale.fill_(4.0)
    assert not torch.allclose(plain.loss(out_p, b), scaled.loss(m_scaled(x), b))
    sup = Reachability(n=20, p=0.1, L=3, d=32, loss="sup", node_logit_scale=4.0)
    assert torch.allclose(sup.loss(m_scaled(x), b), Reachability(n=20, p=0.1, L=3, d=32).loss(m_plain(x), b), atol=1e-6)
    with pytest.raises(ValueError):
        Reachability(n=20, p=0.1, L=3, loss="nonsense")


def test_multihead_attention_with_one_head_is_the_single_head_path_and_heads_are_independent():
    """App. J heads: with H = 1 the multi-head form equals the single-head adjacency form; with H = 2 each head
    is the single-head form on its d/2 slice (an independent per-edge oracle for each head)."""
    from seqmix.models.cascade import multihead_edge_attention

    g = counter_generator("mh-attn", 0)
    b = sample_graphs(g, 5, 12, 0.2, 2)
    torch.manual_seed(0)
    d = 8
    q, keys, values = torch.randn(5, d), torch.randn(12, d), torch.randn(12, d)
    P1, y1 = edge_attention(q, b.adj, keys, 1 / math.sqrt(d))
    Ph, out = multihead_edge_attention(q, b.adj, keys, values, 1)
    assert torch.allclose(Ph[:, 0], P1, atol=1e-6) and torch.allclose(out, y1 @ values, atol=1e-5)
    Ph, out = multihead_edge_attention(q, b.adj, keys, values, 2)
    for h in range(2):
        sl = slice(4 * h, 4 * h + 4)
        Ps, ys = edge_attention(q[:, sl], b.adj, keys[:, sl], 1 / 2.0)
        assert torch.allclose(Ph[:, h], Ps, atol=1e-6)
        assert torch.allclose(out[:, sl], ys @ values[:, sl], atol=1e-5)


def test_multihead_model_trains_and_rejects_bad_heads():
    task = Reachability(n=16, p=0.12, L=2, d=16)
    with pytest.raises(ValueError, match="must divide"):
        CascadeTransformer(**task.model_inputs(), d_mlp=8, heads=3)
    torch.manual_seed(0)
    m = CascadeTransformer(**task.model_inputs(), d_mlp=8, heads=4)
    assert sum(p.numel() for p in m.parameters()) == sum(
        p.numel() for p in CascadeTransformer(**task.model_inputs(), d_mlp=8).parameters()
    )
    x, y = task.batch(0, 0, 0, 32)
    out = m(x, internals=True)
    assert out["P"].shape == (32, 2, 16) and torch.allclose(out["P"].sum(-1), torch.ones(32, 2), atol=1e-5)
    task.loss(out, y).backward()
    assert all(p.grad is not None for p in m.parameters())
