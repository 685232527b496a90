"""Byte-level language-model corpora for B2S6 E9 (b2s6 spec §7): installed text, a procedural language, SlimPajama.

Every corpus is ``{"train", "val", "test"}``: (n,) uint8 byte streams (vocabulary 256), documents joined by
the byte ``DOC_SEP`` (0, which no text file here contains), plus ``data_source`` and ``{split}/documents``.

- ``installed_corpus``: the text files of ``text_sources.find_text_files`` (the CPython standard library's
  sources first), each file assigned to train/val/test 98/1/1 by the sha256 of "corpus/folder/name" (b2s6 spec §7),
  so that a file never straddles two splits. ``max_bytes`` caps the train stream (val and test are capped at
  ``max_bytes // 50`` each) for tiny and CPU scales; the files are taken in a seeded order.
- ``procedural_corpus``: documents of the seeded Zipf language (``text_sources.ZipfLanguage``), each opened by a
  topic word that recurs through it (a long-range dependency), used when no installed text is found.
- ``load_slimpajama(directory)``: a local copy of SlimPajama (e.g. ``DKYoon/SlimPajama-6B``): ``*.jsonl``
  files or ``*.parquet`` files with a ``text`` column, read with Hugging Face ``datasets``; the split is
  taken from the file or folder names (train, validation/val, test).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import torch

from .file_checks import text_records
from .seq_data import SPLITS, file_hash_split, seeded_permutation
from .text_sources import PROCEDURAL_LABEL, ZipfLanguage, corpus_label, find_text_files, read_text_file

DOC_SEP = 0
VOCAB_SIZE = 256
_SPLIT_WORDS = {"train": ("train",), "val": ("validation", "valid", "val"), "test": ("test",)}


def _streams(docs: dict[str, list[bytes]], label: str) -> dict:
    out: dict = {"data_source": label}
    for split in SPLITS:
        joined = bytes([DOC_SEP]).join(docs[split])
        out[split] = (
            torch.frombuffer(bytearray(joined), dtype=torch.uint8) if joined else torch.zeros(0, dtype=torch.uint8)
        )
        out[f"{split}/documents"] = torch.tensor(len(docs[split]), dtype=torch.int64)
    return out


def installed_corpus(seed: int = 0, max_bytes: int | None = None, roots=None) -> dict | None:
    """The installed text files as byte streams (see the module docstring), or None when none is found."""
    files = find_text_files(roots)
    if not files:
        return None
    caps = {"train": max_bytes, "val": None if max_bytes is None else max(1, max_bytes // 50)}
    caps["test"] = caps["val"]
    docs: dict[str, list[bytes]] = {s: [] for s in SPLITS}
    sizes = dict.fromkeys(SPLITS, 0)
    for i in seeded_permutation(len(files), seed, "byte-corpus-files"):
        corpus, path = files[i]
        split = file_hash_split(f"{corpus}/{path.parent.name}/{path.name}")  # machine-independent name
        if caps[split] is not None and sizes[split] >= caps[split]:
            continue
        data = read_text_file(path).replace(bytes([DOC_SEP]), b" ")
        if caps[split] is not None:
            data = data[: caps[split] - sizes[split]]
        if data:
            docs[split].append(data)
            sizes[split] += len(data)
    return _streams(docs, corpus_label(files))


def procedural_corpus(seed: int, n_bytes: int, doc_bytes: int = 2048) -> dict:
    """Documents of the Zipf language, 98/1/1 (at least one document per split): ``n_bytes`` in all."""
    language = ZipfLanguage(seed)
    rng = random.Random(f"procedural-corpus:{seed}")
    n_docs = max(3, n_bytes // doc_bytes)
    n_held = max(1, n_docs // 100)
    docs: dict[str, list[bytes]] = {"val": [], "test": [], "train": []}
    for i in range(n_docs):
        topic = language.words[rng.randrange(len(language.words))]
        body = language.text(rng, doc_bytes)
        # the topic word opens the document and recurs every ~400 bytes: a dependency across the segment
        pieces = [f"{topic}: ".encode()] + [
            body[j : j + 400] + f" ({topic}) ".encode() for j in range(0, len(body), 400)
        ]
        split = "val" if i < n_held else "test" if i < 2 * n_held else "train"
        docs[split].append(b"".join(pieces))
    return _streams(docs, PROCEDURAL_LABEL)


def byte_corpus(source: str = "auto", seed: int = 0, max_bytes: int | None = None, roots=None, directory=None) -> dict:
    """``source``: auto (installed text, else procedural), installed, procedural or slimpajama."""
    if source in ("auto", "installed"):
        found = installed_corpus(seed, max_bytes, roots)
        if found is not None:
            return found
        if source == "installed":
            raise FileNotFoundError(f"byte corpus: no installed text files under {roots or 'the default roots'}")
        return procedural_corpus(seed, max_bytes or 4_000_000)
    if source == "procedural":
        return procedural_corpus(seed, max_bytes or 4_000_000)
    if source == "slimpajama":
        if directory is None:
            raise ValueError("byte corpus source slimpajama: give the local directory of its jsonl/parquet files")
        return load_slimpajama(directory, max_bytes)
    raise ValueError(f"byte corpus source {source!r}: expected auto, installed, procedural or slimpajama")


def _split_of(path: Path, root: Path) -> str | None:
    parts = [p.lower() for p in path.relative_to(root).parts]
    for split in ("val", "test", "train"):  # "validation" before "train": some shards name both folders
        if any(word in part for part in parts for word in _SPLIT_WORDS[split]):
            return split
    return None


def load_slimpajama(directory: str | os.PathLike, max_bytes: int | None = None) -> dict:
    """The ``text`` of every jsonl/parquet file under ``directory`` as byte streams, split by file names. A
    damaged file (empty, truncated, garbled, without ``text``, a value that is not text) is a ValueError naming
    it and the line or row (``file_checks.text_records``)."""
    root = Path(directory)
    files: dict[str, dict[str, list[str]]] = {"json": {}, "parquet": {}}
    for path in sorted(root.rglob("*")):
        kind = "json" if path.name.endswith((".jsonl", ".json")) else "parquet" if path.suffix == ".parquet" else None
        split = _split_of(path, root) if kind else None
        if split:
            files[kind].setdefault(split, []).append(str(path))
    missing = [s for s in SPLITS if not any(s in files[k] for k in files)]
    if missing:
        raise FileNotFoundError(
            f"{root}: no jsonl or parquet files for split(s) {missing} (names must say train/validation/test)"
        )
    docs: dict[str, list[bytes]] = {s: [] for s in SPLITS}
    for kind, by_split in files.items():
        for split, paths in by_split.items():
            cap = None if max_bytes is None else (max_bytes if split == "train" else max(1, max_bytes // 50))
            size = sum(len(d) for d in docs[split])
            for path in paths:
                for text in text_records(path, kind):
                    if cap is not None and size >= cap:
                        break
                    data = text.encode().replace(bytes([DOC_SEP]), b" ")
                    docs[split].append(data)
                    size += len(data)
    return _streams(docs, "slimpajama")


def read_file_bytes(path: Path) -> bytes:  # re-exported for tests that compare streams with their files
    return read_text_file(path)
