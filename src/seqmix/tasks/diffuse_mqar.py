"""Diffuse MQAR task (sessa spec §3.2): associative recall with multi-token keys, near-miss distractors and
controlled key-query lags; test lags up to 4x the largest train lag. Generator and metric:
``diffuse_mqar_data``.

Example ``i`` of a split is a pure function of (data_seed, split, i) (``counter_generator``), so the finite
train split (``train_size`` examples) needs no storage: batches pick indices epoch by epoch
(``sampling.epoch_indices``) and generate them. The test split (longer sequences) is generated once and
cached with a checksum (``data_cache``). Rows are right-padded with PAD (targets IGNORE), which a causal
model never sees from earlier positions.
"""

from __future__ import annotations

import functools
import os
from typing import Annotated, ClassVar, Literal

import numpy as np
import torch
import torch.nn.functional as F

from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .data_cache import cached
from .diffuse_mqar_data import IGNORE, PAD, MqarLayout, accuracy_report, lag_hits, make_example, pad_right
from .sampling import epoch_indices

GENERATOR_VERSION = 1
DATA_SOURCE = "Diffuse MQAR (seqmix generator, sessa spec §3.2; the authors' is not released)"


def example(layout: MqarLayout, data_seed: int, split: str, i: int) -> dict[str, np.ndarray]:
    """Example ``i`` of ``split``: its own numpy stream, seeded through ``counter_generator``."""
    g = counter_generator("diffuse_mqar", split, data_seed, i)
    return make_example(layout, np.random.default_rng(g.initial_seed()), split)


def build_split(layout: MqarLayout, data_seed: int, split: str, size: int, cache_dir: str | None = None) -> dict:
    """Flat arrays of a split: tokens, targets (int16), lags (int32), offsets (N + 1,) int64; cached."""

    def build() -> dict:
        rows = [example(layout, data_seed, split, i) for i in range(size)]
        offsets = np.cumsum([0] + [len(r["tokens"]) for r in rows])
        flat = {k: np.concatenate([r[k] for r in rows]) for k in ("tokens", "targets", "lags")}
        return {
            "tokens": torch.from_numpy(flat["tokens"].astype(np.int16)),
            "targets": torch.from_numpy(flat["targets"].astype(np.int16)),
            "lags": torch.from_numpy(flat["lags"].astype(np.int32)),
            "offsets": torch.from_numpy(offsets.astype(np.int64)),
        }

    key = {"version": GENERATOR_VERSION, "layout": vars(layout), "seed": data_seed, "split": split, "size": size}
    return cached("diffuse_mqar", key, build, cache_dir)


@functools.lru_cache(maxsize=4)
def _split(layout: MqarLayout, data_seed: int, split: str, size: int, cache_dir: str | None) -> dict:
    return build_split(layout, data_seed, split, size, cache_dir)


def _rows(arrays: dict, name: str, lo: int, hi: int) -> list[np.ndarray]:
    off = arrays["offsets"]
    return [arrays[name][int(off[i]) : int(off[i + 1])].long().numpy() for i in range(lo, hi)]


