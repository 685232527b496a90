"""A tiny associative-recall (MQAR-style) language task for smoke tests of every causal mixer.

Sequence (length 4 * pairs): ``k_1 v_1 ... k_P v_P | q_1 a_1 ... q_P a_P`` where the keys are P distinct
key tokens, values are drawn uniformly (with repetition) from the value tokens, and the queries are the
same keys in a fresh random order, each followed by its value. Targets are next tokens at query positions
only (the value a_i that followed q_i in the first half); every other position is ``ignore_index``.
Chance-level cross-entropy is ln(values); a model that uses the context goes below it.

Token ids: keys 0..keys-1, values keys..keys+values-1. Every batch is a pure function of (seed, step, rank).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import torch
import torch.nn.functional as F

from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task

IGNORE = -100


@register_task("assoc_recall")
class AssocRecall(Task):
    # also the mixers' learning test's task (tests/mixers/test_learning.py): its bounds are set for ln 8 chance
    example_options: ClassVar[dict] = {"pairs": 4, "keys": 16, "values": 8}
    at_most: ClassVar[dict] = {"pairs": "keys"}  # keys within a sequence are distinct (config.leaf_rules)
    example_model: ClassVar[dict] = {
        "name": "decoder_lm",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "softmax_attention", "heads": 2},
    }
    # a row: its 4 * pairs tokens and targets (int64) with the pieces they are stacked from, and the uniform
    # draws and argsort that pick its keys
    memory: ClassVar[dict[str, str]] = {
        "the test set (test_size, 4 * pairs)": "test_size * (4 * pairs * 40 + keys * 16)",
        "a training batch (train.batch, 4 * pairs)": "(train.batch or 1) * (4 * pairs * 40 + keys * 16)",
    }

    def __init__(
        self,
        *,
        pairs: PosInt = 4,
        keys: PosInt = 16,
        values: Annotated[int, Opt(minimum=2)] = 16,
        test_size: PosInt = 256,
        test_seed: NonNegInt = 4321,
        dtype: torch.dtype = torch.float32,
    ):
        if keys < pairs:
            raise ValueError(f"keys={keys} must be >= pairs={pairs} (keys within a sequence are distinct)")
        self.pairs, self.keys, self.values = pairs, keys, values
        self.vocab_size = keys + values
        self.d_in = self.d_out = self.vocab_size
        self.seq_len = 4 * pairs
        self.test_size, self.test_seed, self.dtype = test_size, test_seed, dtype

    def model_inputs(self) -> dict:
        """A token task: the vocabulary size and the sequence length."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}

    @property
    def chance_loss(self) -> float:
        return math.log(self.values)

    def _make(self, g: torch.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        P = self.pairs
        k = torch.argsort(torch.rand(size, self.keys, generator=g), dim=1)[:, :P]  # distinct keys
        v = self.keys + torch.randint(0, self.values, (size, P), generator=g)
        order = torch.argsort(torch.rand(size, P, generator=g), dim=1)
        qk, qv = k.gather(1, order), v.gather(1, order)
        x = torch.cat((torch.stack((k, v), -1).flatten(1), torch.stack((qk, qv), -1).flatten(1)), dim=1)
        y = torch.full_like(x, IGNORE)
        y[:, 2 * P :: 2] = qv  # at each query position, predict its value
        return x, y

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens (size, 4P) int64, targets (size, 4P) int64 with IGNORE off the query positions)."""
        return self._make(counter_generator("assoc_recall", seed, step, rank), size)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._make(counter_generator("assoc_recall-test", self.test_seed), self.test_size)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, L, vocab) logits; mean cross-entropy over query positions."""
        return F.cross_entropy(pred.flatten(0, 1), target.flatten(), ignore_index=IGNORE)

    def accuracy(self, pred: torch.Tensor, target: torch.Tensor) -> float:
        m = target != IGNORE
        return float((pred.argmax(-1)[m] == target[m]).float().mean())
