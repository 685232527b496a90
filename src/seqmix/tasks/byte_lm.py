"""Byte-level language modelling for B2S6 E9 (b2s6 spec §7): next-byte prediction on a ``byte_corpus`` stream.

``source``: ``auto`` (installed text, else the procedural language), ``installed``, ``procedural`` or
``slimpajama`` (a local copy in ``data_dir``). Each split's byte stream is cut into non-overlapping segments of
``segment_len`` bytes (``text_data.segments``); vocabulary 256. The corpus is cached with a checksum per
(source, seed, max_bytes, inputs fingerprint). Metrics as the story LM (``story_lm.lm_report``): perplexity
per byte, top-1/top-5 accuracy, plus bits per byte. In training (``eval.every``), ``diagnostics`` logs the
validation perplexity, NLL and bits per byte on the first ``eval_segments`` validation segments (b2s6 spec E9:
perplexity at every 1/11 of the run).
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import ClassVar, Literal

import torch

from ..options import NonNegInt, OptPosInt, PosInt
from ..registry import register_task
from .byte_corpus import VOCAB_SIZE, byte_corpus
from .data_cache import cached
from .lra_tasks import _text_inputs, fingerprint
from .sampling import epoch_indices
from .story_lm import StoryLM
from .text_data import segments

CORPUS_VERSION = 1


@functools.lru_cache(maxsize=2)
def load_corpus(args_json: str, inputs_json: str, cache_dir: str | None) -> dict:
    args = json.loads(args_json)
    key = {"version": CORPUS_VERSION, "args": args, "inputs": json.loads(inputs_json)}
    return cached("b2s6_byte_corpus", key, lambda: byte_corpus(**args), cache_dir)


@register_task("byte_lm")
class ByteLM(StoryLM):
    """Inputs (B, segment_len) int64 bytes 0..255, targets the next bytes (B, segment_len); model -> (B, T, 256)."""

    example_options: ClassVar[dict] = {
        "source": "procedural",
        "max_bytes": 20_000,
        "segment_len": 32,
        "eval_segments": 4,
    }
    example_model: ClassVar[dict] = {
        "name": "decoder_lm",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
    }

    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "evaluate": (*StoryLM.summary_columns["evaluate"], "bits_per_byte", "val_bits_per_byte")
    }

    memory: ClassVar[dict[str, str]] = {
        "the byte streams (max_bytes) and their int64 segments": "max_bytes * 12",
        "a training batch (train.batch, segment_len) int64 inputs and targets": "(train.batch or 1) * segment_len * 16",
    }

    def __init__(
        self,
        *,
        source: Literal["auto", "installed", "procedural", "slimpajama"] = "auto",
        data_dir: str | None = None,
        data_seed: NonNegInt = 0,
        max_bytes: OptPosInt = 4_000_000,
        segment_len: PosInt = 256,
        eval_split: Literal["test", "val"] = "test",
        eval_segments: OptPosInt = None,
        eval_batch: PosInt = 16,
        cache_dir: str | None = None,
        dtype: torch.dtype = torch.float32,
    ):
        if source == "slimpajama" and not data_dir:
            raise ValueError("byte_lm: source 'slimpajama' needs data_dir (its local jsonl/parquet files)")
        directory = os.fspath(data_dir) if data_dir else None
        self.args = {"source": source, "seed": data_seed, "max_bytes": max_bytes, "directory": directory}
        self.inputs = (
            fingerprint([directory]) if source == "slimpajama" else [] if source == "procedural" else _text_inputs()
        )
        self.seq_len = segment_len
        self.eval_split, self.eval_segments, self.eval_batch = eval_split, eval_segments, eval_batch
        self.cache_dir = os.fspath(cache_dir) if cache_dir else None
        self.dtype = dtype

    @property
    def streams(self) -> dict:
        return load_corpus(json.dumps(self.args, sort_keys=True), json.dumps(self.inputs), self.cache_dir)

    @property
    def data_source(self) -> str:
        return self.streams["data_source"]

    @property
    def vocab_size(self) -> int:
        return VOCAB_SIZE

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.split_set("train")
        idx = epoch_indices("byte_lm/train", len(x), seed, step, rank, size)
        return x[idx], y[idx]

    def split_set(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        return segments(self.streams[split], self.seq_len)

    def diagnostics(self, model: torch.nn.Module) -> dict:
        """In-training validation (b2s6 spec E9's perplexity curve): {val_ppl, val_nll, val_bits_per_byte} on the
        first ``eval_segments`` segments of the validation split (all of them when unset)."""
        vx, vy = self.split_set("val")
        n = len(vx) if self.eval_segments is None else min(len(vx), self.eval_segments)
        out = self._measure(model, vx[:n], vy[:n], prefix="val_")
        return {k: out[k] for k in ("val_ppl", "val_nll")} | {"val_bits_per_byte": out["val_nll"] / math.log(2)}

    def evaluate(self, model: torch.nn.Module) -> dict:
        """The story LM's metrics plus bits per byte (nll / ln 2) on the evaluation and validation splits."""
        out = super().evaluate(model)
        for prefix in ("", "val_"):
            if f"{prefix}nll" in out:
                out[f"{prefix}bits_per_byte"] = out[f"{prefix}nll"] / math.log(2)
        return out
