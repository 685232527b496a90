"""Length-extrapolation language modelling for the accumulated-rotations paper (rotations spec E1/E2, §6).

Training batches are ``batch size`` windows of ``context`` + 1 tokens at uniformly random offsets into the
training stream (rotations spec E1), drawn from ``counter_generator(seed, step, rank)`` so runs repeat. Evaluation
(rotations spec E1, U15, U17) scores the model at every ``eval_lengths`` L = context * 2^k up to ``eval_max_factor``
times the context (32 at CPU scale, 128 at paper scale): ``eval_windows`` windows of L + 1 tokens from the
validation stream, the same for every model (seed 42 + L), the loss averaged over all L positions; mixers
with random angles (``capabilities.RandomAngles``) are restarted from their own seeds before each length.
Columns: ``ppl_L<L>``, ``nll_L<L>`` and ``ratio_L<L>`` = ppl(L) / ppl(context); ``ppl``/``nll`` repeat the
training-length values. ``data_source`` names the corpus (``rotations_data``). Long evaluation lengths need
memory linear in L: give the attention mixers ``query_block`` (ALiBi) / ``blocked_from`` (PaTH).
"""

from __future__ import annotations

import math
import os
from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F

from ..capabilities import RandomAngles
from ..options import NonNegInt, Opt, OptPosInt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .rotations_corpus import ENGLISH_ROOTS
from .rotations_data import eval_lengths, eval_windows, load_corpus, random_segments

EVAL_SEED = 42  # windows of length L come from seed 42 + L (rotations spec U15)


