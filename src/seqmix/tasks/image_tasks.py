"""The B2S6 pixel-sequence tasks: ``lra_image`` (LRA Image and sCIFAR, b2s6 spec E6/E7) and ``lra_pathfinder``
(Pathfinder, and Path-X with ``resolution: 128``), on ``lra_tasks.ClassificationSet``.

``lra_image`` ``source``: ``auto`` (Fashion-MNIST when its idx files are found, else scikit-learn digits: the
offline substitutes of b2s6 spec §7), ``digits``, ``fashion-mnist`` or ``cifar10`` (the python-pickle batches in
``data_dir``); ``channels`` 1 (grayscale, the spec's sCIFAR and LRA Image) or 3 (CIFAR colour);
``image_size`` resizes bilinearly (digits 8x8 -> 16 or 32 for L = 256 or 1024). ``lra_pathfinder``
``source``: ``generated`` (our procedural generator) or ``lra`` (a ``curv_*`` folder of the LRA release in
``data_dir``). Inputs (B, L, C) float, standardised by the train split's per-channel mean and std.
"""

from __future__ import annotations

import math
import os
from typing import ClassVar, Literal

import torch

from ..options import NonNegInt, OptPosInt, PosInt, grouped
from ..registry import register_task
from .image_data import find_fashion_mnist
from .lra_tasks import ClassificationSet, fingerprint
from .option_groups import CappedSplits, DataFiles, DataSplits, Evaluation


@register_task("lra_image")
class LRAImage(ClassificationSet):
    """10-class images as (B, H*W, channels) float pixel sequences."""

    example_options: ClassVar[dict] = {
        "source": "digits",
        "image_size": 8,
        "train_size": 20,
        "val_size": 10,
        "test_size": 10,
    }
    example_model: ClassVar[dict] = {
        "name": "lra_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "s4d", "d_state": 4},
    }

    task_name = "lra_image"

    n_classes = 10
    pixels = True

    memory: ClassVar[dict[str, str]] = {
        "raw images and their split copies (CIFAR-10: 60000 x 3072 B, Fashion-MNIST: 70000 x 784)": (
            "3 * (60000 * 3072 if source == 'cifar10' else 70000 * 784)"
        ),
        "pixel sequences (examples, image_size**2, channels), resized in float32": (
            "((train_size or 54000) + (val_size or 6000) + (test_size or 10000)) * (image_size or 32) ** 2 * "
            "channels * 5"
        ),
        "the evaluation split as float pixels": (
            "((test_size or 10000) if eval_split == 'test' else (val_size or 6000)) * (image_size or 32) ** "
            "2 * channels * 12"
        ),
        "a training batch as float pixels": "(train.batch or 1) * (image_size or 32) ** 2 * channels * 12",
    }

    @grouped
    def __init__(
        self,
        *,
        source: Literal["auto", "digits", "fashion-mnist", "cifar10"] = "auto",
        files: DataFiles = DataFiles(),
        splits: CappedSplits = CappedSplits(),
        channels: Literal[1, 3] = 1,
        image_size: OptPosInt = None,
        evaluation: Evaluation = Evaluation(),
        dtype: torch.dtype = torch.float32,
    ):
        directory = files.directory()
        if source in ("auto", "fashion-mnist"):
            found = find_fashion_mnist(directory)
            directory = os.fspath(found) if found else directory
        self.builder, self.inputs = "images", fingerprint([directory] if directory else [])
        self.args = {
            "source": source,
            "directory": directory,
            "channels": channels,
            "image_size": image_size,
            "seed": splits.data_seed,
            "caps": splits.sizes(),
        }
        self.channels, self.image_size = channels, image_size
        self._setup(files, evaluation, dtype)

    @property
    def seq_len(self) -> int:
        return int(self.data["train/x"].shape[1])

    def model_inputs(self) -> dict:
        return {"d_in": self.channels, "d_out": self.d_out, "seq_len": self.seq_len}


@register_task("lra_pathfinder")
class LRAPathfinder(ClassificationSet):
    """Are the two dots joined? (B, resolution**2, 1) float pixel sequences, 2 classes."""

    example_options: ClassVar[dict] = {"resolution": 16, "train_size": 20, "val_size": 10, "test_size": 10}
    example_model: ClassVar[dict] = {
        "name": "lra_classifier",
        "d_model": 8,
        "n_layers": 1,
        "mixer": {"name": "s4d", "d_state": 4},
    }

    task_name = "lra_pathfinder"

    pixels = True

    memory: ClassVar[dict[str, str]] = {
        "images (examples, resolution**2): drawn with Python pixel lists, stored uint8 (LRA: 200000 read)": (
            "200000 * resolution ** 2 * 3 if source == 'lra' else "
            "(train_size + val_size + test_size) * resolution ** 2 * 10"
        ),
        "the evaluation split as float pixels": (
            "(20000 if source == 'lra' else test_size if eval_split == 'test' else val_size) * resolution ** 2 * 12"
        ),
        "a training batch as float pixels": "(train.batch or 1) * resolution ** 2 * 12",
    }

    @grouped
    def __init__(
        self,
        *,
        source: Literal["generated", "lra"] = "generated",
        files: DataFiles = DataFiles(),
        splits: DataSplits = DataSplits(),
        resolution: PosInt = 32,
        path_len: OptPosInt = None,
        n_distractors: NonNegInt = 2,
        evaluation: Evaluation = Evaluation(),
        dtype: torch.dtype = torch.float32,
    ):
        data_dir = files.data_dir
        if source == "lra":
            if not data_dir:
                raise ValueError(
                    "lra_pathfinder: source 'lra' needs data_dir (e.g. pathfinder32/curv_contour_length_14)"
                )
            self.builder, self.inputs = "pathfinder_dir", fingerprint([os.path.join(data_dir, "metadata")])
            self.args = {"directory": files.directory(), "seed": splits.data_seed}
        else:
            self.builder, self.inputs = "pathfinder", []
            self.args = {
                "seed": splits.data_seed,
                "sizes": splits.sizes(),
                **{"size": resolution, "path_len": path_len, "n_distractors": n_distractors},
            }
        self.seq_len, self.resolution, self.data_dir = resolution * resolution, resolution, data_dir
        self._setup(files, evaluation, dtype)

    @property
    def data(self) -> dict:
        """The set, its images checked against ``resolution`` (a release folder holds one size of its own)."""
        data = super().data
        if data["train/x"].shape[1] != self.seq_len:
            side = math.isqrt(data["train/x"].shape[1])
            raise ValueError(
                f"lra_pathfinder: resolution {self.resolution}, but the images in {self.data_dir} are {side}x{side}; "
                f"set resolution: {side}"
            )
        return data

    def model_inputs(self) -> dict:
        return {"d_in": 1, "d_out": self.d_out, "seq_len": self.seq_len}
