"""The accumulated-rotations LM's token streams (rotations spec §7, E1): built once, cached with a checksum.

``load_corpus`` returns {"data_source", "tokenizer", "vocab_size", "train", "val"}: one continuous token
stream (documents concatenated WITHOUT separators: attention crosses document boundaries, rotations spec E1),
the first ``1 - val_fraction`` for training and the tail for validation (rotations spec E1, U15). Sources:

- ``synthetic``: ``rotations_corpus.synthetic_stream`` (already ids; no tokenizer), the offline default;
- ``english``: the installed English text (``rotations_corpus.find_english``), or, when none is installed,
  the synthetic stream with a warning (``data_source`` says which was used);
- ``openwebtext``: a local OpenWebText directory (``rotations_corpus.load_openwebtext``).

Text sources are tokenised with a byte-level BPE trained locally on the first ``bpe_docs`` documents
(``text_data.train_bpe``; its EOS token is in the vocabulary but never emitted). ``data_source`` labels the
corpus in every table, so substitute numbers never sit beside the paper's unlabelled.

Evaluation (rotations spec E1/U15): ``eval_lengths`` are the training context times every power of two up to
``max_factor``; ``eval_windows`` draws windows of L + 1 tokens from the validation stream at offsets drawn
from a generator seeded with 42 + L, so every model is scored on the same text.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch

from .data_cache import cached
from .rotations_corpus import (
    ENGLISH_ROOTS,
    SyntheticSpec,
    find_english,
    load_english,
    load_openwebtext,
    openwebtext_files,
    synthetic_stream,
)
from .text_data import train_bpe

log = logging.getLogger("seqmix.data")

PIPELINE_VERSION = 1  # bump when a source's output changes, so old caches are not reused
SOURCES = ("synthetic", "english", "openwebtext")
SYNTHETIC_LAW = ("vocab", "topics", "order", "contexts")  # the task options that are SyntheticSpec fields
SYNTHETIC = "synthetic long-stream (substitute)"
ENGLISH = "installed English text (substitute)"
OPENWEBTEXT = "OpenWebText"


def eval_lengths(context: int, max_factor: int) -> list[int]:
    """context * 2^k for k = 0 .. log2(max_factor): [128, 256, ..., 4096] for (128, 32)."""
    if max_factor < 1 or max_factor & (max_factor - 1):
        raise ValueError(f"eval_max_factor must be a power of two >= 1, got {max_factor}")
    return [context << k for k in range(max_factor.bit_length())]


def encode_concat(tok, docs: list[str]) -> torch.Tensor:
    """(tokens,) int32: every document's ids, concatenated with no separator."""
    ids: list[int] = []
    for enc in tok.encode_batch(docs):
        ids.extend(enc.ids)
    return torch.tensor(ids, dtype=torch.int32)


def split_stream(stream: torch.Tensor, val_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, val): the head and the last ``val_fraction`` of a stream."""
    cut = len(stream) - int(round(len(stream) * val_fraction))
    return stream[:cut], stream[cut:]


def _files_key(files: list[Path], root: Path | None = None) -> list:
    # a changed file (size) is a different corpus
    return [(str(f.relative_to(root)) if root else str(f), f.stat().st_size) for f in files]


def corpus_key(source: str, options: dict) -> dict:
    """What the cached corpus depends on: the source's inputs (files and sizes) and the build options."""
    key = {"version": PIPELINE_VERSION, "source": source, "val_fraction": options["val_fraction"]}
    if source == "synthetic":
        return {**key, **{k: options[k] for k in ("n_tokens", "seed", *SYNTHETIC_LAW)}}
    text = {"bpe_vocab": options["bpe_vocab"], "bpe_docs": options["bpe_docs"], "max_chars": options["max_chars"]}
    if source == "english":
        return {**key, **text, "files": _files_key(options["english_files"])}
    root = Path(options["owt_dir"])
    files = [Path(f) for fs in openwebtext_files(root).values() for f in fs]
    return {**key, **text, "max_docs": options["max_docs"], "files": _files_key(files, root)}