@register_task("diffuse_mqar")
class DiffuseMQAR(Task):
    """Inputs (B, T) int64 token ids, targets (B, T) int64 (IGNORE off value positions); model -> (B, T, V)."""

    evaluates_longer: ClassVar[bool] = True  # test rows reach test_lag_factor x the training lags (longer rows)
    # checked on every leaf before any job (config.leaf_rules): queries are distinct memory keys, and a key
    # prefix keeps a free suffix for its near-miss
    at_most: ClassVar[dict] = {"noise_min": "noise_max", "n_queries": "n_kv", "n_kv": "key_vocab - 1"}

    example_options: ClassVar[dict] = {
        "key_len": 2,
        "n_kv": 4,
        "n_queries": 4,
        "key_vocab": 16,
        "value_vocab": 16,
        "noise_min": 4,
        "noise_max": 12,
        "train_size": 16,
        "val_size": 4,
        "test_size": 4,
    }
    example_model: ClassVar[dict] = {
        "name": "decoder_lm",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
    }

    # accuracy_report: pooled token accuracy, then accuracy and target count per lag bin
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "evaluate": ("token_acc", "token_acc_lag_*", "count_lag_*", "chance")
    }

    memory: ClassVar[dict[str, str]] = {
        "training rows (train_size, train length): int64 arrays, stored as int16/int32": (
            "train_size * (4 + (n_kv + n_queries) * (key_len + value_len) + noise_max) * 56"
        ),
        "validation and test rows (up to test_lag_factor x the train length)": (
            "(val_size + test_size) * test_lag_factor * (4 + (n_kv + n_queries) * (key_len + value_len) + "
            "noise_max) * 56"
        ),
        "the evaluation split padded: int64 tokens, targets and lags": (
            "(test_size if eval_split == 'test' else val_size) * test_lag_factor * (4 + (n_kv + n_queries) * "
            "(key_len + value_len) + noise_max) * 24"
        ),
        "a training batch (train.batch, train length) int64": (
            "(train.batch or 1) * (4 + (n_kv + n_queries) * (key_len + value_len) + noise_max) * 16"
        ),
    }

    def __init__(
        self,
        *,
        key_len: PosInt = 3,
        value_len: PosInt = 1,
        n_kv: PosInt = 16,
        n_queries: PosInt = 16,
        key_vocab: Annotated[int, Opt(minimum=2)] = 128,
        value_vocab: Annotated[int, Opt(minimum=2)] = 512,
        p_near: Annotated[float, Opt(minimum=0, maximum=1)] = 0.5,
        noise_min: NonNegInt = 64,
        noise_max: NonNegInt = 380,
        test_lag_factor: Annotated[float, Opt(minimum=1)] = 4.0,
        data_seed: NonNegInt = 0,
        train_size: PosInt = 100000,
        val_size: PosInt = 2000,
        test_size: PosInt = 5000,
        eval_split: Literal["test", "val"] = "test",
        eval_batch: PosInt = 32,
        cache_dir: str | None = None,
        dtype: torch.dtype = torch.float32,
    ):
        self.layout = MqarLayout(
            key_len, value_len, n_kv, n_queries, key_vocab, value_vocab, p_near, noise_min, noise_max, test_lag_factor
        )
        self.data_seed, self.sizes = data_seed, {"train": train_size, "val": val_size, "test": test_size}
        self.eval_split, self.eval_batch = eval_split, eval_batch
        self.cache_dir = os.fspath(cache_dir) if cache_dir else None
        self.vocab_size = self.d_in = self.d_out = self.layout.vocab_size
        self.train_len = self.layout.length(noise_max)  # batches are padded to this
        self.seq_len = self.layout.length(self.layout.test_noise_max)  # the longest test example
        self.data_source, self.dtype = DATA_SOURCE, dtype

    def model_inputs(self) -> dict:
        """A token task: the vocabulary and the longest (test) sequence length."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, targets): (size, train_len) int64, right-padded (PAD / IGNORE)."""
        idx = epoch_indices("diffuse_mqar/train", self.sizes["train"], seed, step, rank, size)
        rows = [example(self.layout, self.data_seed, "train", i) for i in idx.tolist()]
        return (
            pad_right([r["tokens"] for r in rows], self.train_len, PAD),
            pad_right([r["targets"] for r in rows], self.train_len, IGNORE),
        )

    def split_arrays(self, split: str) -> dict:
        return _split(self.layout, self.data_seed, split, self.sizes[split], self.cache_dir)

    def split_set(self, split: str, lo: int = 0, hi: int | None = None) -> tuple[torch.Tensor, ...]:
        """(tokens, targets, lags) of examples lo..hi-1, right-padded to their longest row."""
        arrays = self.split_arrays(split)
        hi = self.sizes[split] if hi is None else hi
        rows = {k: _rows(arrays, k, lo, hi) for k in ("tokens", "targets", "lags")}
        T = max(len(r) for r in rows["tokens"])
        return pad_right(rows["tokens"], T, PAD), pad_right(rows["targets"], T, IGNORE), pad_right(rows["lags"], T, 0)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, _ = self.split_set(self.eval_split)
        return x, y

    def influence_anchors(self, n: int) -> torch.Tensor:
        """Each row's last value position (the last target that is not IGNORE): what the last query recalls."""
        _, y = self.test_set()
        y = y[:n]
        pos = torch.arange(y.shape[1])[None, :].expand_as(y)
        return torch.where(y != IGNORE, pos, -1).amax(1).clamp_min(0)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, T, V) logits; mean cross-entropy over value positions only."""
        return F.cross_entropy(pred.flatten(0, 1).float(), target.flatten(), ignore_index=IGNORE)

    def evaluate(self, model: torch.nn.Module) -> dict:
        """Token accuracy pooled over the evaluation split and per lag bin (``MqarLayout.lag_bin_edges``)."""
        edges = self.layout.lag_bin_edges()

        def step(lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
            x, y, lags = self.split_set(self.eval_split, lo, hi)  # padded to this batch's longest row
            return lag_hits(model(x).cpu(), y, lags, edges)

        hits = counts = torch.zeros(len(edges) - 1, dtype=torch.int64)
        for h, c in self.in_batches(model, self.sizes[self.eval_split], self.eval_batch, step):
            hits, counts = hits + h, counts + c
        return {**accuracy_report(hits, counts, edges), "chance": 1.0 / self.layout.value_vocab}
