"""Diffuse MQAR (sessa spec §3.2): layout, near-miss distractors that never equal a real key (read back from
the token stream, in a setting where raw draws clash often), queries answered by the memory, lags as
defined and controlled (train within the train range, test reaching 4x it), the per-lag-bin token accuracy,
the cached test split and evaluate with a tiny LM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqmix.models.lm import DecoderLM
from seqmix.tasks import diffuse_mqar
from seqmix.tasks.diffuse_mqar import DiffuseMQAR, example
from seqmix.tasks.diffuse_mqar_data import (
    BOS,
    IGNORE,
    MEM,
    N_SPECIAL,
    NOISE,
    PAD,
    QRY,
    MqarLayout,
    accuracy_report,
    lag_hits,
    make_example,
)

# tiny alphabet: random 2-token tuples hit one of the 6 real keys often, so the rejection is exercised
CLASHY = MqarLayout(
    key_len=2, value_len=1, n_kv=6, n_queries=4, key_vocab=7, value_vocab=9, p_near=0.5, noise_min=30, noise_max=60
)


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    diffuse_mqar._split.cache_clear()


def _parse(layout: MqarLayout, tokens: np.ndarray):
    """Memory keys/values, noise slots and query keys/values read back from the token stream."""
    P, Lk = layout.pair, layout.key_len
    mem = tokens[2 : 2 + layout.n_kv * P].reshape(layout.n_kv, P)
    q_at = int(np.flatnonzero(tokens == QRY)[0])
    noise = tokens[3 + layout.n_kv * P : q_at]
    slots = noise[: len(noise) // P * P].reshape(-1, P)
    queries = tokens[q_at + 1 :].reshape(layout.n_queries, P)
    return mem[:, :Lk], mem[:, Lk:], slots[:, :Lk], queries[:, :Lk], queries[:, Lk:]


def test_layout_markers_and_lengths():
    rng = np.random.default_rng(0)
    for _ in range(20):
        e = make_example(CLASHY, rng, "train")
        t = e["tokens"]
        noise = int(np.flatnonzero(t == QRY)[0]) - 3 - CLASHY.n_kv * CLASHY.pair
        assert t[0] == BOS and t[1] == MEM and t[2 + CLASHY.n_kv * CLASHY.pair] == NOISE
        assert CLASHY.noise_min <= noise <= CLASHY.noise_max and len(t) == CLASHY.length(noise)
        assert (t >= N_SPECIAL).sum() == len(t) - 4 and t.max() < CLASHY.vocab_size


def test_distractors_never_equal_a_real_key_and_near_misses_share_a_prefix():
    rng = np.random.default_rng(1)
    raw_clashes = near_total = slots_total = 0
    for _ in range(300):
        e = make_example(CLASHY, rng, "train")
        keys, _, noise_keys, _, _ = _parse(CLASHY, e["tokens"])
        real = {tuple(k) for k in keys}
        assert len(real) == CLASHY.n_kv, "memory keys are distinct"
        assert not any(tuple(k) in real for k in noise_keys), "a distractor equals a real key"
        np.testing.assert_array_equal(noise_keys, e["noise_keys"] + N_SPECIAL)
        prefixes = {k[:-1] for k in real}
        assert all(tuple(k[:-1]) in prefixes for k in noise_keys[e["near"]])
        near_total += int(e["near"].sum())
        slots_total += len(e["near"])
        raw = np.random.default_rng(2).integers(0, CLASHY.key_vocab, (len(noise_keys), 2)) + N_SPECIAL
        raw_clashes += sum(tuple(k) in real for k in raw)
    assert raw_clashes > 50, "the setting must make raw draws clash for this test to bite"
    assert abs(near_total / slots_total - CLASHY.p_near) < 0.05


def test_queries_are_memory_keys_and_targets_their_values():
    layout = MqarLayout(
        key_len=3, value_len=2, n_kv=8, n_queries=5, key_vocab=20, value_vocab=30, noise_min=10, noise_max=20
    )
    rng = np.random.default_rng(3)
    for _ in range(20):
        e = make_example(layout, rng, "train")
        keys, values, _, qk, qv = _parse(layout, e["tokens"])
        lookup = {tuple(k): tuple(v) for k, v in zip(keys, values)}
        assert len({tuple(k) for k in qk}) == 5 and all(lookup[tuple(k)] == tuple(v) for k, v in zip(qk, qv))
        mask = e["targets"] != IGNORE
        assert mask.sum() == 5 * 2
        pos = np.flatnonzero(mask)
        np.testing.assert_array_equal(e["targets"][pos], e["tokens"][pos + 1])  # next token, teacher-forced
        assert (e["lags"][~mask] == 0).all()


def test_lags_are_the_value_distance_and_respect_train_and_test_ranges():
    layout = MqarLayout(
        key_len=2, value_len=1, n_kv=4, n_queries=4, key_vocab=16, value_vocab=16, noise_min=8, noise_max=24
    )
    train_max = layout.max_lag(24)
    assert layout.max_lag(layout.test_noise_max) == 4 * train_max
    assert layout.lag_bin_edges() == [0, train_max, 2 * train_max, 3 * train_max, 4 * train_max]
    rng = np.random.default_rng(4)
    lags = {"train": [], "test": []}
    for split in lags:
        for _ in range(400):
            e = make_example(layout, rng, split)
            t, keys = e["tokens"], _parse(layout, e["tokens"])[0]
            for p in np.flatnonzero(e["targets"] != IGNORE):
                qkey = tuple(t[p - 1 : p + 1])
                mem_value = 2 + [tuple(k) for k in keys].index(qkey) * layout.pair + layout.key_len
                assert e["lags"][p] == p + 1 - mem_value
                lags[split].append(int(e["lags"][p]))
    assert layout.min_lag(8) <= min(lags["train"]) and max(lags["train"]) <= train_max
    assert max(lags["test"]) <= 4 * train_max and max(lags["test"]) > 3 * train_max
    assert min(lags["test"]) < train_max  # the test split covers the train range too


def test_lag_bin_accuracy_on_hand_built_logits():
    targets = torch.tensor([[IGNORE, 5, IGNORE, 6], [7, IGNORE, 8, IGNORE]])
    lags = torch.tensor([[0, 10, 0, 25], [40, 0, 100, 0]])
    logits = torch.zeros(2, 4, 9)
    logits[0, 1, 5] = logits[0, 3, 0] = logits[1, 0, 7] = logits[1, 2, 8] = 1.0  # one miss, at lag 25
    edges = [0, 20, 40, 60, 80]
    hits, counts = lag_hits(logits, targets, lags, edges)
    assert hits.tolist() == [1, 1, 0, 1] and counts.tolist() == [1, 2, 0, 1]  # lag 100 > 80: the last bin
    rep = accuracy_report(hits, counts, edges)
    assert rep["token_acc"] == 0.75 and rep["token_acc_lag_20_40"] == 0.5 and np.isnan(rep["token_acc_lag_40_60"])


def test_task_batches_test_set_cache_and_evaluate(tmp_path, monkeypatch):
    kw = dict(
        key_len=2,
        n_kv=4,
        n_queries=4,
        key_vocab=16,
        value_vocab=16,
        noise_min=4,
        noise_max=12,
        train_size=64,
        val_size=8,
        test_size=12,
        eval_batch=5,
        cache_dir=str(tmp_path),
    )
    task = DiffuseMQAR(**kw)
    x, y = task.batch(0, 3, 0, 6)
    assert x.shape == y.shape == (6, task.train_len) and torch.equal(task.batch(0, 3, 0, 6)[0], x)
    assert ((y != IGNORE).sum(1) == 4).all() and (y[x == PAD] == IGNORE).all()
    ex = example(task.layout, 0, "train", 5)["tokens"]
    assert any(torch.equal(torch.as_tensor(ex), row[: len(ex)]) for s in range(16) for row in task.batch(0, s, 0, 4)[0])
    X, Y = task.test_set()
    assert X.shape[1] <= task.seq_len == task.layout.length(task.layout.test_noise_max) and len(X) == 12
    assert len(list((tmp_path / "diffuse_mqar").glob("*.pt"))) == 1
    diffuse_mqar._split.cache_clear()
    monkeypatch.setattr(diffuse_mqar, "example", lambda *a: (_ for _ in ()).throw(AssertionError("rebuilt")))
    assert torch.equal(DiffuseMQAR(**kw).test_set()[0], X)  # read back from the checksummed cache
    monkeypatch.undo()
    torch.manual_seed(0)
    model = DecoderLM(**task.model_inputs(), d_model=8, n_layers=1, mixer={"name": "sessa", "heads": 2}, block="gated")
    m = task.evaluate(model)
    assert 0.0 <= m["token_acc"] <= 1.0 and sum(v for k, v in m.items() if k.startswith("count_")) == 12 * 4
    assert m["chance"] == 1 / 16 and task.data_source.startswith("Diffuse MQAR")
    assert task.loss(model(x), y).isfinite()
