"""Shared pieces of the B2S6 data sets (b2s6 spec E6, E7, E9, §7): byte tokens, padding, seeded splits.

Every classification set built here is a flat dict of CPU tensors and strings (``data_cache.DataSet``)::

    "{split}/x"        (N, L) int16 token ids, 0 = PAD (text, ListOps), or (N, L, C) uint8 pixels (images),
                       or (N, 2, L) int16 (retrieval pairs)
    "{split}/lengths"  (N,) int64 valid positions per row (per document: (N, 2) for pairs)
    "{split}/y"        (N,) int64 class ids
    "data_source"      where the examples came from, e.g. "cifar10" or "fashion-mnist (substitute)"

for split in ``SPLITS``. Byte-level text uses ``byte + 1`` as the token id (``BYTE_VOCAB`` = 257 ids with PAD).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import torch

SPLITS = ("train", "val", "test")
PAD = 0
BYTE_VOCAB = 257  # PAD + 256 byte values


def encode_bytes(data: bytes, max_len: int) -> list[int]:
    """Byte-level token ids (byte + 1) of the first ``max_len`` bytes (S4 truncates long reviews the same way)."""
    return [b + 1 for b in data[:max_len]]


def decode_bytes(ids: Sequence[int]) -> bytes:
    return bytes(int(i) - 1 for i in ids if int(i) != PAD)


def pad_rows(rows: Sequence[Sequence[int]], length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(len(rows), length) int16 right-padded with PAD, and (len(rows),) int64 lengths."""
    x = torch.full((len(rows), length), PAD, dtype=torch.int16)
    lengths = torch.zeros(len(rows), dtype=torch.int64)
    for i, row in enumerate(rows):
        if len(row) > length:
            raise ValueError(f"row {i} has {len(row)} tokens, more than the padded length {length}")
        if row:
            x[i, : len(row)] = torch.tensor(row, dtype=torch.int16)
        lengths[i] = len(row)
    return x, lengths


def seeded_permutation(n: int, seed: int, name: str) -> list[int]:
    """A permutation of range(n) fixed by (seed, name): independent of hash randomisation and of other draws."""
    order = list(range(n))
    random.Random(f"{name}:{seed}").shuffle(order)
    return order


def holdout(n: int, fraction: float, seed: int, name: str) -> tuple[list[int], list[int]]:
    """(kept, held_out) index lists: a seeded ``fraction`` of range(n) held out, both sorted."""
    order = seeded_permutation(n, seed, name)
    k = int(round(n * fraction))
    return sorted(order[k:]), sorted(order[:k])


def stratified_split(labels: Sequence[int], fractions: tuple[float, float], seed: int, name: str) -> list[list[int]]:
    """[train, val, test] index lists (sorted): each class split by ``fractions`` (train, val; test the rest)
    after a seeded shuffle, so every split keeps the class proportions to within one example per class."""
    parts: list[list[int]] = [[], [], []]
    for k in sorted(set(int(v) for v in labels)):
        members = [i for i, v in enumerate(labels) if int(v) == k]
        order = [members[j] for j in seeded_permutation(len(members), seed, f"{name}:{k}")]
        n_train, n_val = int(round(fractions[0] * len(order))), int(round(fractions[1] * len(order)))
        for part, chunk in zip(parts, (order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :])):
            part.extend(chunk)
    return [sorted(p) for p in parts]


def subsample(n: int, cap: int | None, seed: int, name: str) -> list[int]:
    """A seeded subset of at most ``cap`` indices of range(n) (all, in order, when cap is None or >= n)."""
    if cap is None or cap >= n:
        return list(range(n))
    return sorted(seeded_permutation(n, seed, name)[:cap])


def balanced_labels(n: int, n_classes: int, rng: random.Random, where: str) -> list[int]:
    """n labels, exactly n / n_classes of each, in a shuffled order."""
    if n % n_classes:
        raise ValueError(f"{where}: size {n} must be a multiple of {n_classes} (balanced classes)")
    labels = [k for k in range(n_classes) for _ in range(n // n_classes)]
    rng.shuffle(labels)
    return labels


def file_hash_split(name: str, fractions: tuple[float, float] = (0.98, 0.01)) -> str:
    """'train', 'val' or 'test' by the sha256 of a document's name (b2s6 spec §7: split 98/1/1 by file hash)."""
    u = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") / 2.0**64
    if u < fractions[0]:
        return "train"
    return "val" if u < fractions[0] + fractions[1] else "test"


def class_counts(y: torch.Tensor, n_classes: int) -> list[int]:
    return torch.bincount(y.long(), minlength=n_classes).tolist()