@register_task("rotations_lm")
class RotationsLM(Task):
    evaluates_longer: ClassVar[bool] = True  # perplexity at multiples of the context (config.compatibility)
    """Inputs (B, context) int64 token ids, targets the next tokens (B, context); model -> (B, T, V)."""

    example_options: ClassVar[dict] = {"n_tokens": 20_000, "context": 16, "eval_max_factor": 2, "eval_windows": 2}
    example_model: ClassVar[dict] = {
        "name": "decoder_lm",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
    }

    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("ppl", "nll", "ppl_L*", "nll_L*", "ratio_L*")}
    # the longest evaluation window (context x eval_max_factor, + 1 target) within the synthetic validation stream,
    # the last round(n_tokens x val_fraction) tokens (a text's length is known once it is read); config.leaf_rules
    at_most: ClassVar[dict] = {
        "eval_max_factor": "(round(n_tokens * val_fraction) - 1) / context if source == 'synthetic' else None"
    }

    memory: ClassVar[dict[str, str]] = {
        "the synthetic stream (n_tokens): int32 lanes, int64 tensors": (
            "n_tokens * 24 if source == 'synthetic' else None"
        ),
        "the synthetic successor table (contexts, 32): ids, weights, probabilities": (
            "contexts * 32 * 48 if source == 'synthetic' else None"
        ),
        "English or OpenWebText characters (max_chars), their BPE training and streams": (
            "max_chars * 8 if source != 'synthetic' else None"
        ),
        "the longest evaluation windows (eval_windows, context x eval_max_factor) int64": (
            "eval_windows * (context * eval_max_factor + 1) * 16"
        ),
        "a training batch (train.batch, context + 1) int64": "(train.batch or 1) * (context + 1) * 16",
    }

    def __init__(
        self,
        *,
        source: Literal["synthetic", "english", "openwebtext"] = "synthetic",
        openwebtext_dir: str | None = None,
        english_roots: list[str] | None = None,
        n_tokens: Annotated[int, Opt(minimum=1000, description="synthetic stream length")] = 2_000_000,
        vocab: Annotated[int, Opt(minimum=64, description="synthetic vocabulary")] = 512,
        topics: Annotated[int, Opt(minimum=1, description="synthetic stream: document topics")] = 64,
        order: Annotated[int, Opt(minimum=1, maximum=2, description="synthetic stream: Markov order")] = 2,
        contexts: Annotated[int, Opt(minimum=1, description="synthetic stream: successor-table rows")] = 1 << 15,
        corpus_seed: NonNegInt = 0,
        bpe_vocab: Annotated[int, Opt(minimum=260)] = 2048,
        bpe_docs: PosInt = 100_000,
        max_chars: OptPosInt = None,
        max_docs: OptPosInt = None,
        val_fraction: Annotated[float, Opt(exclusive_minimum=0, exclusive_maximum=1)] = 0.1,
        context: PosInt = 128,
        eval_max_factor: PosInt = 32,
        eval_windows: PosInt = 8,
        eval_batch: PosInt = 2,
        cache_dir: str | None = None,
        dtype: torch.dtype = torch.float32,
    ):
        if source == "openwebtext":
            openwebtext_dir = openwebtext_dir or os.environ.get("OPENWEBTEXT_DIR") or None
            if openwebtext_dir is None:
                raise ValueError("rotations_lm: source 'openwebtext' needs openwebtext_dir (or $OPENWEBTEXT_DIR)")
        self.lengths = eval_lengths(context, eval_max_factor)
        self.source, self.seq_len = source, context
        self.n_windows, self.eval_batch, self.dtype = eval_windows, eval_batch, dtype
        self.corpus_options = {
            "owt_dir": os.fspath(openwebtext_dir) if openwebtext_dir else None,
            "english_roots": tuple(english_roots) if english_roots is not None else ENGLISH_ROOTS,
            "n_tokens": n_tokens,
            "vocab": vocab,
            "topics": topics,
            "order": order,
            "contexts": contexts,
            "seed": corpus_seed,
            "bpe_vocab": bpe_vocab,
            "bpe_docs": bpe_docs,
            "max_chars": max_chars,
            "max_docs": max_docs,
            "val_fraction": val_fraction,
            "cache_dir": os.fspath(cache_dir) if cache_dir else None,
        }

    @property
    def corpus(self) -> dict:
        return load_corpus(self.source, **self.corpus_options)

    @property
    def data_source(self) -> str:
        return self.corpus["data_source"]

    @property
    def vocab_size(self) -> int:
        return int(self.corpus["vocab_size"])

    def model_inputs(self) -> dict:
        """A token task: the vocabulary size and the training context."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = counter_generator("rotations_lm/train", seed, step, rank)
        return random_segments(self.corpus["train"], self.seq_len, size, g)

    def windows(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The evaluation windows at one length: (eval_windows, length) inputs and targets."""
        val = self.corpus["val"]
        if len(val) < length + 1:
            raise ValueError(
                f"rotations_lm: the validation stream holds {len(val)} tokens, fewer than the evaluation window of "
                f"{length} + 1 (context {self.seq_len} x eval_max_factor): raise task.n_tokens (or the text) or "
                "lower task.eval_max_factor"
            )
        return eval_windows(val, length, self.n_windows, EVAL_SEED + length)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.windows(self.seq_len)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, T, V) logits; mean next-token cross-entropy."""
        return F.cross_entropy(pred.flatten(0, 1).float(), target.flatten())

    def _nll(self, model: torch.nn.Module, length: int) -> float:
        for m in model.modules():
            if isinstance(m, RandomAngles):
                m.reseed()  # the same angles for every model and length (rotations spec U17)
        x, y = self.windows(length)
        sums = self.in_batches(
            model,
            len(x),
            self.eval_batch,
            lambda lo, hi: float(
                F.cross_entropy(model(x[lo:hi]).flatten(0, 1).double(), y[lo:hi].flatten(), reduction="sum")
            ),
        )
        total = 0.0
        for s in sums:  # a left fold in batch order, as the committed values were summed (not Python 3.12's sum)
            total += s
        return total / y.numel()

    def evaluate(self, model: torch.nn.Module) -> dict:
        """nll/ppl at every evaluation length and the ratio to the training context."""
        out: dict[str, float] = {}
        for L in self.lengths:
            nll = self._nll(model, L)
            out[f"nll_L{L}"], out[f"ppl_L{L}"] = nll, math.exp(nll)
        base = out[f"ppl_L{self.seq_len}"]
        out.update({f"ratio_L{L}": out[f"ppl_L{L}"] / base for L in self.lengths})
        out["ppl"], out["nll"] = base, out[f"nll_L{self.seq_len}"]
        return out


__all__ = ["RotationsLM", "EVAL_SEED"]
