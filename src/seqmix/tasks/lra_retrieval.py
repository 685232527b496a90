"""LRA Retrieval (b2s6 spec E7, §7): AAN document pairs as bytes, and an offline pair-matching substitute.

Loader (``load_aan``): the LRA release's ``new_aan_pairs.train.tsv``, ``new_aan_pairs.eval.tsv`` and
``new_aan_pairs.test.tsv`` (tab-separated, no header: label, id1, id2, text1, text2), as S4 reads them. Each
document becomes byte tokens (byte + 1, PAD 0) cut at ``max_len`` = 4000.

Substitute (``generate_pairs``): two documents per example, label 1 when they come from the same source.
- Installed text (``text_sources``): a source is one file. The files are split 80/10/10 by a seeded
  permutation, so validation and test pairs come from files never seen in training. A positive pair is two
  non-overlapping chunks of one file, a negative pair one chunk each of two different files.
- Procedural fallback: a source is one of ``n_templates`` latent templates of the Zipf language (each
  re-weights the word frequencies); label 1 when both documents come from the same template (b2s6 spec §7).
``{split}/sources`` (N, 2) records each document's source, so ``label == (sources equal)`` is checkable.

Every split is ``{split}/x`` (N, 2, max_len) int16, ``{split}/lengths`` (N, 2), ``{split}/y`` (N,).
"""

from __future__ import annotations

import csv
import os
import random
import sys
from pathlib import Path

import torch

from .file_checks import parse_label, text_file_errors
from .seq_data import SPLITS, balanced_labels, encode_bytes, pad_rows, seeded_permutation
from .text_sources import ZipfLanguage, corpus_label, find_text_files, read_text_file

TSV_FILES = {"train": "new_aan_pairs.train.tsv", "val": "new_aan_pairs.eval.tsv", "test": "new_aan_pairs.test.tsv"}


def _stack_pairs(pairs: list[tuple[bytes, bytes]], max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 2, max_len) int16 tokens and (N, 2) lengths."""
    flat = [encode_bytes(doc, max_len) for pair in pairs for doc in pair]
    x, lengths = pad_rows(flat, max_len)
    return x.reshape(len(pairs), 2, max_len), lengths.reshape(len(pairs), 2)


class _FileSources:
    """The installed files long enough for two chunks, split 80/10/10 by a seeded permutation."""

    def __init__(self, roots, seed: int, min_bytes: int):
        found = find_text_files(roots)
        texts = [(c, p, read_text_file(p)) for c, p in found]
        self.files = [(c, p) for c, p, t in texts if len(t) >= min_bytes]
        self.texts = [t for _, _, t in texts if len(t) >= min_bytes]
        self.label = corpus_label(self.files)
        n = len(self.files)
        n_held = max(2, round(0.1 * n))
        order = seeded_permutation(n, seed, "retrieval-files")
        self.split_files = {"val": order[:n_held], "test": order[n_held : 2 * n_held], "train": order[2 * n_held :]}
        self.usable = n >= 2 * n_held + 2

    def pair(self, rng: random.Random, split: str, label: int, lengths: tuple[int, int]):
        """((doc1, doc2), (source1, source2)): chunks of one file (label 1) or of two files (label 0)."""
        pool = self.split_files[split]
        if label == 1:
            f = rng.choice(pool)
            text, cut = self.texts[f], len(self.texts[f]) // 2  # one chunk from each half: never overlapping
            a = rng.randrange(max(1, cut - lengths[0] + 1))
            b = cut + rng.randrange(max(1, len(text) - cut - lengths[1] + 1))
            return (text[a : a + lengths[0]], text[b : b + lengths[1]]), (f, f)
        f, g = rng.sample(pool, 2)
        docs = []
        for src, n in ((f, lengths[0]), (g, lengths[1])):
            start = rng.randrange(max(1, len(self.texts[src]) - n + 1))
            docs.append(self.texts[src][start : start + n])
        return tuple(docs), (f, g)


def generate_pairs(
    seed: int,
    sizes: dict[str, int],
    max_len: int = 256,
    min_len: int | None = None,
    n_templates: int = 8,
    roots=None,
    procedural: bool = False,
) -> dict:
    """Balanced splits of document pairs (see the module docstring); document lengths uniform in
    [min_len (default max_len // 2), max_len]."""
    min_len = min_len or max_len // 2
    rng = random.Random(seed)
    files = None if procedural else _FileSources(roots, seed, 2 * max_len)
    if files is not None and not files.usable:
        files = None  # too few long files for disjoint splits: the procedural language instead
    language = ZipfLanguage(seed) if files is None else None
    label = files.label if files is not None else f"{n_templates} templates of procedural-zipf-text (substitute)"
    out: dict = {"data_source": f"same-source pairs from {label}"}
    weights = [language.template_weights(k) for k in range(n_templates)] if language else []
    for split in SPLITS:
        labels = balanced_labels(sizes[split], 2, rng, f"retrieval {split}_size")
        pairs, sources = [], []
        for y in labels:
            lengths = (rng.randint(min_len, max_len), rng.randint(min_len, max_len))
            if files is not None:
                docs, src = files.pair(rng, split, y, lengths)
            else:
                t1 = rng.randrange(n_templates)
                t2 = t1 if y == 1 else rng.choice([t for t in range(n_templates) if t != t1])
                docs, src = (
                    (language.text(rng, lengths[0], weights[t1]), language.text(rng, lengths[1], weights[t2])),
                    (t1, t2),
                )
            pairs.append(docs)
            sources.append(src)
        out[f"{split}/x"], out[f"{split}/lengths"] = _stack_pairs(pairs, max_len)
        out[f"{split}/y"] = torch.tensor(labels, dtype=torch.int64)
        out[f"{split}/sources"] = torch.tensor(sources, dtype=torch.int64).reshape(-1, 2)
    return out


def load_aan(directory: str | os.PathLike, max_len: int = 4000, caps: dict | None = None) -> dict:
    """The AAN pairs under ``directory`` (see the module docstring); ``caps`` keeps the first rows per split."""
    root = Path(directory)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # AAN documents exceed csv's default field limit
    out: dict = {"data_source": "lra-aan"}
    for split, name in TSV_FILES.items():
        path = root / name
        if not path.exists():
            raise FileNotFoundError(f"{path}: AAN split missing (expected {sorted(TSV_FILES.values())})")
        pairs, labels = [], []
        with text_file_errors(path), open(path, newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)):
                if caps and caps.get(split) is not None and len(labels) >= caps[split]:
                    break
                if len(row) != 5:
                    raise ValueError(f"{path}: row {i} has {len(row)} fields, expected 5 (label id1 id2 text1 text2)")
                labels.append(parse_label(row[0], 2, f"{path}: row {i}", parse=float))
                pairs.append((row[3].encode(), row[4].encode()))
        if not labels:
            raise ValueError(f"{path}: no rows (an empty split)")
        out[f"{split}/x"], out[f"{split}/lengths"] = _stack_pairs(pairs, max_len)
        out[f"{split}/y"] = torch.tensor(labels, dtype=torch.int64)
    return out
