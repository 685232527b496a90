"""SymbolSoup task (sessa spec §3.1): 20-way classification of the style pair of a 400-600 token example.

The data set (``symbolsoup_data.generate``) is built once per (data seed, sizes, length range) and cached
with a checksum (``data_cache``). Inputs are left-padded with PAD to ``max_tokens`` so that ``<label>`` is the
last position of every row (the classifier reads the last token's hidden state, sessa spec §2.6; causal mixers
then see the padding only as a constant prefix). Batches sample the train split epoch by epoch
(``sampling.epoch_indices``); ``evaluate`` reports accuracy and cross-entropy on the test (or val) split.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F

from ..options import NonNegInt, PosInt
from ..registry import register_task
from .base import Task
from .data_cache import cached
from .sampling import epoch_indices
from .symbolsoup_data import NUM_CLASSES, PAD, SPLITS, VOCAB, generate, letter_budget

GENERATOR_VERSION = 1  # bump when the generator's output changes, so old caches are not reused
DATA_SOURCE = "SymbolSoup (seqmix re-implementation of the generator, sessa spec §3.1)"


@dataclass(frozen=True)
class SymbolSoupData:
    """The three splits as flat token arrays (see ``symbolsoup_data.generate``) and where they came from."""

    arrays: dict
    data_source: str = DATA_SOURCE

    def size(self, split: str) -> int:
        return len(self.arrays[f"{split}/labels"])

    def labels(self, split: str) -> torch.Tensor:
        return self.arrays[f"{split}/labels"]

    def stats(self, split: str) -> torch.Tensor:
        """(N, 3): shorter stylized block (letters), lag from block 1's end and block 2's end to the last token."""
        return self.arrays[f"{split}/stats"]

    def lengths(self, split: str) -> torch.Tensor:
        return self.arrays[f"{split}/offsets"].diff()

    def example(self, split: str, i: int) -> torch.Tensor:
        off = self.arrays[f"{split}/offsets"]
        return self.arrays[f"{split}/tokens"][int(off[i]) : int(off[i + 1])].long()

    def padded(self, split: str, idx: torch.Tensor, length: int) -> torch.Tensor:
        """(len(idx), length) int64, each example right-aligned (left-padded with PAD)."""
        out = torch.full((len(idx), length), PAD, dtype=torch.int64)
        for row, i in enumerate(idx.tolist()):
            ids = self.example(split, i)
            out[row, length - len(ids) :] = ids
        return out


def build_dataset(
    seed: int, sizes: dict[str, int], min_tokens: int, max_tokens: int, cache_dir: str | None = None
) -> SymbolSoupData:
    """Generate (or read back from the checksummed cache) the splits for these settings."""
    key = {"version": GENERATOR_VERSION, "seed": seed, "sizes": sizes, "min": min_tokens, "max": max_tokens}
    arrays = cached("symbolsoup", key, lambda: generate(seed, sizes, min_tokens, max_tokens), cache_dir)
    return SymbolSoupData(arrays)


@functools.lru_cache(maxsize=4)
def _dataset(seed: int, sizes: tuple, min_tokens: int, max_tokens: int, cache_dir: str | None) -> SymbolSoupData:
    return build_dataset(seed, dict(sizes), min_tokens, max_tokens, cache_dir)


@register_task("symbolsoup")
class SymbolSoup(Task):
    """Inputs (B, max_tokens) int64 token ids, targets (B,) class ids in 0..19; the model returns (B, 20)."""

    example_options: ClassVar[dict] = {
        "train_size": 20,
        "val_size": 20,
        "test_size": 20,
        "min_tokens": 20,
        "max_tokens": 30,
    }
    example_model: ClassVar[dict] = {
        "name": "sequence_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
        "pooling": "last",
    }

    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("accuracy", "loss", "chance")}
    at_most: ClassVar[dict] = {"min_tokens": "max_tokens"}  # checked on every leaf before any job (config.leaf_rules)

    memory: ClassVar[dict[str, str]] = {
        "texts (train_size + val_size + test_size, max_tokens): Python lists, then uint8": (
            "(train_size + val_size + test_size) * max_tokens * 17"
        ),
        "the evaluation split padded (size, max_tokens) int64": (
            "(test_size if eval_split == 'test' else val_size) * max_tokens * 8"
        ),
        "a training batch (train.batch, max_tokens) int64": "(train.batch or 1) * max_tokens * 8",
    }

    def __init__(
        self,
        *,
        data_seed: NonNegInt = 0,
        train_size: PosInt = 20000,
        val_size: PosInt = 2000,
        test_size: PosInt = 2000,
        min_tokens: PosInt = 400,
        max_tokens: PosInt = 600,
        eval_split: Literal["test", "val"] = "test",
        eval_batch: PosInt = 64,
        cache_dir: str | None = None,
        dtype: torch.dtype = torch.float32,
    ):
        letter_budget(min_tokens, max_tokens)  # fails early on an empty length range
        self.sizes = {"train": train_size, "val": val_size, "test": test_size}
        for split in SPLITS:
            if self.sizes[split] % NUM_CLASSES:
                raise ValueError(f"{split}_size={self.sizes[split]}: must be a multiple of {NUM_CLASSES}")
        self.data_seed, self.min_tokens, self.max_tokens = data_seed, min_tokens, max_tokens
        self.eval_split, self.eval_batch = eval_split, eval_batch
        self.cache_dir = os.fspath(cache_dir) if cache_dir else None
        self.vocab_size, self.d_out, self.seq_len = len(VOCAB), NUM_CLASSES, max_tokens
        self.dtype = dtype

    @property
    def data(self) -> SymbolSoupData:
        return _dataset(self.data_seed, tuple(self.sizes.items()), self.min_tokens, self.max_tokens, self.cache_dir)

    @property
    def data_source(self) -> str:
        return self.data.data_source

    def model_inputs(self) -> dict:
        """A token classifier: vocabulary (26 ids incl. PAD), 20 classes, the padded length."""
        return {"vocab_size": self.vocab_size, "d_out": self.d_out, "seq_len": self.seq_len}

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens (size, max_tokens) int64 left-padded, labels (size,) int64)."""
        idx = epoch_indices("symbolsoup/train", self.sizes["train"], seed, step, rank, size)
        return self.data.padded("train", idx, self.seq_len), self.data.labels("train")[idx]

    def split_set(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.arange(self.data.size(split))
        return self.data.padded(split, idx, self.seq_len), self.data.labels(split)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.split_set(self.eval_split)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, 20) logits; mean cross-entropy."""
        return F.cross_entropy(pred.float(), target)

    def split_logits(self, model: torch.nn.Module, split: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (N, 20) float32, labels (N,)) over a split (default the evaluation split), in eval mode; with
        ``data.stats(split)`` this gives accuracy by block length or lag (the spec's derived E1 plots)."""
        x, y = self.split_set(split or self.eval_split)
        return self.predict(model, x, self.eval_batch), y

    def evaluate(self, model: torch.nn.Module) -> dict:
        """Accuracy and cross-entropy over the evaluation split (balanced, so a constant predictor scores 0.05)."""
        logits, y = self.split_logits(model)
        return {
            "accuracy": float((logits.argmax(-1) == y).double().mean()),
            "loss": float(F.cross_entropy(logits, y)),
            "chance": 1.0 / NUM_CLASSES,
        }
