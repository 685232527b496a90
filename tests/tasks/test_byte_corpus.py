"""B2S6 byte-level LM corpus (b2s6 spec E9, §7): installed files assigned whole to train/val/test by the hash of
their name (each file's bytes in exactly one stream), byte caps, the procedural fallback, the SlimPajama
loader on jsonl and parquet files written here, and the ``byte_lm`` task (next-byte targets, the checksummed
cache, bits per byte)."""

from __future__ import annotations

import json

import pytest
import torch

from seqmix.tasks import byte_lm
from seqmix.tasks.byte_corpus import DOC_SEP, byte_corpus, installed_corpus, load_slimpajama, procedural_corpus
from seqmix.tasks.byte_lm import ByteLM
from seqmix.tasks.seq_data import file_hash_split
from seqmix.tasks.text_sources import PROCEDURAL_LABEL


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    byte_lm.load_corpus.cache_clear()


def write_files(root, n=60):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"mod{i:03d}.py").write_text(f"# module {i}\n" + f"value_{i} = {i}\n" * (i % 7 + 1))
    return {"cpython-stdlib": str(root)}


def documents(stream: torch.Tensor) -> list[bytes]:
    return bytes(stream.tolist()).split(bytes([DOC_SEP])) if len(stream) else []


def test_installed_corpus_splits_whole_files_by_hash(tmp_path):
    roots = write_files(tmp_path / "lib")
    d = installed_corpus(seed=0, roots=roots)
    assert d["data_source"] == "installed text: cpython-stdlib (substitute)"
    where = {}
    for split in ("train", "val", "test"):
        docs = documents(d[split])
        assert len(docs) == int(d[f"{split}/documents"])
        for doc in docs:
            where[doc] = split
    files = sorted((tmp_path / "lib").glob("*.py"))
    assert len(where) == len(files) == sum(int(d[f"{s}/documents"]) for s in ("train", "val", "test"))
    for f in files:  # every file's bytes are one document, in the split its name hashes to
        assert where[f.read_bytes()] == file_hash_split(f"cpython-stdlib/{f.parent.name}/{f.name}")
    counts = [int(d[f"{s}/documents"]) for s in ("train", "val", "test")]
    assert counts[0] >= 50  # 98/1/1: nearly every file trains


def test_file_hash_split_proportions():
    splits = [file_hash_split(f"file{i}") for i in range(20000)]
    share = {s: splits.count(s) / len(splits) for s in ("train", "val", "test")}
    assert abs(share["train"] - 0.98) < 0.005 and abs(share["val"] - 0.01) < 0.003


def test_byte_caps_and_fallback(tmp_path):
    roots = write_files(tmp_path / "lib")
    capped = installed_corpus(seed=0, max_bytes=300, roots=roots)
    assert 300 <= len(capped["train"]) <= 300 + int(capped["train/documents"])  # + the separators
    absent = {"cpython-stdlib": str(tmp_path / "none")}
    assert installed_corpus(roots=absent) is None
    fallback = byte_corpus("auto", seed=0, max_bytes=20000, roots=absent)
    assert fallback["data_source"] == PROCEDURAL_LABEL and len(fallback["val"]) > 0
    with pytest.raises(FileNotFoundError, match="no installed text"):
        byte_corpus("installed", roots=absent)


def test_procedural_corpus_is_seeded_with_recurring_topics():
    a, b = procedural_corpus(3, 40000), procedural_corpus(3, 40000)
    assert all(torch.equal(a[k], b[k]) for k in a if k != "data_source")
    assert not torch.equal(a["train"], procedural_corpus(4, 40000)["train"])
    for doc in documents(a["train"]):
        topic = doc.split(b": ", 1)[0]
        assert doc.count(b"(" + topic + b")") >= 3  # the opening word recurs through the document


def write_slimpajama(root):
    (root / "train").mkdir(parents=True)
    rows = [{"text": f"train document {i}", "meta": {"redpajama_set_name": "RedPajamaC4"}} for i in range(3)]
    (root / "train" / "chunk1.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (root / "validation").mkdir()
    (root / "validation" / "chunk1.jsonl").write_text(json.dumps({"text": "val doc", "meta": {}}) + "\n")
    import pandas as pd

    (root / "data").mkdir()
    pd.DataFrame({"text": ["test doc one", "test doc two"], "meta": ["a", "b"]}).to_parquet(
        root / "data" / "test-00000-of-00001.parquet"
    )
    return root


def test_slimpajama_loader_reads_jsonl_and_parquet(tmp_path):
    d = load_slimpajama(write_slimpajama(tmp_path / "sp"))
    assert d["data_source"] == "slimpajama"
    assert documents(d["train"]) == [b"train document 0", b"train document 1", b"train document 2"]
    assert documents(d["val"]) == [b"val doc"] and documents(d["test"]) == [b"test doc one", b"test doc two"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="split"):
        load_slimpajama(tmp_path / "empty")


def test_task_targets_are_the_next_bytes_and_cache_is_reused(tmp_path, monkeypatch):
    task = ByteLM(source="procedural", max_bytes=60000, segment_len=64, cache_dir=str(tmp_path))
    x, y = task.batch(0, 0, 0, 5)
    assert x.shape == y.shape == (5, 64) and int(x.max()) < 256
    stream = task.streams["train"].long()
    xs, ys = task.split_set("train")
    assert torch.equal(xs[1], stream[64:128]) and torch.equal(ys[1], stream[65:129])
    assert task.model_inputs() == {"vocab_size": 256, "seq_len": 64}
    assert len(list(tmp_path.rglob("*.pt"))) == 1
    byte_lm.load_corpus.cache_clear()
    monkeypatch.setattr(byte_lm, "byte_corpus", lambda **kw: pytest.fail("rebuilt despite a valid cache"))
    again = ByteLM(source="procedural", max_bytes=60000, segment_len=64, cache_dir=str(tmp_path))
    assert torch.equal(again.streams["train"], task.streams["train"])


def test_task_reports_bits_per_byte():
    class Uniform(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(*x.shape, 256)

    task = ByteLM(source="procedural", max_bytes=60000, segment_len=64, eval_segments=4)
    out = task.evaluate(Uniform())
    assert out["bits_per_byte"] == pytest.approx(8.0) and out["val_bits_per_byte"] == pytest.approx(8.0)
    assert out["ppl"] == pytest.approx(256.0)
