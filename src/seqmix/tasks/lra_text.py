"""LRA Text (b2s6 spec E7, §7): byte-level IMDb sentiment, and a long-range byte-level sentiment substitute.

Loader (``load_imdb``): a local directory in either layout
- the Maas et al. release ``aclImdb``: ``train/pos/*.txt``, ``train/neg/*.txt``, ``test/pos``, ``test/neg``
  (label 1 = pos), or
- the Hugging Face ``imdb`` parquet files (``*train*.parquet``, ``*test*.parquet``, columns ``text``, ``label``).
Reviews become UTF-8 byte tokens (byte + 1, PAD 0) cut at ``max_len`` = 4096 (the S4 convention). The
release has no validation split; a seeded 10% of train is held out.

Substitute (``generate_sentiment``): each document is ``L`` bytes of filler text (installed text when found,
``text_sources``; else the procedural Zipf language) with ``n_markers`` (odd) polarity words written over it,
one in each of ``n_markers`` equal segments so that they sit far apart; the label is the majority polarity
(1 = more positive words). Marker words already in the filler are masked with '#', so counting the marker
words in the bytes re-computes every label (``count_markers``).
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import torch

from .file_checks import load_parquet, parse_label, row_origin
from .seq_data import SPLITS, balanced_labels, encode_bytes, holdout, pad_rows, subsample
from .text_sources import ZipfLanguage, corpus_label, find_text_files, read_text_file

POSITIVE = ("splendid", "delightful", "superb", "marvellous", "brilliant")
NEGATIVE = ("dreadful", "awful", "terrible", "dismal", "abysmal")
_MARKER_RE = re.compile(rb"\b(" + b"|".join(w.encode() for w in POSITIVE + NEGATIVE) + rb")\b", re.I)
# masked anywhere, not only as whole words, so no cut-off filler can turn into a marker word when one is written
_ANY_MARKER_RE = re.compile(b"|".join(w.encode() for w in POSITIVE + NEGATIVE), re.I)


def count_markers(text: bytes) -> tuple[int, int]:
    """(positive, negative) marker words in ``text`` (whole words)."""
    found = [m.group(1).lower().decode() for m in _MARKER_RE.finditer(text)]
    return sum(w in POSITIVE for w in found), sum(w in NEGATIVE for w in found)


def _mask_markers(text: bytes) -> bytes:
    return _ANY_MARKER_RE.sub(lambda m: b"#" * len(m.group(0)), text)


class FillerText:
    """Random byte chunks of installed text files (``roots`` as in ``text_sources``), or procedural text."""

    def __init__(self, roots=None, procedural: bool = False, seed: int = 0):
        self.files = [] if procedural else find_text_files(roots)
        self.label = corpus_label(self.files)
        self.language = ZipfLanguage(seed) if not self.files else None
        self._cache: dict[int, bytes] = {}

    def file_bytes(self, i: int) -> bytes:
        if i not in self._cache:
            self._cache[i] = read_text_file(self.files[i][1])
        return self._cache[i]

    def chunk(self, rng: random.Random, n: int) -> bytes:
        """``n`` bytes: a random stretch of a random file (files shorter than ``n`` are tiled)."""
        if self.language is not None:
            return self.language.text(rng, n)
        for _ in range(100):
            data = self.file_bytes(rng.randrange(len(self.files)))
            if data:
                break
        else:
            raise ValueError(f"{self.label}: the installed text files are empty or unreadable")
        if len(data) < n:
            data = data * (n // len(data) + 1)
        start = rng.randrange(len(data) - n + 1)
        return data[start : start + n]


def _write_marker(doc: bytearray, rng: random.Random, lo: int, hi: int, word: str) -> None:
    """Write " word " somewhere in doc[lo:hi] (overwriting the filler there)."""
    piece = f" {word} ".encode()
    at = rng.randint(lo, hi - len(piece))
    doc[at : at + len(piece)] = piece


def sentiment_document(rng: random.Random, filler: FillerText, length: int, label: int, n_markers: int) -> bytes:
    """One document of ``length`` bytes whose majority polarity is ``label``."""
    half = n_markers // 2 + 1
    n_pos = rng.randint(half, n_markers) if label == 1 else rng.randint(0, n_markers - half)
    words = [rng.choice(POSITIVE) for _ in range(n_pos)] + [rng.choice(NEGATIVE) for _ in range(n_markers - n_pos)]
    rng.shuffle(words)
    doc = bytearray(_mask_markers(filler.chunk(rng, length)))
    bounds = [round(i * length / n_markers) for i in range(n_markers + 1)]
    for word, lo, hi in zip(words, bounds, bounds[1:]):
        _write_marker(doc, rng, lo, hi, word)
    if count_markers(bytes(doc)) != (n_pos, n_markers - n_pos):  # by construction; checked, not assumed
        raise AssertionError(f"sentiment document: marker count {count_markers(bytes(doc))} != {n_pos} positive")
    return bytes(doc)


def generate_sentiment(
    seed: int,
    sizes: dict[str, int],
    max_len: int = 512,
    min_len: int | None = None,
    n_markers: int = 5,
    roots=None,
    procedural: bool = False,
) -> dict:
    """Balanced splits of byte documents, lengths uniform in [min_len (default max_len // 2), max_len]:
    {split}/x (N, max_len) int16, lengths, y, and {split}/markers (N, 2): (positive, negative) counts."""
    min_len = min_len or max_len // 2
    if n_markers % 2 == 0 or n_markers < 1:
        raise ValueError(f"n_markers={n_markers}: must be odd (a strict majority decides the label)")
    longest = max(len(w) for w in POSITIVE + NEGATIVE) + 2
    if min_len < n_markers * longest:
        raise ValueError(f"min_len={min_len}: too short for {n_markers} marker words of up to {longest} bytes")
    rng = random.Random(seed)
    filler = FillerText(roots, procedural, seed)
    out: dict = {"data_source": f"sentiment markers over {filler.label}"}
    for split in SPLITS:
        labels = balanced_labels(sizes[split], 2, rng, f"text {split}_size")
        docs = [sentiment_document(rng, filler, rng.randint(min_len, max_len), y, n_markers) for y in labels]
        out[f"{split}/x"], out[f"{split}/lengths"] = pad_rows([encode_bytes(d, max_len) for d in docs], max_len)
        out[f"{split}/y"] = torch.tensor(labels, dtype=torch.int64)
        out[f"{split}/markers"] = torch.tensor([count_markers(d) for d in docs], dtype=torch.int64).reshape(-1, 2)
    return out


def _acl_imdb_split(root: Path, split: str) -> tuple[list[bytes], list[int]] | None:
    texts, labels = [], []
    for name, label in (("neg", 0), ("pos", 1)):
        folder = root / split / name
        if not folder.is_dir():
            return None
        reviews = sorted(folder.glob("*.txt"))
        if not reviews:  # one class only would train and score a constant classifier
            raise ValueError(f"{folder}: no reviews (*.txt): the aclImdb copy is incomplete")
        for f in reviews:
            texts.append(f.read_bytes())
            labels.append(label)
    return texts, labels


def _parquet_split(root: Path, split: str) -> tuple[list[bytes], list[int]]:
    files = sorted(str(f) for f in root.rglob("*.parquet") if split in f.name)
    if not files:
        raise FileNotFoundError(f"{root}: neither aclImdb folders ({split}/pos, {split}/neg) nor *{split}*.parquet")
    columns, rows = load_parquet(files, ("text", "label"))
    labels = [parse_label(v, 2, row_origin(files, rows, i)) for i, v in enumerate(columns["label"])]
    texts = []
    for i, t in enumerate(columns["text"]):
        if not isinstance(t, str):
            raise ValueError(f"{row_origin(files, rows, i)}: text is {type(t).__name__}, not a string")
        texts.append(t.encode())
    return texts, labels


def load_imdb(directory: str | os.PathLike, max_len: int = 4096, seed: int = 0, caps: dict | None = None) -> dict:
    """The IMDb reviews under ``directory`` as byte tokens (see the module docstring)."""
    root = Path(directory)
    if (root / "aclImdb").is_dir():
        root = root / "aclImdb"
    raw = {}
    for split in ("train", "test"):
        raw[split] = _acl_imdb_split(root, split) or _parquet_split(root, split)
    train, val = holdout(len(raw["train"][1]), 0.1, seed, "imdb-val")
    parts = {"train": (raw["train"], train), "val": (raw["train"], val), "test": (raw["test"], None)}
    out: dict = {"data_source": "imdb"}
    for split, ((texts, labels), idx) in parts.items():
        idx = list(range(len(labels))) if idx is None else idx
        idx = [idx[i] for i in subsample(len(idx), (caps or {}).get(split), seed, f"imdb-{split}-cap")]
        out[f"{split}/x"], out[f"{split}/lengths"] = pad_rows([encode_bytes(texts[i], max_len) for i in idx], max_len)
        out[f"{split}/y"] = torch.tensor([labels[i] for i in idx], dtype=torch.int64)
    return out


__all__ = ["generate_sentiment", "load_imdb", "count_markers"]
