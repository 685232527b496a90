"""The accumulated-rotations corpus and task (rotations spec §7, E1): the synthetic stream is seeded, fast
and has long-range structure; installed English text and a local OpenWebText copy are found, tokenised with a
locally trained BPE and tagged; the corpus is cached with a checksum; evaluation windows are the same for
every model at every power-of-two length. None of this existed on main (the task was not registered)."""

from __future__ import annotations

import fnmatch
import gzip
import json
import logging
import time

import numpy as np
import pytest
import torch

from seqmix.registry import get_task
from seqmix.tasks import rotations_data
from seqmix.tasks.rotations_corpus import SyntheticSpec, find_english, html_text, load_openwebtext, synthetic_stream
from seqmix.tasks.rotations_lm import RotationsLM
from seqmix.tasks.text_data import tokenizer_from_json

TINY = {"n_tokens": 60_000, "context": 32, "eval_max_factor": 32, "eval_windows": 2}


@pytest.fixture(autouse=True)
def _fresh_corpus_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    rotations_data._load.cache_clear()
    rotations_data.resolve_source.cache_clear()
    yield
    rotations_data._load.cache_clear()


def _induction_hits(s: np.ndarray, n: int = 8, window: int = 4096) -> tuple[int, int]:
    """Positions whose preceding n-gram occurred within ``window`` tokens and was followed by the same token
    then; and how many of those lie over 256 tokens back (beyond a short training context)."""
    last: dict[bytes, int] = {}
    hits = far = 0
    for t in range(n, len(s) - 1):
        key = s[t - n : t].tobytes()
        prev = last.get(key)
        if prev is not None and t - prev <= window and s[prev] == s[t]:
            hits += 1
            far += t - prev > 256
        last[key] = t
    return hits, far


def test_synthetic_stream_is_seeded_fast_and_in_range():
    t0 = time.process_time()
    a = synthetic_stream(100_000, seed=3)
    assert time.process_time() - t0 < 1.0  # CPU seconds: tiny sizes build in under a second
    assert a.dtype == np.int32 and a.shape == (100_000,) and a.min() >= 0 and a.max() < 512
    assert np.array_equal(a, synthetic_stream(100_000, seed=3))
    assert not np.array_equal(a, synthetic_stream(100_000, seed=4))
    counts = np.bincount(a, minlength=512)
    assert counts[:8].sum() > counts[-64:].sum()  # the Zipf tilt towards small ids


def test_synthetic_stream_has_long_range_copies():
    """Copies make earlier context predictive, some from beyond 256 tokens; without copies far less so."""
    with_copies = _induction_hits(synthetic_stream(100_000, seed=0))
    without = _induction_hits(synthetic_stream(100_000, seed=0, spec=SyntheticSpec(copy_prob=0.0)))
    assert with_copies[0] > 0.2 * 100_000 and with_copies[0] > 10 * max(without[0], 1)
    assert with_copies[1] > 1000


def _transition_entropy(stream: np.ndarray, vocab: int) -> float:
    """Empirical H(t | t-1) in nats."""
    joint = np.bincount(stream[:-1].astype(np.int64) * vocab + stream[1:], minlength=vocab * vocab).reshape(vocab, -1)
    p = joint / joint.sum()
    prev = p.sum(axis=1, keepdims=True)
    nz = p > 0
    return float(-(p[nz] * np.log((p / np.where(prev > 0, prev, 1))[nz])).sum())


def test_first_order_stream_follows_its_successor_rows():
    """Order 1 with one topic and a row per context: every transition (no copies) is one of the row's successors,
    drawn from the same table the generator seeds first."""
    from seqmix.tasks.rotations_corpus import _successor_table

    spec = SyntheticSpec(vocab=64, topics=1, order=1, contexts=64, copy_prob=0.0)
    s = synthetic_stream(4000, seed=5, spec=spec)  # < 4096 tokens: one lane, no lane boundaries to skip
    succ, _ = _successor_table(np.random.default_rng(5), spec)
    assert all(b in succ[a] for a, b in zip(s[:-1], s[1:], strict=True))


def test_few_topics_first_order_is_learnable_from_the_previous_token():
    """The cpu-scale law (8 topics, order 1) leaves much less to guess given t-1 than the spec's default law,
    whose successors mix over every (topic, t-2): the reason the cpu scale uses it."""
    default = synthetic_stream(400_000, seed=0)
    cpu = synthetic_stream(400_000, seed=0, spec=SyntheticSpec(topics=8, order=1, contexts=4096))
    assert _transition_entropy(cpu, 512) < _transition_entropy(default, 512) - 1.0


@pytest.mark.parametrize("bad", [{"order": 3}, {"order": 0}, {"topics": 0}, {"contexts": 0}])
def test_synthetic_stream_rejects_a_bad_law(bad):
    with pytest.raises(ValueError, match="synthetic_stream"):
        synthetic_stream(1000, seed=0, spec=SyntheticSpec(**bad))


def test_task_is_registered_and_tags_its_source():
    task = get_task("rotations_lm")(**TINY)
    assert isinstance(task, RotationsLM)
    assert task.data_source == rotations_data.SYNTHETIC
    assert task.model_inputs() == {"vocab_size": 512, "seq_len": 32}
    assert task.lengths == [32, 64, 128, 256, 512, 1024]


def test_english_without_installed_text_falls_back_to_synthetic(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="seqmix.data"):
        task = RotationsLM(source="english", english_roots=[str(tmp_path)], **TINY)
        assert task.data_source == rotations_data.SYNTHETIC
    assert "no English text installed" in caplog.text


