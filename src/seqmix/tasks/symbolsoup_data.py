"""SymbolSoup (sessa spec §3.1): a seeded generator re-implemented from the paper's and the spec's description.

One example (each element on its own line, letters inside a block separated by single spaces)::

    <bos> noise0 <sep1> S1 <sep2> noise1 <sep1> S2 <sep2> noise2 <sep> <label>

S1, S2 are one "left" and one "right" stylized block in random order; the label is the style pair,
``class = 5 * left + right`` (4 x 5 = 20 classes, chance 0.05). A style is a shuffle of the 16 letters a..p:
4 primaries (unigram weight 3), 4 secondaries (weight 2), the rest weight 1, preferred bigrams (x4 weight)
and weighted motifs (contiguous runs of a..p of length 3-5). Stylized blocks are a Markov chain with motif
insertion (p = 0.3) and per-letter flips (p = 0.03); noise blocks are i.i.d. uniform letters.

Tokenisation: every special is one token and every other character one token, space and newline included,
so an example of M letters has 2M + 13 tokens, in [min_tokens, max_tokens]. Ids: PAD 0, the 7 specials
1..7 (``<eos>`` and ``[MASK]`` reserved, unused), letters 8..23, space 24, newline 25.

Style tables come from fixed RNGs (123 for left, 456 for right), the same for every data seed, as in the
authors' description. Not bit-exact with the official TSVs (their generator is not vendored here): the draw
order is ours, and an example text that already occurred in any split is redrawn, so splits are disjoint.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

import torch

LETTERS = "abcdefghijklmnop"
SPECIALS = ("<bos>", "<sep1>", "<sep2>", "<sep>", "<label>", "<eos>", "[MASK]")
VOCAB = ("<pad>", *SPECIALS, *LETTERS, " ", "\n")
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
PAD = TOKEN_ID["<pad>"]
N_LEFT, N_RIGHT = 4, 5
NUM_CLASSES = N_LEFT * N_RIGHT
MOTIF_INSERT_PROB = 0.3
BIGRAM_STRENGTH = 3.0
NOISE_FLIP_PROB = 0.03
MOTIFS = tuple(LETTERS[i : i + n] for n in (3, 4, 5) for i in range(len(LETTERS) - n + 1))  # 14 + 13 + 12
SPLITS = ("train", "val", "test")
_TOKEN_RE = re.compile("|".join(re.escape(s) for s in SPECIALS) + "|.", re.S)


@dataclass(frozen=True)
class Style:
    """One style's tables, precomputed as cumulative weights for ``random.choices``."""

    primaries: str
    secondaries: str
    start_cum: tuple[float, ...]  # unigram (first token)
    next_cum: dict[str, tuple[float, ...]] = field(hash=False)  # prev letter -> P(tok | prev), unnormalised
    motif_cum: dict[int, tuple[tuple[str, ...], tuple[float, ...]]] = field(hash=False)  # max length -> motifs


def _cumulative(weights) -> tuple[float, ...]:
    out, total = [], 0.0
    for w in weights:
        total += w
        out.append(total)
    return tuple(out)


def make_style(order: list[str]) -> Style:
    """A style from one shuffle of the letters: primaries order[:4], secondaries order[4:8]."""
    P, S = order[:4], order[4:8]
    unigram = {c: 3.0 if c in P else 2.0 if c in S else 1.0 for c in LETTERS}
    preferred = set()
    for i in range(4):
        preferred |= {(P[i], P[(i + 1) % 4]), (P[i], P[i]), (S[i], S[i]), (P[i], S[i]), (S[i], P[i])}
    next_cum = {
        prev: _cumulative(unigram[t] * ((1 + BIGRAM_STRENGTH) if (prev, t) in preferred else 1.0) for t in LETTERS)
        for prev in LETTERS
    }
    weight = {m: 1 + 0.9 * len(set(m) & set(P)) + 0.5 * len(set(m) & set(S)) for m in MOTIFS}
    motif_cum = {}
    for n in (3, 4, 5):
        fit = tuple(m for m in MOTIFS if len(m) <= n)
        motif_cum[n] = (fit, _cumulative(weight[m] for m in fit))
    return Style("".join(P), "".join(S), _cumulative(unigram[c] for c in LETTERS), next_cum, motif_cum)


def make_styles(rng_seed: int, n: int) -> tuple[Style, ...]:
    rng = random.Random(rng_seed)
    styles = []
    for _ in range(n):
        order = list(LETTERS)
        rng.shuffle(order)
        styles.append(make_style(order))
    return tuple(styles)


LEFT_STYLES = make_styles(123, N_LEFT)
RIGHT_STYLES = make_styles(456, N_RIGHT)


def stylized_block(rng: random.Random, style: Style, length: int) -> list[str]:
    """``length`` letters: motif insertion with p = 0.3 when >= 3 letters remain, else a Markov step; then flips."""
    seq: list[str] = []
    while len(seq) < length:
        remaining = length - len(seq)
        if remaining >= 3 and rng.random() < MOTIF_INSERT_PROB:
            motifs, cum = style.motif_cum[min(remaining, 5)]
            seq.extend(rng.choices(motifs, cum_weights=cum)[0])
        else:
            cum = style.next_cum[seq[-1]] if seq else style.start_cum
            seq.append(rng.choices(LETTERS, cum_weights=cum)[0])
    seq = seq[:length]
    for i, c in enumerate(seq):
        if rng.random() < NOISE_FLIP_PROB:  # small symbol noise: a different uniform letter
            seq[i] = rng.choice(LETTERS.replace(c, ""))
    return seq


