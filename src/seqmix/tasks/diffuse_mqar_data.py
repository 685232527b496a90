"""Diffuse MQAR generator and metric (sessa spec §3.2; the authors' generator is not released, this is ours).

One example, left to right (P = key_len + value_len tokens per pair)::

    BOS MEM [k_1 .. k_Lk v_1 .. v_Lv] x n_kv  NOISE  noise (L_noise tokens)  QRY [k v] x n_queries

- memory: n_kv distinct multi-token keys over the key alphabet, values i.i.d. over the value alphabet;
- noise: floor(L_noise / P) key-value-like slots; with probability p_near a near-miss (the first Lk - 1
  tokens of a real key and a different last token), else a random key tuple; either way the tuple never
  equals a real key (redrawn until it does not); each followed by a random value; the remainder
  (L_noise mod P) is random key tokens;
- queries: n_queries memory keys without replacement, each followed by its value. Targets sit at the
  position before every value token (next-token prediction, teacher-forced when Lv > 1); all else IGNORE.

Lag of a target = (its query value position) - (the memory value position) = 2 + n_kv P + L_noise + (j - i) P
for query j of memory pair i, so L_noise controls it: train draws L_noise ~ U[noise_min, noise_max], test
draws up to the noise that makes the largest test lag ``test_lag_factor`` (4) times the largest train lag.

Ids: PAD 0, BOS 1, MEM 2, NOISE 3, QRY 4, SEP 5 (reserved), keys 6 .. 6 + key_vocab - 1, then values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

PAD, BOS, MEM, NOISE, QRY, SEP = range(6)
N_SPECIAL = 6
IGNORE = -100


@dataclass(frozen=True)
class MqarLayout:
    key_len: int = 3
    value_len: int = 1
    n_kv: int = 16
    n_queries: int = 16
    key_vocab: int = 128
    value_vocab: int = 512
    p_near: float = 0.5
    noise_min: int = 64
    noise_max: int = 380
    test_lag_factor: float = 4.0

    def __post_init__(self):
        if self.n_queries > self.n_kv:
            raise ValueError(f"n_queries={self.n_queries} > n_kv={self.n_kv}: queries are distinct memory keys")
        if self.key_vocab <= self.n_kv:  # else a prefix may have no free suffix left for a near-miss
            raise ValueError(f"key_vocab={self.key_vocab} must exceed n_kv={self.n_kv}")
        if self.noise_max < self.noise_min:
            raise ValueError(f"noise_max={self.noise_max} < noise_min={self.noise_min}")

    @property
    def pair(self) -> int:
        return self.key_len + self.value_len

    @property
    def vocab_size(self) -> int:
        return N_SPECIAL + self.key_vocab + self.value_vocab

    def length(self, noise: int) -> int:
        """Tokens of an example with ``noise`` noise tokens."""
        return 4 + (self.n_kv + self.n_queries) * self.pair + noise

    def max_lag(self, noise: int) -> int:
        return 2 + (self.n_kv + self.n_queries - 1) * self.pair + noise

    def min_lag(self, noise: int) -> int:
        return 2 + self.pair + noise

    @property
    def test_noise_max(self) -> int:
        """The noise length whose largest lag is ``test_lag_factor`` x the largest train lag (rounded down)."""
        return math.floor(self.test_lag_factor * self.max_lag(self.noise_max)) - self.max_lag(0)

    def noise_range(self, split: str) -> tuple[int, int]:
        return (self.noise_min, self.noise_max if split == "train" else self.test_noise_max)

    def lag_bin_edges(self) -> list[int]:
        """[0, x, 2x, ..] with x the largest train lag: bin 0 is the train range, the others extrapolate."""
        x = self.max_lag(self.noise_max)
        return [0] + [x * (b + 1) for b in range(math.ceil(self.test_lag_factor))]


def _tuple_code(t, base: int) -> int:
    code = 0
    for v in t:
        code = code * base + int(v)
    return code


def make_example(layout: MqarLayout, rng: np.random.Generator, split: str) -> dict[str, np.ndarray]:
    """tokens, targets, lags: (T,) int64; keys (n_kv, Lk); noise_keys (slots, Lk); near (slots,) bool."""
    Lk, Lv, Vk = layout.key_len, layout.value_len, layout.key_vocab
    real: dict[int, int] = {}
    while len(real) < layout.n_kv:  # distinct keys by rejection (the tuple space is large)
        k = rng.integers(0, Vk, Lk)
        real.setdefault(_tuple_code(k, Vk), len(real))
    keys = np.array([[(c // Vk**p) % Vk for p in reversed(range(Lk))] for c in real], dtype=np.int64)
    values = rng.integers(0, layout.value_vocab, (layout.n_kv, Lv))
    noise_len = int(rng.integers(*layout.noise_range(split), endpoint=True))
    slots, rest = divmod(noise_len, layout.pair)
    near = rng.random(slots) < layout.p_near
    noise_keys = rng.integers(0, Vk, (slots, Lk))
    noise_keys[near, :-1] = keys[rng.integers(0, layout.n_kv, int(near.sum())), :-1]  # a real key's prefix
    powers = Vk ** np.arange(Lk - 1, -1, -1, dtype=np.int64)
    real_codes = np.fromiter(real, dtype=np.int64)
    clash = np.isin(noise_keys @ powers, real_codes)
    while clash.any():  # a distractor never equals a real key: redraw the suffix (near) or the tuple
        noise_keys[clash & near, -1] = rng.integers(0, Vk, int((clash & near).sum()))
        noise_keys[clash & ~near] = rng.integers(0, Vk, (int((clash & ~near).sum()), Lk))
        clash = np.isin(noise_keys @ powers, real_codes)
    noise_vals = rng.integers(0, layout.value_vocab, (slots, Lv))
    order = rng.permutation(layout.n_kv)[: layout.n_queries]
    kb, vb = N_SPECIAL, N_SPECIAL + Vk
    memory = np.concatenate([keys + kb, values + vb], axis=1).reshape(-1)
    noise = np.concatenate(
        [np.concatenate([noise_keys + kb, noise_vals + vb], 1).reshape(-1), rng.integers(0, Vk, rest) + kb]
    )
    queries = np.concatenate([keys[order] + kb, values[order] + vb], axis=1).reshape(-1)
    tokens = np.concatenate([[BOS, MEM], memory, [NOISE], noise, [QRY], queries]).astype(np.int64)
    targets = np.full_like(tokens, IGNORE)
    lags = np.zeros_like(tokens)
    q0 = 4 + layout.n_kv * layout.pair + noise_len
    for j, i in enumerate(order):
        first_value = q0 + j * layout.pair + Lk
        pos = np.arange(first_value - 1, first_value - 1 + Lv)
        targets[pos] = tokens[pos + 1]
        lags[pos] = first_value - (2 + i * layout.pair + Lk)
    return {"tokens": tokens, "targets": targets, "lags": lags, "keys": keys, "noise_keys": noise_keys, "near": near}


def pad_right(rows: list[np.ndarray], length: int, fill: int) -> torch.Tensor:
    """(len(rows), length) int64 with each row's tail filled."""
    out = torch.full((len(rows), length), fill, dtype=torch.int64)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.as_tensor(row)
    return out


