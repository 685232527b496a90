"""LRA ListOps (b2s6 spec E7, §7): the TSV loader in the LRA/S4 layout and a seeded offline generator.

An expression nests the operators MIN, MAX, MED (median; of an even count, the floor of the mean of the two
middle values, as LRA's integer median does) and SM (sum mod 10) over the digits 0-9, e.g.
``[MAX 2 9 [MIN 4 7 ] 0 ]`` -> 9. The label (10 classes) is the expression's value.

- ``load_listops_tsv(directory)``: ``basic_train.tsv``, ``basic_val.tsv``, ``basic_test.tsv`` with columns
  ``Source`` and ``Target`` (the LRA release's ``listops-1000`` folder). Tokens follow S4's tokenizer: the
  parentheses of the release's sources are dropped and the rest split on whitespace.
- ``generate_listops(seed, sizes, ...)``: our own generator. Every split comes from one ``random.Random``
  stream (never Python's hash order, so it is deterministic across processes), each split has exactly N / 10
  examples per label, and an expression already drawn for any split is redrawn, so the splits are disjoint.
- ``evaluate_tokens`` re-computes a label from the tokens alone (tests check every generated label with it).
"""

from __future__ import annotations

import csv
import os
import random
from pathlib import Path

import torch

from .file_checks import parse_label, text_file_errors
from .seq_data import SPLITS, balanced_labels, pad_rows

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
CLOSE = "]"
VOCAB = ("<pad>", "<unk>", *(str(d) for d in range(10)), *OPERATORS, CLOSE)  # 17 ids, PAD = 0
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
UNK = TOKEN_ID["<unk>"]
NUM_CLASSES = 10
TSV_FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}


def apply_op(op: str, values: list[int]) -> int:
    """The value of one operator over its evaluated arguments (each 0-9)."""
    if not values:
        raise ValueError(f"{op} has no arguments")
    if op == "[MIN":
        return min(values)
    if op == "[MAX":
        return max(values)
    if op == "[SM":
        return sum(values) % 10
    if op == "[MED":
        s, m = sorted(values), len(values) // 2
        return s[m] if len(s) % 2 else (s[m - 1] + s[m]) // 2
    raise ValueError(f"unknown operator {op!r}")


def tokenize(source: str) -> list[str]:
    """S4's ListOps tokenisation: drop the parentheses, split on whitespace."""
    return source.replace("(", " ").replace(")", " ").split()


def evaluate_tokens(tokens: list[str]) -> int:
    """The value of a tokenised expression (a stack machine; raises on malformed input)."""
    stack: list[tuple[str, list[int]]] = [("", [])]
    for tok in tokens:
        if tok in OPERATORS:
            stack.append((tok, []))
        elif tok == CLOSE:
            if len(stack) < 2:
                raise ValueError("']' without an open operator")
            op, args = stack.pop()
            stack[-1][1].append(apply_op(op, args))
        elif tok.isdigit() and len(tok) == 1:
            stack[-1][1].append(int(tok))
        else:
            raise ValueError(f"unknown token {tok!r}")
    if len(stack) != 1 or len(stack[0][1]) != 1:
        raise ValueError("unbalanced expression or more than one top-level value")
    return stack[0][1][0]


def _draw_tree(rng: random.Random, depth: int, max_depth: int, max_args: int, p_op: float) -> list[str]:
    """Tokens of a random (sub)expression; an operator node at depth 0 always, then with probability p_op."""
    if depth > 0 and (depth >= max_depth or rng.random() >= p_op):
        return [str(rng.randrange(10))]
    tokens = [rng.choice(OPERATORS)]
    for _ in range(rng.randint(2, max_args)):
        tokens += _draw_tree(rng, depth + 1, max_depth, max_args, p_op)
    return tokens + [CLOSE]