def _fake_english(root):
    page = root / "python3.11" / "html" / "library"
    page.mkdir(parents=True)
    body = " ".join(f"The function number {i} returns a list of strings and raises an error." for i in range(400))
    (page / "a.html").write_text(f"<html><style>p {{x: 1}}</style><body><p>{body}</p>&amp; more</body></html>")
    entries = "\n\n".join(f"Word{i}\nA definition of the word, with examples {i}." for i in range(300))
    with gzip.open(root / "gcide.dict.dz", "wt") as f:
        f.write(entries)


def test_installed_english_is_found_stripped_and_tokenised(tmp_path):
    _fake_english(tmp_path)
    assert [p.name for p in find_english((str(tmp_path),))] == ["gcide.dict.dz", "a.html"]  # sorted by path
    (tmp_path / "python3").symlink_to(tmp_path / "python3.11")  # as Debian links the default version's docs
    assert len(find_english((str(tmp_path),))) == 2
    assert html_text("<p>a &amp; b</p><script>x()</script>") == "a & b"
    task = RotationsLM(source="english", english_roots=[str(tmp_path)], bpe_vocab=300, **{**TINY, "context": 16})
    assert task.data_source == rotations_data.ENGLISH
    tok = tokenizer_from_json(task.corpus["tokenizer"])
    text = tok.decode(torch.cat((task.corpus["train"], task.corpus["val"])).tolist())
    assert "definition of the word" in text and "function number 399 returns" in text
    assert "<" not in text and "& more" in text
    assert 260 <= task.vocab_size <= 300


def test_openwebtext_loader_reads_local_jsonl_and_txt(tmp_path):
    owt = tmp_path / "owt"
    owt.mkdir()
    docs = [f"Document {i}: a web page about topic {i % 7}, with several sentences." * 20 for i in range(30)]
    (owt / "part0.jsonl").write_text("\n".join(json.dumps({"text": d}) for d in docs[:20]))
    for i, d in enumerate(docs[20:]):
        (owt / f"doc{i}.txt").write_text(d + "\nsecond line")
    loaded = load_openwebtext(owt)
    # in file order (doc*.txt sort before part0.jsonl), one document per .txt file with its lines kept
    assert loaded == [d + "\nsecond line" for d in docs[20:]] + docs[:20]
    assert load_openwebtext(owt, max_docs=12)[-2:] == docs[:2]
    small = {**TINY, "context": 8, "eval_max_factor": 4}
    task = RotationsLM(source="openwebtext", openwebtext_dir=str(owt), bpe_vocab=300, cache_dir=str(tmp_path), **small)
    assert task.data_source == rotations_data.OPENWEBTEXT
    assert len(task.corpus["val"]) > 0 and len(task.corpus["train"]) > 8 * len(task.corpus["val"])


def test_corpus_is_cached_with_a_checksum(tmp_path, monkeypatch, caplog):
    task = RotationsLM(cache_dir=str(tmp_path), **TINY)
    first = task.corpus["val"].clone()
    files = list((tmp_path / "rotations_lm").glob("*.pt"))
    assert len(files) == 1
    rotations_data._load.cache_clear()
    monkeypatch.setattr(rotations_data, "build_corpus", lambda *a: pytest.fail("rebuilt a valid cache"))
    assert torch.equal(task.corpus["val"], first)
    rotations_data._load.cache_clear()
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated: rebuilt with a warning, never trusted
    monkeypatch.undo()
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    with caplog.at_level(logging.WARNING, logger="seqmix.data"):
        assert torch.equal(task.corpus["val"], first)
    assert "rebuilding" in caplog.text


def test_windows_are_seeded_per_length_and_from_the_validation_tail():
    task = RotationsLM(**TINY)
    x, y = task.windows(256)
    assert x.shape == y.shape == (2, 256) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x, task.windows(256)[0])  # the same text for every model
    val, train = task.corpus["val"], task.corpus["train"]
    assert len(val) == 6000 and len(train) == 54_000
    row = x[0].to(torch.int32)
    assert any(torch.equal(val[i : i + 256], row) for i in range(len(val) - 255))
    with pytest.raises(ValueError, match="eval_max_factor"):
        RotationsLM(**{**TINY, "context": 512, "eval_max_factor": 16}).windows(8192)
    with pytest.raises(ValueError, match="power of two"):
        RotationsLM(**{**TINY, "eval_max_factor": 24})


def test_batches_repeat_and_shift_by_one():
    task = RotationsLM(**TINY)
    x, y = task.batch(seed=1, step=5, rank=0, size=4)
    assert x.shape == (4, 32) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x, task.batch(1, 5, 0, 4)[0]) and not torch.equal(x, task.batch(1, 6, 0, 4)[0])


def test_evaluate_reports_every_length_and_repeats_for_random_angles():
    """Random-angle mixers are restarted before each length, so two evaluations agree exactly."""
    from seqmix.models.lm import DecoderLM

    task = RotationsLM(**{**TINY, "eval_max_factor": 4})
    torch.manual_seed(0)
    model = DecoderLM(**task.model_inputs(), d_model=16, n_layers=1, mixer={"name": "so2_random_qkv", "heads": 2})
    out = task.evaluate(model)
    assert out == task.evaluate(model)
    assert set(out) == {f"{k}_L{L}" for k in ("ppl", "nll", "ratio") for L in (32, 64, 128)} | {"ppl", "nll"}
    assert out["ratio_L32"] == 1.0 and out["ppl"] == out["ppl_L32"]
    patterns = task.summary_columns["evaluate"]
    assert all(any(fnmatch.fnmatch(c, p) for p in patterns) for c in out)
