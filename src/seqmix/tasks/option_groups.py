"""Option groups the data-set tasks share (``seqmix.options.OptionGroup``): declared once here, taken by each
task as one parameter whose default instance holds that task's defaults; a config gives the fields flat.

- ``DataSplits``: the generator's seed and the split sizes (``data_seed``, ``train_size``, ``val_size``,
  ``test_size``);
- ``CappedSplits``: the same for a fixed data set (each size caps its split; null keeps all of it);
- ``Evaluation``: which split ``evaluate`` reads and its batch size (``eval_split``, ``eval_batch``);
- ``DataFiles``: where real data files are read (``data_dir``) and where a built set is cached (``cache_dir``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from ..options import NonNegInt, OptionGroup, OptPosInt, PosInt


@dataclass(frozen=True, kw_only=True)
class DataSplits(OptionGroup):
    data_seed: NonNegInt = 0
    train_size: PosInt = 2000
    val_size: PosInt = 200
    test_size: PosInt = 200

    def sizes(self) -> dict[str, int]:
        return {"train": self.train_size, "val": self.val_size, "test": self.test_size}


@dataclass(frozen=True, kw_only=True)
class CappedSplits(OptionGroup):
    data_seed: NonNegInt = 0
    train_size: OptPosInt = None
    val_size: OptPosInt = None
    test_size: OptPosInt = None

    def sizes(self) -> dict[str, int | None]:
        return {"train": self.train_size, "val": self.val_size, "test": self.test_size}


@dataclass(frozen=True, kw_only=True)
class Evaluation(OptionGroup):
    eval_split: Literal["test", "val"] = "test"
    eval_batch: PosInt = 64


@dataclass(frozen=True, kw_only=True)
class DataFiles(OptionGroup):
    data_dir: str | None = None
    cache_dir: str | None = None

    def directory(self) -> str | None:
        return os.fspath(self.data_dir) if self.data_dir else None

    def cache(self) -> str | None:
        return os.fspath(self.cache_dir) if self.cache_dir else None