def draw_expression(rng: random.Random, max_depth: int, max_args: int, min_len: int, max_len: int, p_op: float):
    """Tokens of an expression with min_len <= len <= max_len tokens (rejection; gives up after 10000 tries)."""
    for _ in range(10000):
        tokens = _draw_tree(rng, 0, max_depth, max_args, p_op)
        if min_len <= len(tokens) <= max_len:
            return tokens
    raise ValueError(
        f"listops: no expression of {min_len}..{max_len} tokens in 10000 draws with max_depth={max_depth}, "
        f"max_args={max_args}, p_op={p_op}: widen the length range or raise p_op/max_args/max_depth"
    )


def generate_listops(
    seed: int,
    sizes: dict[str, int],
    max_depth: int = 4,
    max_args: int = 5,
    min_len: int = 10,
    max_len: int = 256,
    p_op: float = 0.25,
) -> dict:
    """Balanced, disjoint splits (see the module docstring): {split}/x (N, max_len) int16, lengths, y, stats
    ((N, 2) int64: the expression's depth and its number of operators)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: dict = {"data_source": "listops-generator (substitute)"}
    for split in SPLITS:
        quota = balanced_labels(sizes[split], NUM_CLASSES, rng, f"listops {split}_size")
        need = [quota.count(k) for k in range(NUM_CLASSES)]
        by_label: list[list[list[str]]] = [[] for _ in range(NUM_CLASSES)]
        for _ in range(2000 * max(1, sizes[split])):
            if not any(need):
                break
            tokens = draw_expression(rng, max_depth, max_args, min_len, max_len, p_op)
            label, text = evaluate_tokens(tokens), " ".join(tokens)
            if need[label] and text not in seen:
                seen.add(text)
                by_label[label].append(tokens)
                need[label] -= 1
        if any(need):
            raise ValueError(f"listops {split}: could not fill every label (missing {need}); widen the settings")
        exprs = [by_label[k].pop() for k in quota]  # the shuffled quota order gives a shuffled split
        x, lengths = pad_rows([[TOKEN_ID[t] for t in e] for e in exprs], max_len)
        out[f"{split}/x"], out[f"{split}/lengths"] = x, lengths
        out[f"{split}/y"] = torch.tensor(quota, dtype=torch.int64)
        out[f"{split}/stats"] = torch.tensor([expression_stats(e) for e in exprs], dtype=torch.int64).reshape(-1, 2)
    return out


def expression_stats(tokens: list[str]) -> tuple[int, int]:
    """(nesting depth, number of operators)."""
    depth = deepest = ops = 0
    for t in tokens:
        if t in OPERATORS:
            depth, ops = depth + 1, ops + 1
            deepest = max(deepest, depth)
        elif t == CLOSE:
            depth -= 1
    return deepest, ops


def load_listops_tsv(directory: str | os.PathLike, max_len: int = 2048) -> dict:
    """The LRA ListOps splits from ``directory`` (see the module docstring); rows longer than ``max_len``
    tokens are truncated (S4's l_max), unknown tokens map to <unk>."""
    root = Path(directory)
    out: dict = {"data_source": "lra-listops"}
    for split, name in TSV_FILES.items():
        path = root / name
        if not path.exists():
            raise FileNotFoundError(f"{path}: LRA ListOps split missing (expected {sorted(TSV_FILES.values())})")
        rows, labels = [], []
        with text_file_errors(path), open(path, newline="") as f:
            reader = csv.DictReader(f, delimiter="\t")
            if not reader.fieldnames or not {"Source", "Target"} <= set(reader.fieldnames):
                raise KeyError(f"{path}: expected the columns Source and Target, got {reader.fieldnames}")
            for i, rec in enumerate(reader):
                if rec["Source"] is None or rec["Target"] is None:
                    raise ValueError(f"{path}: row {i} lacks the Source or Target field")
                rows.append([TOKEN_ID.get(t, UNK) for t in tokenize(rec["Source"])][:max_len])
                labels.append(parse_label(rec["Target"], NUM_CLASSES, f"{path}: row {i}"))
        if not labels:  # a header alone: a download cut after its first line
            raise ValueError(f"{path}: no rows after the header (an empty split)")
        out[f"{split}/x"], out[f"{split}/lengths"] = pad_rows(rows, max_len)
        out[f"{split}/y"] = torch.tensor(labels, dtype=torch.int64)
    return out
