"""SymbolSoup (sessa spec §3.1): the generator's statistics (length range and 2M + 13 token count, class
balance, every style present and visible in its blocks), determinism per seed, disjoint splits, the
checksummed cache (rebuilt with a warning when corrupted, placed under $SEQMIX_DATA_CACHE when set) and the
task (left padding, epoch sampling, evaluate with a tiny classifier)."""

from __future__ import annotations

import collections
import logging
import random

import pytest
import torch

from seqmix.models.classifier import SequenceClassifier
from seqmix.tasks import data_cache, symbolsoup
from seqmix.tasks.symbolsoup import SymbolSoup, build_dataset
from seqmix.tasks.symbolsoup_data import (
    LEFT_STYLES,
    LETTERS,
    NUM_CLASSES,
    PAD,
    RIGHT_STYLES,
    TOKEN_ID,
    generate,
    make_styles,
    make_text,
    stylized_block,
    tokenize,
)

SIZES = {"train": 200, "val": 40, "test": 40}


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    symbolsoup._dataset.cache_clear()


@pytest.fixture(scope="module")
def data():
    return generate(0, SIZES, 400, 600)


def _split_examples(d, split):
    off = d[f"{split}/offsets"]
    return [d[f"{split}/tokens"][off[i] : off[i + 1]].tolist() for i in range(len(off) - 1)]


def test_lengths_respect_the_range_and_equal_2m_plus_13(data):
    letters = {TOKEN_ID[c] for c in LETTERS}
    for split in SIZES:
        for ids in _split_examples(data, split):
            assert 400 <= len(ids) <= 600
            assert len(ids) == 2 * sum(t in letters for t in ids) + 13
            assert ids[0] == TOKEN_ID["<bos>"] and ids[-1] == TOKEN_ID["<label>"]
            assert [t for t in ids if t < TOKEN_ID["a"]].count(TOKEN_ID["<sep1>"]) == 2