def _text_corpus(docs: list[str], label: str, options: dict) -> dict:
    if not docs:
        raise ValueError(f"{label}: no documents to build a corpus from")
    tok = train_bpe(docs[: options["bpe_docs"]], options["bpe_vocab"])
    train, val = split_stream(encode_concat(tok, docs), options["val_fraction"])
    vocab = torch.tensor(tok.get_vocab_size(), dtype=torch.int64)
    return {"data_source": label, "tokenizer": tok.to_str(), "vocab_size": vocab, "train": train, "val": val}


def build_corpus(source: str, options: dict) -> dict:
    """Build the corpus (no cache). ``options``: see ``RotationsLM``'s constructor."""
    if source == "synthetic":
        spec = SyntheticSpec(**{k: options[k] for k in SYNTHETIC_LAW})
        stream = torch.from_numpy(synthetic_stream(options["n_tokens"], options["seed"], spec))
        train, val = split_stream(stream, options["val_fraction"])
        vocab = torch.tensor(spec.vocab, dtype=torch.int64)
        return {"data_source": SYNTHETIC, "tokenizer": "", "vocab_size": vocab, "train": train, "val": val}
    if source == "english":
        docs = load_english(options["english_files"], options["max_chars"])
        return _text_corpus(docs, ENGLISH, options)
    if source == "openwebtext":
        docs = load_openwebtext(options["owt_dir"], options["max_docs"])
        if options["max_chars"] is not None:
            docs = _head_chars(docs, options["max_chars"])
        return _text_corpus(docs, OPENWEBTEXT, options)
    raise ValueError(f"source must be one of {SOURCES}, got {source!r}")


def _head_chars(docs: list[str], max_chars: int) -> list[str]:
    out, total = [], 0
    for d in docs:
        if total >= max_chars:
            break
        out.append(d)
        total += len(d)
    return out


@functools.lru_cache(maxsize=8)
def resolve_source(source: str, english_roots: tuple[str, ...] = ENGLISH_ROOTS) -> tuple[str, tuple[Path, ...]]:
    """(the source actually used, the English files): ``english`` without installed text falls back to
    ``synthetic`` with a warning. Cached: the roots are searched once per process, not per batch."""
    if source != "english":
        return source, ()
    files = tuple(find_english(english_roots))
    if not files:
        log.warning(
            "rotations_lm: no English text installed under %s (packages python3-doc, dict-gcide); "
            "using the synthetic stream",
            ", ".join(map(str, english_roots)),
        )
        return "synthetic", ()
    return source, files


@functools.lru_cache(maxsize=2)
def _load(source: str, frozen: tuple) -> dict:
    options = dict(frozen)
    options["english_files"] = list(options["english_files"])
    return cached(
        "rotations_lm", corpus_key(source, options), lambda: build_corpus(source, options), options["cache_dir"]
    )


def load_corpus(source: str, **options) -> dict:
    """The cached corpus (see the module docstring); ``options`` as ``build_corpus`` takes them, with
    ``english_roots`` in place of the English files."""
    used, files = resolve_source(source, tuple(options.pop("english_roots")))
    options["english_files"] = files
    return _load(used, tuple(sorted(options.items())))


def random_segments(stream: torch.Tensor, length: int, count: int, g: torch.Generator) -> tuple:
    """``count`` windows of length + 1 tokens at uniformly random offsets drawn from ``g`` (with replacement:
    rotations spec E1's training batches): inputs and targets, (count, length) int64 each."""
    room = len(stream) - length - 1
    if room < 0:
        raise ValueError(f"a stream of {len(stream)} tokens holds no window of {length} + 1 tokens")
    starts = torch.randint(0, room + 1, (count,), generator=g)
    w = stream[starts[:, None] + torch.arange(length + 1)[None, :]].long()
    return w[:, :-1], w[:, 1:]


def eval_windows(stream: torch.Tensor, length: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n windows of length + 1 tokens from a generator seeded with ``seed`` (42 + L in the task): the same
    windows for every model. Inputs and next-token targets, (n, length) int64 each."""
    return random_segments(stream, length, n, torch.Generator().manual_seed(seed))
