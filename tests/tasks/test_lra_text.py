"""B2S6 byte-level Text and Retrieval (b2s6 spec E7, §7): the sentiment substitute (every label re-computed by
counting marker words in the bytes, balance, lengths, markers far apart, filler from installed text written
here or the procedural language), the IMDb loader (aclImdb layout), the pair substitute (label = same source,
each document really a stretch of its source file, files disjoint across splits, procedural templates) and the
AAN loader, all on files the tests write."""

from __future__ import annotations

import random

import pytest
import torch

from seqmix.tasks import lra_tasks
from seqmix.tasks.lra_retrieval import generate_pairs, load_aan
from seqmix.tasks.lra_tasks import LRARetrieval, LRAText
from seqmix.tasks.lra_text import NEGATIVE, POSITIVE, count_markers, generate_sentiment, load_imdb
from seqmix.tasks.seq_data import decode_bytes
from seqmix.tasks.text_sources import PROCEDURAL_LABEL, ZipfLanguage, corpus_label, find_text_files

SIZES = {"train": 40, "val": 10, "test": 10}


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    lra_tasks.load_set.cache_clear()


def write_corpus(root, n_files=12, n_bytes=3000):
    """Text files whose lines name their file, so a chunk's origin is visible; one holds marker words."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        line = f"file{i:02d} says hello to the reader. "
        (root / f"doc{i:02d}.py").write_text((line * (n_bytes // len(line) + 1))[:n_bytes])
    (root / "doc00.py").write_text("a splendid and dreadful text, superbly awful. " * 80)
    (root / "skip.bin").write_bytes(b"\x00" * 100)  # not a text suffix
    return {"cpython-stdlib": str(root)}


def test_installed_text_discovery(tmp_path):
    roots = write_corpus(tmp_path / "lib")
    (tmp_path / "lib" / "dangling.py").symlink_to(tmp_path / "lib" / "gone.py")  # as Debian doc dirs have
    files = find_text_files(roots)
    assert [p.name for _, p in files] == [f"doc{i:02d}.py" for i in range(12)]
    assert corpus_label(files) == "installed text: cpython-stdlib (substitute)"
    assert find_text_files({"cpython-stdlib": str(tmp_path / "absent")}) == []
    assert corpus_label([]) == PROCEDURAL_LABEL


@pytest.mark.parametrize("procedural", [False, True])
def test_sentiment_labels_are_the_majority_of_marker_words(tmp_path, procedural):
    roots = write_corpus(tmp_path / "lib")
    d = generate_sentiment(0, SIZES, max_len=400, n_markers=5, roots=roots, procedural=procedural)
    assert ("procedural" in d["data_source"]) == procedural
    for split, n in SIZES.items():
        x, lengths, y = d[f"{split}/x"], d[f"{split}/lengths"], d[f"{split}/y"]
        assert x.shape == (n, 400) and torch.bincount(y, minlength=2).tolist() == [n // 2, n // 2]
        assert int(lengths.min()) >= 200 and int(lengths.max()) <= 400
        for row, length, label, markers in zip(x, lengths, y, d[f"{split}/markers"]):
            text = decode_bytes(row.tolist())
            assert len(text) == int(length)
            pos, neg = count_markers(text)
            assert pos + neg == 5 and (pos > neg) == bool(label) and [pos, neg] == markers.tolist()
            # exactly one marker word in each fifth of the document: they sit far apart
            bounds = [round(i * len(text) / 5) for i in range(6)]
            assert [sum(count_markers(text[lo:hi])) for lo, hi in zip(bounds, bounds[1:])] == [1] * 5


def test_count_markers_needs_whole_words():
    assert count_markers(b"superb superbly awful awfulness Dreadful") == (1, 2)


def test_sentiment_rejects_even_marker_counts():
    with pytest.raises(ValueError, match="odd"):
        generate_sentiment(0, SIZES, n_markers=4, procedural=True)


def write_imdb(root):
    for split in ("train", "test"):
        for name in ("pos", "neg"):
            folder = root / "aclImdb" / split / name
            folder.mkdir(parents=True)
            for i in range(5):
                (folder / f"{i}_7.txt").write_text(f"{name} review {i} of {split} " + "é" * i)
    return root


def test_imdb_loader_reads_acl_layout_as_bytes(tmp_path):
    d = load_imdb(write_imdb(tmp_path), max_len=20)
    assert d["data_source"] == "imdb"
    assert [len(d[f"{s}/y"]) for s in ("train", "val", "test")] == [9, 1, 10]
    assert d["test/y"].tolist() == [0] * 5 + [1] * 5
    first = decode_bytes(d["test/x"][0].tolist())
    assert first == b"neg review 0 of test" and int(d["test/lengths"][4]) == 20  # cut at max_len bytes
    texts = {decode_bytes(r.tolist()) for s in ("train", "val") for r in d[f"{s}/x"]}
    assert len(texts) == 10  # train + val hold every training review once


def test_pairs_from_installed_files(tmp_path):
    roots = write_corpus(tmp_path / "lib", n_files=20, n_bytes=4000)
    files = find_text_files(roots)
    d = generate_pairs(1, SIZES, max_len=300, roots=roots)
    assert d["data_source"] == "same-source pairs from installed text: cpython-stdlib (substitute)"
    used = {}
    for split, n in SIZES.items():
        y, src = d[f"{split}/y"], d[f"{split}/sources"]
        assert d[f"{split}/x"].shape == (n, 2, 300) and torch.bincount(y, minlength=2).tolist() == [n // 2] * 2
        assert torch.equal(y, (src[:, 0] == src[:, 1]).long())  # label = same source, re-computed
        for pair, lengths, (a, b) in zip(d[f"{split}/x"], d[f"{split}/lengths"], src.tolist()):
            for doc, k, f in ((pair[0], lengths[0], a), (pair[1], lengths[1], b)):
                text = decode_bytes(doc.tolist())
                assert len(text) == int(k) >= 150 and text in files[f][1].read_bytes()
        used[split] = set(src.flatten().tolist())
    assert not (used["train"] & used["val"]) and not (used["train"] & used["test"]) and not (used["val"] & used["test"])


def test_pairs_fall_back_to_procedural_templates(tmp_path):
    d = generate_pairs(0, SIZES, max_len=200, roots={"cpython-stdlib": str(tmp_path / "none")}, n_templates=4)
    assert "4 templates of procedural-zipf-text" in d["data_source"]
    for split in SIZES:
        src, y = d[f"{split}/sources"], d[f"{split}/y"]
        assert torch.equal(y, (src[:, 0] == src[:, 1]).long()) and int(src.max()) < 4


def test_zipf_language_is_seeded_and_zipfian():
    lang = ZipfLanguage(0)
    a = lang.text(random.Random(1), 20000)
    assert a == ZipfLanguage(0).text(random.Random(1), 20000) and len(a) == 20000
    words = a.replace(b".\n", b" ").split()
    counts = sorted((words.count(w) for w in set(words)), reverse=True)
    assert counts[0] > 5 * counts[len(counts) // 2]  # a heavy head, as a Zipf law has


def write_aan(root):
    rows = ["1\tid1\tid2\tfirst paper text\tsecond paper", "0.0\tid3\tid4\tx\ty " + "z" * 50]
    for name in ("new_aan_pairs.train.tsv", "new_aan_pairs.eval.tsv", "new_aan_pairs.test.tsv"):
        (root / name).write_text("\n".join(rows) + "\n")
    return root


def test_aan_loader(tmp_path):
    d = load_aan(write_aan(tmp_path), max_len=16)
    assert d["data_source"] == "lra-aan" and d["val/x"].shape == (2, 2, 16) and d["test/y"].tolist() == [1, 0]
    assert decode_bytes(d["train/x"][0, 0].tolist()) == b"first paper text"
    assert d["train/lengths"].tolist() == [[16, 12], [1, 16]]
    with pytest.raises(FileNotFoundError, match="new_aan_pairs"):
        load_aan(tmp_path / "missing")


def test_tasks_build_batches_and_report_sources(tmp_path):
    text = LRAText(source="procedural", train_size=20, val_size=10, test_size=10, max_len=128)
    x, y = text.batch(0, 0, 0, 6)
    assert x.shape == (6, 128) and x.dtype == torch.int64 and int(x.max()) <= 256 and y.shape == (6,)
    assert text.data_source.endswith(PROCEDURAL_LABEL) and text.model_inputs()["vocab_size"] == 257
    real = LRAText(source="imdb", data_dir=str(write_imdb(tmp_path / "imdb")), max_len=32)
    assert real.data_source == "imdb" and real.split_set("test")[0].shape == (10, 32)
    pairs = LRARetrieval(source="procedural", train_size=20, val_size=10, test_size=10, max_len=64)
    px, _ = pairs.batch(0, 0, 0, 4)
    assert px.shape == (4, 2, 64) and pairs.model_inputs()["n_documents"] == 2
    with pytest.raises(ValueError, match="data_dir"):
        LRARetrieval(source="aan")
    assert set(POSITIVE).isdisjoint(NEGATIVE)


def test_single_sequence_classifier_refuses_document_pairs():
    """A retrieval batch (B, 2, L) must not reach a one-sequence model unnoticed: its model_inputs say 2 documents."""
    from seqmix.models.classifier import SequenceClassifier

    pairs = LRARetrieval(source="procedural", train_size=20, val_size=10, test_size=10, max_len=64)
    with pytest.raises(TypeError, match="n_documents"):
        SequenceClassifier(**pairs.model_inputs(), d_model=8, n_layers=1, mixer={"name": "mha", "heads": 2})


def test_imdb_loader_reads_hub_parquet_files(tmp_path):
    import pandas as pd

    root = tmp_path / "imdb" / "plain_text"
    root.mkdir(parents=True)
    for split, n in (("train", 10), ("test", 4)):
        frame = pd.DataFrame({"text": [f"{split} review {i}" for i in range(n)], "label": [i % 2 for i in range(n)]})
        frame.to_parquet(root / f"{split}-00000-of-00001.parquet")
    d = load_imdb(tmp_path / "imdb", max_len=64)
    assert [len(d[f"{s}/y"]) for s in ("train", "val", "test")] == [9, 1, 4]
    assert d["test/y"].tolist() == [0, 1, 0, 1] and decode_bytes(d["test/x"][2].tolist()) == b"test review 2"
