"""Story language modelling (sessa spec §3.3 / §3.4, E3 and E4): next-token prediction on stories.

``source: procedural`` (default, offline) uses the bundled substitute (``story_gen``); ``source:
simplestories`` reads the real corpus (``text_data.load_simplestories``) from ``simplestories_dir``, else
``$SIMPLESTORIES_DIR``, else the hub. Either way a byte-level BPE is trained on the train split, the
splits are encoded as one stream each (EOS between stories) and cut into non-overlapping segments of
``segment_len`` tokens; all of it is cached with a checksum (``data_cache``). ``data_source`` says which
corpus a result came from ("procedural-stories (substitute)" or "SimpleStories"), so that tables never
put substitute numbers beside the paper's unlabelled.

Metrics (``lm_counts``/``lm_report``): perplexity = exp(mean token NLL), top-1 and top-5 accuracy in %.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F

from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from .base import Task
from .data_cache import cache_root, cached
from .sampling import epoch_indices
from .story_gen import stories
from .text_data import HUB_NAME, load_simplestories, segments, token_streams

PROCEDURAL, SIMPLESTORIES = "procedural-stories (substitute)", "SimpleStories"
PIPELINE_VERSION = 1


def lm_counts(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, int, int, int]:
    """logits (B, T, V), targets (B, T) -> (summed NLL, top-1 hits, top-5 hits, tokens)."""
    flat, y = logits.flatten(0, 1).double(), targets.flatten()
    nll = float(F.cross_entropy(flat, y, reduction="sum"))
    top = flat.topk(min(5, flat.shape[-1]), dim=-1).indices
    hit = top == y[:, None]
    return nll, int(hit[:, 0].sum()), int(hit.any(-1).sum()), len(y)


def lm_report(nll: float, top1: int, top5: int, n: int, prefix: str = "") -> dict[str, float]:
    """{ppl, nll, top1_pct, top5_pct} (prefixed) from summed counts."""
    return {
        f"{prefix}ppl": math.exp(nll / n),
        f"{prefix}nll": nll / n,
        f"{prefix}top1_pct": 100.0 * top1 / n,
        f"{prefix}top5_pct": 100.0 * top5 / n,
    }


def _corpus_key(source: str, directory: str | None, n_stories: int, seed: int) -> dict:
    if source == "procedural":
        return {"source": source, "n_stories": n_stories, "seed": seed}
    if directory is None:
        return {"source": source, "hub": HUB_NAME}
    files = sorted(Path(directory).rglob("*.parquet"))  # a changed directory is a different corpus
    return {"source": source, "files": [(str(f.relative_to(directory)), f.stat().st_size) for f in files]}


@functools.lru_cache(maxsize=2)
def load_streams(
    source: str, directory: str | None, n_stories: int, seed: int, vocab: int, cache_dir: str | None
) -> dict:
    """The tokenizer JSON and the token stream of every split (see ``text_data.token_streams``), cached."""

    def build() -> dict:
        if source == "procedural":
            texts, label = stories(seed, n_stories), PROCEDURAL
        else:
            root = cache_root(cache_dir)  # keep the datasets library's own cache beside ours, when we have one
            texts, label = load_simplestories(directory, hf_cache_dir=str(root / "hf") if root else None), SIMPLESTORIES
        return token_streams(texts, vocab, label)

    key = {"version": PIPELINE_VERSION, **_corpus_key(source, directory, n_stories, seed), "bpe_vocab": vocab}
    return cached("story_lm", key, build, cache_dir)


@register_task("story_lm")
class StoryLM(Task):
    """Inputs (B, segment_len) int64 token ids, targets the next tokens (B, segment_len); model -> (B, T, V)."""

    example_options: ClassVar[dict] = {"n_stories": 100, "bpe_vocab": 300, "segment_len": 16, "eval_segments": 4}
    example_model: ClassVar[dict] = {
        "name": "decoder_lm",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
    }

    # lm_report on the evaluation split, and with prefix val_ on the held-out validation split
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "evaluate": (*("ppl", "nll", "top1_pct", "top5_pct"), *("val_ppl", "val_nll", "val_top1_pct", "val_top5_pct"))
    }

    memory: ClassVar[dict[str, str]] = {
        "generated stories (about 520 characters), their BPE training (about 26 KB a story), streams": (
            "n_stories * 32768 if source == 'procedural' else None"
        ),
        "a training batch (train.batch, segment_len) int64": "(train.batch or 1) * segment_len * 16",
    }

    def __init__(
        self,
        *,
        source: Literal["procedural", "simplestories"] = "procedural",
        simplestories_dir: str | None = None,
        n_stories: PosInt = 50000,
        story_seed: NonNegInt = 0,
        bpe_vocab: Annotated[int, Opt(minimum=260)] = 4096,
        segment_len: PosInt = 512,
        eval_split: Literal["test", "val"] = "test",
        eval_segments: Annotated[int | None, Opt(minimum=1, description="cap on evaluated segments")] = None,
        eval_batch: PosInt = 16,
        cache_dir: str | None = None,
        dtype: torch.dtype = torch.float32,
    ):
        if source == "simplestories" and simplestories_dir is None:
            simplestories_dir = os.environ.get("SIMPLESTORIES_DIR") or None
        self.source, self.directory = source, (os.fspath(simplestories_dir) if simplestories_dir else None)
        self.n_stories, self.story_seed, self.bpe_vocab = n_stories, story_seed, bpe_vocab
        self.seq_len = segment_len
        self.eval_split, self.eval_segments, self.eval_batch = eval_split, eval_segments, eval_batch
        self.cache_dir = os.fspath(cache_dir) if cache_dir else None
        self.data_source = PROCEDURAL if source == "procedural" else SIMPLESTORIES
        self.dtype = dtype

    @property
    def streams(self) -> dict:
        return load_streams(
            self.source, self.directory, self.n_stories, self.story_seed, self.bpe_vocab, self.cache_dir
        )

    @property
    def vocab_size(self) -> int:
        """The trained tokenizer's size (at most ``bpe_vocab``; builds or reads the corpus)."""
        return int(self.streams["vocab_size"])

    def tokenizer(self):
        from .text_data import tokenizer_from_json

        return tokenizer_from_json(self.streams["tokenizer"])

    def split_set(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets): (n_segments, segment_len) int64 each."""
        return segments(self.streams[split], self.seq_len)

    def model_inputs(self) -> dict:
        """A token task: the trained BPE vocabulary size and the segment length."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.split_set("train")
        idx = epoch_indices("story_lm/train", len(x), seed, step, rank, size)
        return x[idx], y[idx]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.split_set(self.eval_split)
        n = len(x) if self.eval_segments is None else min(len(x), self.eval_segments)
        return x[:n], y[:n]

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, T, V) logits; mean next-token cross-entropy."""
        return F.cross_entropy(pred.flatten(0, 1).float(), target.flatten())

    def _measure(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, prefix: str) -> dict:
        """lm_report of x, y (N, T): each batch's logits are reduced to counts before the next batch runs (the
        (N, T, V) logits of a whole split need not fit), and the counts are summed in batch order."""
        counts = self.in_batches(
            model, len(x), self.eval_batch, lambda lo, hi: lm_counts(model(x[lo:hi]).cpu(), y[lo:hi])
        )
        totals = [0.0, 0, 0, 0]
        for c in counts:
            totals = [a + b for a, b in zip(totals, c)]
        return lm_report(*totals, prefix=prefix)

    def evaluate(self, model: torch.nn.Module) -> dict:
        """ppl, top1_pct, top5_pct on the evaluation split and val_* on the held-out validation split."""
        out = self._measure(model, *self.test_set(), prefix="")
        if self.eval_split != "val":
            vx, vy = self.split_set("val")
            n = len(vx) if self.eval_segments is None else min(len(vx), self.eval_segments)
            out.update(self._measure(model, vx[:n], vy[:n], prefix="val_"))
        return out


__all__ = ["StoryLM", "lm_counts", "lm_report", "load_streams", "PROCEDURAL", "SIMPLESTORIES"]