def letter_budget(min_tokens: int, max_tokens: int) -> tuple[int, int]:
    """The range of M (letters per example) whose token count 2M + 13 lies in [min_tokens, max_tokens]."""
    lo, hi = max(5, math.ceil((min_tokens - 13) / 2)), (max_tokens - 13) // 2
    if hi < lo:
        raise ValueError(f"min_tokens={min_tokens}, max_tokens={max_tokens}: no M >= 5 with 2M + 13 in range")
    return lo, hi


def block_lengths(rng: random.Random, min_tokens: int, max_tokens: int) -> tuple[int, int, int, int, int, bool]:
    """(noise0, noise1, noise2, left, right, left_first): 30-60% of the letters are noise, rest stylized."""
    M = rng.randint(*letter_budget(min_tokens, max_tokens))
    a = max(3, int(0.3 * M))
    noise = min(max(rng.randint(a, max(a, int(0.6 * M))), 3), M - 2)
    main = M - noise
    left = rng.randint(1, main - 1)
    n0 = rng.randint(1, noise - 2)
    n1 = rng.randint(1, noise - n0 - 1)
    return n0, n1, noise - n0 - n1, left, main - left, rng.random() < 0.5


def make_text(rng: random.Random, label: int, min_tokens: int, max_tokens: int) -> str:
    n0, n1, n2, n_left, n_right, left_first = block_lengths(rng, min_tokens, max_tokens)
    noise0, noise1, noise2 = ([rng.choice(LETTERS) for _ in range(n)] for n in (n0, n1, n2))
    left = stylized_block(rng, LEFT_STYLES[label // N_RIGHT], n_left)
    right = stylized_block(rng, RIGHT_STYLES[label % N_RIGHT], n_right)
    s1, s2 = (left, right) if left_first else (right, left)
    b = [" ".join(x) for x in (noise0, s1, noise1, s2, noise2)]
    return f"<bos>\n{b[0]}\n<sep1>\n{b[1]}\n<sep2>\n{b[2]}\n<sep1>\n{b[3]}\n<sep2>\n{b[4]}\n<sep> <label>"


def tokenize(text: str) -> list[int]:
    """Specials as one token each, every other character (space and newline included) as one token."""
    return [TOKEN_ID[t] for t in _TOKEN_RE.findall(text)]


def example_stats(ids: list[int]) -> tuple[int, int, int]:
    """(shorter stylized block length in letters, lag from the end of block 1 to the last token, same for
    block 2). A block's last letter sits two tokens before its ``<sep2>`` (a newline in between)."""
    sep1 = [i for i, t in enumerate(ids) if t == TOKEN_ID["<sep1>"]]
    sep2 = [i for i, t in enumerate(ids) if t == TOKEN_ID["<sep2>"]]
    letters = [(e - s - 2) // 2 for s, e in zip(sep1, sep2)]  # 2n - 1 chars and two newlines in between
    last = len(ids) - 1
    return min(letters), last - (sep2[0] - 2), last - (sep2[1] - 2)


def generate(seed: int, sizes: dict[str, int], min_tokens: int, max_tokens: int) -> dict[str, torch.Tensor]:
    """All splits from one ``random.Random(seed)`` stream, drawn train, val, test in that order.

    Returns per split ``{split}/tokens`` (sum of lengths,) uint8, ``{split}/offsets`` (N + 1,) int64,
    ``{split}/labels`` (N,) int64 and ``{split}/stats`` (N, 3) int64 (see ``example_stats``). Each split is
    balanced: N / 20 examples per class, in a shuffled order."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: dict[str, torch.Tensor] = {}
    for split in SPLITS:
        n = sizes[split]
        if n % NUM_CLASSES:
            raise ValueError(f"{split}_size={n}: must be a multiple of {NUM_CLASSES} (balanced classes)")
        labels = [k for k in range(NUM_CLASSES) for _ in range(n // NUM_CLASSES)]
        rng.shuffle(labels)
        tokens, offsets, stats = [], [0], []
        for label in labels:
            text = make_text(rng, label, min_tokens, max_tokens)
            while text in seen:  # redraw a duplicate so that no example sits in two splits
                text = make_text(rng, label, min_tokens, max_tokens)
            seen.add(text)
            ids = tokenize(text)
            if not min_tokens <= len(ids) <= max_tokens:  # 2M + 13 by construction; checked, not assumed
                raise AssertionError(f"example of {len(ids)} tokens outside [{min_tokens}, {max_tokens}]")
            tokens.extend(ids)
            offsets.append(len(tokens))
            stats.append(example_stats(ids))
        out[f"{split}/tokens"] = torch.tensor(tokens, dtype=torch.uint8)
        out[f"{split}/offsets"] = torch.tensor(offsets, dtype=torch.int64)
        out[f"{split}/labels"] = torch.tensor(labels, dtype=torch.int64)
        out[f"{split}/stats"] = torch.tensor(stats, dtype=torch.int64).reshape(-1, 3)
    return out


def decode(ids) -> str:
    return "".join(VOCAB[int(i)] for i in ids if int(i) != PAD)