def test_every_split_is_class_balanced_with_all_20_classes(data):
    for split, n in SIZES.items():
        counts = collections.Counter(data[f"{split}/labels"].tolist())
        assert sorted(counts) == list(range(NUM_CLASSES)) and set(counts.values()) == {n // NUM_CLASSES}
    with pytest.raises(ValueError, match="multiple of 20"):
        generate(0, {"train": 30, "val": 20, "test": 20}, 400, 600)


def test_styles_are_fixed_distinct_and_shape_their_blocks():
    """Left/right tables do not depend on the data seed; each style's primaries dominate its blocks, and
    its secondaries come next (weights 3 > 2 > 1, bigrams and motifs on top)."""
    assert [s.primaries for s in make_styles(123, 4)] == [s.primaries for s in LEFT_STYLES]
    styles = LEFT_STYLES + RIGHT_STYLES
    assert len({s.primaries + s.secondaries for s in styles}) == 9
    rng = random.Random(1)
    for style in styles:
        freq = collections.Counter(stylized_block(rng, style, 3000))
        prim = sum(freq[c] for c in style.primaries) / 4
        sec = sum(freq[c] for c in style.secondaries) / 4
        rest = sum(freq[c] for c in LETTERS if c not in style.primaries + style.secondaries) / 8
        assert prim > sec > rest, (style.primaries, prim, sec, rest)


def _stylized_letters(rng, k, n=30):
    text = "".join(make_text(rng, k, 400, 600) for _ in range(n))
    return "".join(part.split("<sep2>")[0] for part in text.split("<sep1>")[1:])


def test_label_is_the_style_pair():
    """Class k's stylized blocks carry left style k // 5 and right style k % 5: the union of those two
    styles' primaries is more frequent there than in the blocks of a class that shares neither style."""
    rng = random.Random(3)
    for k in (0, 7, 19):
        j = ((k // 5 + 1) % 4) * 5 + (k % 5 + 1) % 5
        prim = set(LEFT_STYLES[k // 5].primaries) | set(RIGHT_STYLES[k % 5].primaries)
        share = {
            c: sum(ch in prim for ch in b) / sum(ch in LETTERS for ch in b)
            for c, b in ((k, _stylized_letters(rng, k)), (j, _stylized_letters(rng, j)))
        }
        assert share[k] > share[j] + 0.03, (k, j, share)


def test_determinism_per_seed(data):
    again = generate(0, SIZES, 400, 600)
    assert all(torch.equal(data[k], again[k]) for k in data)
    other = generate(1, SIZES, 400, 600)
    assert not torch.equal(data["train/tokens"][:600], other["train/tokens"][:600])


def test_splits_are_disjoint_even_where_raw_draws_repeat():
    """At M = 5 letters raw draws repeat (checked here), yet no example appears twice in or across splits."""
    rng = random.Random(0)
    raw = [make_text(rng, 0, 23, 23) for _ in range(3000)]
    assert len(set(raw)) < len(raw), "the setting must produce raw duplicates for this test to bite"
    d = generate(0, {"train": 2000, "val": 500, "test": 500}, 23, 23)
    seen = [tuple(x) for s in ("train", "val", "test") for x in _split_examples(d, s)]
    assert len(seen) == len(set(seen)) == 3000


def test_cache_roundtrip_corruption_and_env_override(tmp_path, monkeypatch, caplog):
    first = build_dataset(0, SIZES, 40, 60, cache_dir=tmp_path)
    files = list((tmp_path / "symbolsoup").glob("*.pt"))
    assert len(files) == 1

    def boom(*a, **k):
        raise AssertionError("regenerated although the cache is valid")

    monkeypatch.setattr(symbolsoup, "generate", boom)
    assert torch.equal(
        build_dataset(0, SIZES, 40, 60, cache_dir=tmp_path).arrays["train/tokens"], first.arrays["train/tokens"]
    )
    stored = torch.load(files[0], weights_only=True)
    stored["data"]["train/labels"][0] = (stored["data"]["train/labels"][0] + 1) % NUM_CLASSES
    torch.save(stored, files[0])
    monkeypatch.undo()
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    with caplog.at_level(logging.WARNING, logger="seqmix.data"):
        rebuilt = build_dataset(0, SIZES, 40, 60, cache_dir=tmp_path)
    assert "checksum mismatch" in caplog.text
    assert torch.equal(rebuilt.arrays["train/labels"], first.arrays["train/labels"])
    assert data_cache.checksum(torch.load(files[0], weights_only=True)["data"]) == data_cache.checksum(first.arrays)
    files[0].write_bytes(b"truncated")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="seqmix.data"):
        build_dataset(0, SIZES, 40, 60, cache_dir=tmp_path)
    assert "unreadable" in caplog.text
    env = tmp_path / "env"
    monkeypatch.setenv("SEQMIX_DATA_CACHE", str(env))
    build_dataset(0, SIZES, 40, 60, cache_dir=tmp_path / "ignored")
    assert len(list((env / "symbolsoup").glob("*.pt"))) == 1 and not (tmp_path / "ignored").exists()


def test_task_batches_left_padded_and_epoch_sampled(tmp_path):
    task = SymbolSoup(train_size=40, val_size=20, test_size=20, min_tokens=40, max_tokens=60, cache_dir=tmp_path)
    x, y = task.batch(0, 0, 0, 8)
    assert x.shape == (8, 60) and y.shape == (8,) and x.dtype == torch.int64
    assert (x[:, -1] == TOKEN_ID["<label>"]).all() and (x[:, 0] == PAD).any()
    lengths = (x != PAD).sum(1)
    assert all((x[i, : 60 - n] == PAD).all() for i, n in enumerate(lengths.tolist()))
    assert torch.equal(task.batch(0, 0, 0, 8)[0], x) and not torch.equal(task.batch(1, 0, 0, 8)[0], x)
    # one epoch of 40 examples in 5 batches of 8 sees every example once
    rows = torch.cat([task.batch(0, s, 0, 8)[0] for s in range(5)])
    want, _ = task.split_set("train")
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, want.tolist()))
    assert task.data_source.startswith("SymbolSoup") and task.model_inputs() == {
        "vocab_size": 26,
        "d_out": 20,
        "seq_len": 60,
    }
    assert tokenize("<bos>\na b\n<sep> <label>") == [1, 25, 8, 24, 9, 25, 4, 24, 5]


class _Constant(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k, self.w = k, torch.nn.Parameter(torch.zeros(()))

    def forward(self, x):
        out = torch.zeros(len(x), NUM_CLASSES)
        out[:, self.k] = 1.0
        return out + self.w


def test_evaluate_with_a_tiny_classifier_and_a_constant_predictor(tmp_path):
    task = SymbolSoup(train_size=40, val_size=20, test_size=40, min_tokens=23, max_tokens=33, cache_dir=tmp_path)
    assert task.evaluate(_Constant(3))["accuracy"] == pytest.approx(0.05)  # balanced: 2 of 40
    torch.manual_seed(0)
    model = SequenceClassifier(
        **task.model_inputs(), d_model=8, n_layers=1, mixer={"name": "sessa", "heads": 2}, block="gated", pooling="last"
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = task.batch(0, 0, 0, 8)
    first = float(task.loss(model(x), y).detach())
    for _ in range(5):
        opt.zero_grad()
        task.loss(model(x), y).backward()
        opt.step()
    assert float(task.loss(model(x), y).detach()) < first
    m = task.evaluate(model)
    assert 0.0 <= m["accuracy"] <= 1.0 and m["loss"] > 0 and m["chance"] == 0.05
