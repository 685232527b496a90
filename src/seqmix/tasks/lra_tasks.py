"""The B2S6 classification tasks (b2s6 spec E6, E7, §7) over the data sets of the ``lra_*`` and ``image_data``
modules, registered as ``lra_listops``, ``lra_text``, ``lra_retrieval``, ``lra_image`` (also sCIFAR, E6) and
``lra_pathfinder`` (Path-X with ``resolution: 128``).

``source`` picks the data: the offline substitute by default, or the real LRA/CIFAR files from ``data_dir``.
Each set is built once per (source, seed, sizes, settings) and cached with a checksum (``data_cache``); a key
also holds a fingerprint of the files read (names and sizes), so a changed directory is a different set.
``data_source`` says what a result was trained on, so a table never shows substitute numbers as LRA's.

Batches: token tasks give (B, L) int64 ids (PAD 0; right-padded, or left-padded with ``pad_side: left`` for
``last`` pooling), retrieval (B, 2, L) int64 (a two-document model is needed), pixel tasks (B, L, C) float
pixels scaled to [0, 1] and standardised by the train split's mean and std (b2s6 spec §5 item 17). Targets: (B,).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F

from ..options import Opt, PosInt, grouped
from ..registry import register_task
from .base import Task
from .data_cache import cached
from .image_data import load_images
from .lra_listops import VOCAB as LISTOPS_VOCAB
from .lra_listops import generate_listops, load_listops_tsv
from .lra_pathfinder import generate_pathfinder, load_pathfinder_dir
from .lra_retrieval import generate_pairs, load_aan
from .lra_text import generate_sentiment, load_imdb
from .option_groups import DataFiles, DataSplits, Evaluation
from .sampling import epoch_indices
from .seq_data import BYTE_VOCAB
from .text_sources import find_text_files

DATA_VERSION = 1  # bump when a generator's output changes, so old caches are not reused
BUILDERS = {
    "listops": generate_listops,
    "listops_tsv": load_listops_tsv,
    "sentiment": generate_sentiment,
    "imdb": load_imdb,
    "pairs": generate_pairs,
    "aan": load_aan,
    "images": load_images,
    "pathfinder": generate_pathfinder,
    "pathfinder_dir": load_pathfinder_dir,
}


def fingerprint(paths) -> list:
    """(name, size) of every file under the given directories or of the given files: a cache-key ingredient."""
    out = []
    for p in paths:
        p = Path(p)
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
        out += [(str(f), f.stat().st_size) for f in files]
    return out


@functools.lru_cache(maxsize=8)
def load_set(builder: str, args_json: str, extra_json: str, cache_dir: str | None) -> dict:
    """BUILDERS[builder](**args), read back from the checksummed cache when built before (``extra``: the
    fingerprint of the inputs read, part of the key only)."""
    args = json.loads(args_json)
    key = {"version": DATA_VERSION, "builder": builder, "args": args, "inputs": json.loads(extra_json)}
    return cached(f"b2s6_{builder}", key, lambda: BUILDERS[builder](**args), cache_dir)


def _text_inputs() -> list:
    return [(c, str(p), p.stat().st_size) for c, p in find_text_files()]


class ClassificationSet(Task):
    """Shared batching and evaluation; subclasses set ``builder``, ``args``, ``inputs`` and the sizes."""

    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("accuracy", "loss", "chance")}
    n_classes: int = 2
    pixels = False
    builder: str
    args: dict
    inputs: list
    pad_side = "right"
    task_name: ClassVar[str]  # the registered name, also the sampling stream's name (epoch_indices)

    def _setup(self, files: DataFiles, evaluation: Evaluation, dtype) -> None:
        self.cache_dir = files.cache()
        self.eval_split, self.eval_batch, self.dtype = evaluation.eval_split, evaluation.eval_batch, dtype
        self.d_out = self.n_classes

    @property
    def data(self) -> dict:
        return load_set(self.builder, json.dumps(self.args, sort_keys=True), json.dumps(self.inputs), self.cache_dir)

    @property
    def data_source(self) -> str:
        return self.data["data_source"]

    def _inputs(self, split: str, idx: torch.Tensor) -> torch.Tensor:
        x = self.data[f"{split}/x"][idx]
        if self.pixels:
            mean, std = self._pixel_stats()
            return ((x.float() / 255.0 - mean) / std).to(self.dtype)
        x = x.long()
        if self.pad_side == "left" and f"{split}/lengths" in self.data:
            n = self.data[f"{split}/lengths"][idx]
            L = x.shape[-1]
            shift = (torch.arange(L) - (L - n)[..., None]) % L  # row i rolled right by L - len_i
            x = torch.gather(x, -1, shift)
        return x

    @functools.cached_property
    def _stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-channel mean and std (C,) of the train pixels in [0, 1], summed in chunks (CIFAR: 45k x 1024 x 3)."""
        x = self.data["train/x"]
        total = torch.zeros(x.shape[-1], dtype=torch.float64)
        squares = torch.zeros_like(total)
        for i in range(0, len(x), 4096):
            chunk = x[i : i + 4096].double() / 255.0
            total += chunk.sum(dim=(0, 1))
            squares += (chunk * chunk).sum(dim=(0, 1))
        n = x.shape[0] * x.shape[1]
        mean = total / n
        std = ((squares - n * mean * mean) / max(n - 1, 1)).clamp_min(0).sqrt()
        return mean.float(), std.float().clamp_min(1e-6)

    def _pixel_stats(self):
        return self._stats

    def size(self, split: str) -> int:
        return len(self.data[f"{split}/y"])

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = epoch_indices(f"{self.task_name}/train", self.size("train"), seed, step, rank, size)
        return self._inputs("train", idx), self.data["train/y"][idx]

    def split_set(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.arange(self.size(split))
        return self._inputs(split, idx), self.data[f"{split}/y"]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.split_set(self.eval_split)

    def influence_anchors(self, n: int) -> torch.Tensor | None:
        """Right-padded token rows: each row's last real token (pixel rows and left padding end at T-1)."""
        x = self.test_set()[0][:n]
        if self.pixels or self.pad_side != "right" or x.dim() != 2:
            return None
        return ((x != 0).sum(-1) - 1).clamp_min(0)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """pred: (B, n_classes) logits; mean cross-entropy."""
        return F.cross_entropy(pred.float(), target)

    def evaluate(self, model: torch.nn.Module) -> dict:
        """Accuracy and cross-entropy on the evaluation split; chance = the majority-class share."""
        x, y = self.test_set()
        logits = self.predict(model, x, self.eval_batch)
        majority = torch.bincount(y, minlength=self.n_classes).max() / len(y)
        return {
            "accuracy": float((logits.argmax(-1) == y).double().mean()),
            "loss": float(F.cross_entropy(logits, y)),
            "chance": float(majority),
        }


@register_task("lra_listops")
class LRAListOps(ClassificationSet):
    """ListOps (10 classes): (B, max_len) int64 ids of the 17-token vocabulary."""

    example_options: ClassVar[dict] = {
        "train_size": 20,
        "val_size": 10,
        "test_size": 10,
        "max_len": 32,
        "min_len": 5,
        "max_depth": 2,
    }
    example_model: ClassVar[dict] = {
        "name": "lra_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "s4d", "d_state": 4},
    }

    task_name = "lra_listops"
    at_most: ClassVar[dict] = {"min_len": "max_len"}  # checked on every leaf before any job (config.leaf_rules)

    n_classes = 10

    memory: ClassVar[dict[str, str]] = {
        "token rows (examples, max_len) int16 and their strings (LRA release: 100000)": (
            "(100000 if source == 'lra' else train_size + val_size + test_size) * max_len * 16"
        ),
        "the evaluation split (examples, max_len) int64": (
            "(2000 if source == 'lra' else test_size if eval_split == 'test' else val_size) * max_len * 16"
        ),
        "a training batch (train.batch, max_len) int64": "(train.batch or 1) * max_len * 16",
    }

    @grouped
    def __init__(
        self,
        *,
        source: Literal["generated", "lra"] = "generated",
        files: DataFiles = DataFiles(),
        splits: DataSplits = DataSplits(),
        max_depth: PosInt = 4,
        max_args: PosInt = 5,
        min_len: PosInt = 10,
        max_len: PosInt = 256,
        pad_side: Literal["right", "left"] = "right",
        evaluation: Evaluation = Evaluation(),
        dtype: torch.dtype = torch.float32,
    ):
        if source == "lra":
            if not files.data_dir:
                raise ValueError("lra_listops: source 'lra' needs data_dir (the folder of basic_*.tsv)")
            self.builder, self.args = "listops_tsv", {"directory": files.directory(), "max_len": max_len}
            self.inputs = fingerprint([files.data_dir])
        else:
            self.builder, self.inputs = "listops", []
            self.args = {
                "seed": splits.data_seed,
                "sizes": splits.sizes(),
                **{"max_depth": max_depth, "max_args": max_args, "min_len": min_len, "max_len": max_len},
            }
        self.vocab_size, self.seq_len, self.pad_side = len(LISTOPS_VOCAB), max_len, pad_side
        self._setup(files, evaluation, dtype)

    def model_inputs(self) -> dict:
        return {"vocab_size": self.vocab_size, "d_out": self.d_out, "seq_len": self.seq_len}


@register_task("lra_text")
class LRAText(ClassificationSet):
    """Byte-level sentiment (2 classes): (B, max_len) int64 ids, byte + 1 (PAD 0, 257 ids)."""

    example_options: ClassVar[dict] = {
        "source": "procedural",
        "train_size": 20,
        "val_size": 10,
        "test_size": 10,
        "max_len": 128,
    }
    example_model: ClassVar[dict] = {
        "name": "lra_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "s4d", "d_state": 4},
    }

    task_name = "lra_text"

    memory: ClassVar[dict[str, str]] = {
        "byte rows (examples, max_len) int16 and the documents (IMDB: 50000)": (
            "(50000 if source == 'imdb' else train_size + val_size + test_size) * max_len * 16"
        ),
        "the evaluation split (examples, max_len) int64": (
            "(25000 if source == 'imdb' else test_size if eval_split == 'test' else val_size) * max_len * 16"
        ),
        "a training batch (train.batch, max_len) int64": "(train.batch or 1) * max_len * 16",
    }

    @grouped
    def __init__(
        self,
        *,
        source: Literal["auto", "installed", "procedural", "imdb"] = "auto",
        files: DataFiles = DataFiles(),
        splits: DataSplits = DataSplits(),
        max_len: PosInt = 512,
        n_markers: PosInt = 5,
        pad_side: Literal["right", "left"] = "right",
        evaluation: Evaluation = Evaluation(),
        dtype: torch.dtype = torch.float32,
    ):
        if source == "imdb":
            if not files.data_dir:
                raise ValueError("lra_text: source 'imdb' needs data_dir (aclImdb folders or imdb parquet files)")
            self.builder, self.inputs = "imdb", fingerprint([files.data_dir])
            self.args = {"directory": files.directory(), "max_len": max_len, "seed": splits.data_seed}
        else:
            self.builder = "sentiment"
            self.inputs = _text_inputs() if source != "procedural" else []
            if source == "installed" and not self.inputs:
                raise FileNotFoundError(f"{self.task_name}: source 'installed' but no installed text was found")
            self.args = {
                "seed": splits.data_seed,
                "sizes": splits.sizes(),
                **{"max_len": max_len, "n_markers": n_markers, "procedural": source == "procedural"},
            }
        self.vocab_size, self.seq_len, self.pad_side = BYTE_VOCAB, max_len, pad_side
        self._setup(files, evaluation, dtype)

    def model_inputs(self) -> dict:
        return {"vocab_size": self.vocab_size, "d_out": self.d_out, "seq_len": self.seq_len}


@register_task("lra_retrieval")
class LRARetrieval(ClassificationSet):
    """Document matching (2 classes): (B, 2, max_len) int64 byte ids per pair, for a two-tower model."""

    example_options: ClassVar[dict] = {
        "source": "procedural",
        "train_size": 20,
        "val_size": 10,
        "test_size": 10,
        "max_len": 64,
    }
    example_model: ClassVar[dict] = {
        "name": "lra_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "s4d", "d_state": 4},
    }

    task_name = "lra_retrieval"

    memory: ClassVar[dict[str, str]] = {
        "document pairs (examples, 2, max_len) int16 and the documents (AAN: 182613)": (
            "(182613 if source == 'aan' else train_size + val_size + test_size) * 2 * max_len * 16"
        ),
        "the evaluation split (examples, 2, max_len) int64": (
            "(18090 if source == 'aan' else test_size if eval_split == 'test' else val_size) * 2 * max_len * 16"
        ),
        "a training batch (train.batch, 2, max_len) int64": "(train.batch or 1) * 2 * max_len * 16",
    }

    @grouped
    def __init__(
        self,
        *,
        source: Literal["auto", "installed", "procedural", "aan"] = "auto",
        files: DataFiles = DataFiles(),
        splits: DataSplits = DataSplits(),
        max_len: PosInt = 256,
        n_templates: Annotated[int, Opt(minimum=2)] = 8,
        evaluation: Evaluation = Evaluation(),
        dtype: torch.dtype = torch.float32,
    ):
        if source == "aan":
            if not files.data_dir:
                raise ValueError("lra_retrieval: source 'aan' needs data_dir (the folder of new_aan_pairs.*.tsv)")
            self.builder, self.inputs = "aan", fingerprint([files.data_dir])
            self.args = {"directory": files.directory(), "max_len": max_len}
        else:
            self.builder = "pairs"
            self.inputs = _text_inputs() if source != "procedural" else []
            if source == "installed" and not self.inputs:
                raise FileNotFoundError(f"{self.task_name}: source 'installed' but no installed text was found")
            self.args = {
                "seed": splits.data_seed,
                "sizes": splits.sizes(),
                **{"max_len": max_len, "n_templates": n_templates, "procedural": source == "procedural"},
            }
        self.vocab_size, self.seq_len = BYTE_VOCAB, max_len
        self._setup(files, evaluation, dtype)

    def model_inputs(self) -> dict:
        return {"vocab_size": self.vocab_size, "d_out": self.d_out, "seq_len": self.seq_len, "n_documents": 2}