def lag_hits(
    logits: torch.Tensor, targets: torch.Tensor, lags: torch.Tensor, edges: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Correct and total target tokens per lag bin: logits (B, T, V), targets and lags (B, T) ->
    (hits (bins,), counts (bins,)) int64. Bin b holds lags in (edges[b], edges[b+1]]; larger lags the last."""
    mask = targets != IGNORE
    correct = (logits.argmax(-1) == targets)[mask].cpu()
    bins = torch.bucketize(lags[mask].cpu(), torch.tensor(edges[1:-1]), right=False)
    n = len(edges) - 1
    return torch.bincount(bins, correct.double(), minlength=n).long(), torch.bincount(bins, minlength=n)


def accuracy_report(hits: torch.Tensor, counts: torch.Tensor, edges: list[int]) -> dict[str, float]:
    """token_acc (pooled over all target tokens) and token_acc_lag_<lo>_<hi> / count_lag_<lo>_<hi> per bin
    (NaN for an empty bin)."""
    out = {"token_acc": float(hits.sum()) / max(int(counts.sum()), 1)}
    for b in range(len(edges) - 1):
        name = f"lag_{edges[b]}_{edges[b + 1]}"
        out[f"token_acc_{name}"] = float(hits[b]) / int(counts[b]) if counts[b] else float("nan")
        out[f"count_{name}"] = float(counts[b])
    return out
