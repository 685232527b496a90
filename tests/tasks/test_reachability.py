"""The reachability generator of the frontier-superposition paper: determinism, sets, targets, the spec's
Monte-Carlo table of set sizes at n = 50, p = 0.04, and the evaluation-set cache."""

from __future__ import annotations

import torch

from seqmix.ops.graphs import reachable_sets, sample_graphs
from seqmix.rng import counter_generator
from seqmix.tasks.reachability import Reachability, eval_set, fixed_embedding, set_size_table
from seqmix.tasks.reachability_losses import ideal_targets


def _bfs(adj: torch.Tensor, root: int, hops: int) -> set[int]:
    seen, frontier = {root}, {root}
    for _ in range(hops):
        frontier = {int(t) for s in frontier for t in torch.nonzero(adj[s]).flatten()} - seen
        seen |= frontier
    return seen


def test_batches_are_a_pure_function_of_seed_step_rank():
    task = Reachability(n=50, p=0.04, L=3)
    (a1, r1), b1 = task.batch(42, 7, 0, 16)
    task.batch(42, 3, 0, 16)  # drawing another batch in between changes nothing
    (a2, r2), b2 = task.batch(42, 7, 0, 16)
    assert torch.equal(a1, a2) and torch.equal(r1, r2) and torch.equal(b1.V, b2.V)
    (a3, _), _ = task.batch(42, 8, 0, 16)
    (a4, _), _ = task.batch(42, 7, 1, 16)
    assert not torch.equal(a1, a3) and not torch.equal(a1, a4)


def test_graphs_sets_and_lexmin():
    b = sample_graphs(counter_generator("t", 0), 64, 20, 0.1, 3)
    assert b.adj.diagonal(dim1=1, dim2=2).abs().sum() == 0, "no self-loops"
    assert set(b.adj.unique().tolist()) <= {0.0, 1.0}
    for i in range(64):
        for c in range(4):
            want = _bfs(b.adj[i], int(b.root[i]), c)
            assert set(torch.nonzero(b.V[i, c]).flatten().tolist()) == want
        assert int(b.lexmin[i]) == min(_bfs(b.adj[i], int(b.root[i]), 3))
    # cumulative sets are nested and contain the root
    assert (b.V[:, :-1] <= b.V[:, 1:]).all() and b.V[torch.arange(64), :, b.root].all()
    exact = reachable_sets(b.adj, b.root, 3, "exact")
    assert (exact[:, 1:] == (b.V[:, 1:] & ~b.V[:, :-1])).all()


def test_min_final_reach_filters():
    b = sample_graphs(counter_generator("t", 1), 32, 50, 0.04, 3, min_final_reach=4)
    assert len(b) == 32 and (b.V[:, 3].sum(-1) >= 4).all()


def test_embedding_and_ideal_targets_are_unit():
    U = fixed_embedding(50, 64, 0)
    assert torch.allclose(U.T @ U, torch.eye(50), atol=1e-5)
    assert torch.equal(U, fixed_embedding(50, 64, 0)) and not torch.equal(U, fixed_embedding(50, 64, 1))
    b = sample_graphs(counter_generator("t", 2), 8, 50, 0.04, 3)
    z = ideal_targets(b.V, U)
    assert torch.allclose(z.norm(dim=-1), torch.ones(8, 4), atol=1e-5)
    G = fixed_embedding(50, 64, 0, "random_gaussian_normalised")
    assert torch.allclose(G.norm(dim=0), torch.ones(50, dtype=G.dtype), atol=1e-5)


def test_monte_carlo_table_of_the_spec():
    """Spec §2.1: cumulative sets at n = 50, p = 0.04 (20k samples): E[k_c] within 3%, P(m_f = 0) within
    0.015, E[sqrt(m_f/k_{c+1})] within 0.01, mean |E| = 98 within 1%."""
    rows = {r["c"]: r for r in set_size_table(50, 0.04, 4, 20000, seed=7)}
    for c, (ek, pm, sq) in enumerate(
        [
            (1.0, 0.133, 0.699),
            (2.974, 0.179, 0.592),
            (6.487, 0.198, 0.526),
            (11.639, 0.208, 0.459),
            (17.519, None, None),
        ]
    ):
        assert abs(rows[c]["E_k"] - ek) <= 0.03 * ek, (c, rows[c]["E_k"])
        if pm is not None:
            assert abs(rows[c]["P_mf0"] - pm) <= 0.015, (c, rows[c]["P_mf0"])
            assert abs(rows[c]["E_sqrt_mf_ratio"] - sq) <= 0.01, (c, rows[c]["E_sqrt_mf_ratio"])
    assert abs(rows["edges"]["E_k"] - 98) <= 0.98
    assert abs(rows[1]["sd_k"] - 1.37) < 0.1 and abs(rows[3]["sd_k"] - 7.74) < 0.4


def test_eval_set_is_shared_cached_and_rebuilt_when_corrupt(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQMIX_DATA_CACHE", str(tmp_path))
    eval_set.cache_clear()
    a = eval_set(50, 0.04, 3, 123, 64, "cumulative", 0)
    files = list(tmp_path.rglob("*.pt"))
    assert len(files) == 1
    eval_set.cache_clear()
    b = eval_set(50, 0.04, 3, 123, 64, "cumulative", 0)
    assert torch.equal(a.adj, b.adj) and torch.equal(a.V, b.V)
    files[0].write_bytes(b"corrupt")
    eval_set.cache_clear()
    c = eval_set(50, 0.04, 3, 123, 64, "cumulative", 0)
    assert torch.equal(a.adj, c.adj)
    eval_set.cache_clear()
    # every run with the same graph settings sees the same evaluation graphs
    t1 = Reachability(n=50, p=0.04, L=3, loss="sup", eval_size=32)
    t2 = Reachability(n=50, p=0.04, L=3, loss="node", eval_size=32)
    assert torch.equal(t1.test_set().adj, t2.test_set().adj)


def test_loss_option_names_match_the_losses():
    """The `loss` option's Literal (what the config schema allows) names exactly the implemented losses."""
    import typing

    from seqmix.tasks.reachability_losses import LOSSES, Loss

    assert typing.get_args(Loss) == LOSSES


def test_diagnostics_read_the_internals_in_eval_mode_without_gradients():
    """The internals forward is one step of the base Task's no-grad eval loop; only the grad-norm forward
    runs with gradients, in the mode the caller left the model in (restored afterwards)."""
    from seqmix.models import build_model
    from seqmix.tasks.reachability_metrics import cascade_diagnostics

    task = Reachability(**Reachability.example_options)
    torch.manual_seed(0)
    model = build_model(Reachability.example_model, task)
    calls = []
    model.register_forward_pre_hook(
        lambda m, args, kwargs: calls.append((m.training, torch.is_grad_enabled(), "internals" in kwargs)),
        with_kwargs=True,
    )
    model.train()
    cascade_diagnostics(task, model, task.test_set(), grad_norms=True)
    assert calls == [(False, False, True), (True, True, False)] and model.training
