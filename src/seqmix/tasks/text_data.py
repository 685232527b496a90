"""Text corpora for the story LM (sessa spec §3.3, §7): the SimpleStories loader, a locally trained BPE tokenizer
and the token streams, cached with a checksum.

- ``load_simplestories(path)``: Hugging Face ``datasets`` reading a local directory of parquet files (any
  ``*train*.parquet`` / ``*test*.parquet`` under it, e.g. a clone of the hub repository), or the hub dataset
  ``SimpleStories/SimpleStories`` when no path is given and the network is up. The hub has train and test
  only; validation is every 100th train story (held out, never trained on).
- ``train_bpe(texts, vocab_size)``: a byte-level BPE (``tokenizers``) trained on the training split only,
  with one special token ``<|endoftext|>`` (EOS) put between stories.
- ``token_streams``: every split encoded and concatenated (story, EOS, story, EOS, ...) as int32 tensors,
  together with the tokenizer's JSON, cached under ``data_cache``.

``datasets`` and ``tokenizers`` are imported inside the functions so that ``import seqmix`` stays light.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch

from .file_checks import load_parquet, parquet_columns, row_origin

EOS = "<|endoftext|>"
HUB_NAME = "SimpleStories/SimpleStories"
SPLITS = ("train", "val", "test")


def _parquet_files(root: Path) -> dict[str, list[str]]:
    files = sorted(root.rglob("*.parquet"))
    by_split = {
        "train": [str(f) for f in files if "train" in f.name],
        "test": [str(f) for f in files if "test" in f.name],
    }
    if not by_split["train"] or not by_split["test"]:
        raise FileNotFoundError(
            f"{root}: expected parquet files with 'train' and 'test' in their names (as in the hub repository "
            f"{HUB_NAME}); found {[f.name for f in files]}"
        )
    return by_split


def _text_column(columns: Sequence[str], where: str) -> str:
    for name in ("story", "text"):
        if name in columns:
            return name
    raise KeyError(f"{where}: no 'story' or 'text' column (columns: {list(columns)})")


def _local_stories(files: list[str], hf_cache_dir: str | None) -> list[str]:
    """The story column of local parquet files; a damaged file, a missing column or a non-text row is a
    ValueError naming the file (and row)."""
    column = _text_column(parquet_columns(files[0]), files[0])
    values, rows = load_parquet(files, (column,), hf_cache_dir)
    for i, story in enumerate(values[column]):
        if not isinstance(story, str):
            raise ValueError(f"{row_origin(files, rows, i)}: {column} is {type(story).__name__}, not text")
    return values[column]


def load_simplestories(path: str | os.PathLike | None = None, hf_cache_dir: str | None = None) -> dict[str, list[str]]:
    """{"train", "val", "test"}: lists of story texts. ``path``: a local parquet directory; None: the hub."""
    import datasets

    if path is not None:
        files = _parquet_files(Path(path))
        train_all, test = (_local_stories(files[split], hf_cache_dir) for split in ("train", "test"))
    else:
        ds = datasets.load_dataset(HUB_NAME, cache_dir=hf_cache_dir)
        train_all = ds["train"][_text_column(ds["train"].column_names, HUB_NAME)]
        test = ds["test"][_text_column(ds["test"].column_names, HUB_NAME)]
    return {
        "train": [s for i, s in enumerate(train_all) if i % 100 != 0],
        "val": train_all[::100],
        "test": list(test),
    }


def train_bpe(texts: Sequence[str], vocab_size: int):
    """A byte-level BPE ``tokenizers.Tokenizer`` with ``vocab_size`` entries (EOS included), trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer, length=len(texts))
    return tok


def tokenizer_from_json(text: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_str(text)


def encode_stream(tok, texts: Sequence[str]) -> torch.Tensor:
    """(tokens,) int32: each story's ids followed by EOS."""
    eos = tok.token_to_id(EOS)
    ids: list[int] = []
    for enc in tok.encode_batch(list(texts)):
        ids.extend(enc.ids)
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.int32)


def token_streams(texts: dict[str, list[str]], vocab_size: int, data_source: str) -> dict:
    """Train a BPE on the train split and encode every split. Returns {"data_source": the corpus's label,
    "tokenizer": json, "vocab_size": () int64 (the trained size, at most ``vocab_size``: a corpus with few
    distinct words saturates below it), "<split>": (n,) int32, "<split>/stories": () int64}."""
    tok = train_bpe(texts["train"], vocab_size)
    out: dict = {
        "data_source": data_source,
        "tokenizer": tok.to_str(),
        "vocab_size": torch.tensor(tok.get_vocab_size(), dtype=torch.int64),
    }
    for split in SPLITS:
        out[split] = encode_stream(tok, texts[split])
        out[f"{split}/stories"] = torch.tensor(len(texts[split]), dtype=torch.int64)
    return out


def segments(stream: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping windows of a token stream: inputs (n, length) and next-token targets (n, length) int64,
    n = (len(stream) - 1) // length (the final partial segment is dropped)."""
    n = (len(stream) - 1) // length
    if n < 1:
        raise ValueError(f"a stream of {len(stream)} tokens holds no segment of {length} + 1 tokens")
    s = stream[: n * length + 1].long()
    return s[:-1].reshape(n, length), s[1:].reshape(n, length)
