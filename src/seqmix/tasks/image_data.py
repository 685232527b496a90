"""Pixel-sequence image sets for sCIFAR (b2s6 spec E6) and LRA Image (E7), with offline substitutes (§7).

Sources (``load_images(source, ...)``):

- ``cifar10``: the python-pickle batches ``data_batch_1`` .. ``data_batch_5`` and ``test_batch`` of the
  CIFAR-10 release in a local directory (each a dict with ``b"data"`` (10000, 3072) uint8, the R, G and B
  planes of a 32x32 image one after the other, and ``b"labels"``).
- ``fashion-mnist``: the idx files (gzip or not) ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``; Debian's ``dataset-fashion-mnist`` package puts
  them in ``/usr/share/datasets/fashion-mnist`` (``$FASHION_MNIST_DIR`` or an explicit directory win).
- ``digits``: scikit-learn's bundled ``load_digits`` data (1797 8x8 images with values 0-16, rescaled to 0-255),
  read from its file without importing sklearn.
- ``auto``: Fashion-MNIST when its files are found, else digits (the offline default).

Every source gives ``{split}/x`` (N, H*W, C) uint8, a row-major pixel sequence with C = 1 (grayscale, PIL's
``L`` weights 0.299/0.587/0.114, as torchvision's Grayscale) or C = 3 (CIFAR colour), and ``{split}/y``.
``image_size`` resizes bilinearly (the spec's upsampling of digits to 16x16 or 32x32). Validation is a seeded
10% of the training images (CIFAR: 45k/5k/10k as in S4); digits, with no official test set, are split 80/10/10
within each class.
``data_source`` names the source, e.g. "fashion-mnist (substitute)".
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import pickle
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .seq_data import holdout, stratified_split, subsample

CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"
FASHION_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
FASHION_DIRS = ("/usr/share/datasets/fashion-mnist", "/usr/share/dataset-fashion-mnist")
DATA_SOURCES = {
    "cifar10": "cifar10",
    "fashion-mnist": "fashion-mnist (substitute)",
    "digits": "sklearn-digits (substitute)",
}
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """An idx file (plain, or gzip-compressed: detected by its magic bytes) as an array of its declared shape."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError; a cut stream an EOFError
            raise ValueError(f"{path}: a damaged gzip file ({type(e).__name__}: {e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an idx file (magic {raw[:4].hex()})")
    ndim = raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated idx header ({ndim} dimensions declared, {len(raw)} bytes)")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    if any(d < 0 for d in dims):
        raise ValueError(f"{path}: not an idx file (negative dimension in {dims})")
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    count = int(np.prod(dims)) if dims else 1
    if len(raw) - 4 - 4 * ndim < count * dtype.itemsize:
        raise ValueError(f"{path}: truncated idx file ({dims} of {dtype} declared)")
    return (
        np.frombuffer(raw, dtype=dtype, count=count, offset=4 + 4 * ndim).reshape(dims).astype(dtype.newbyteorder("="))
    )


def find_fashion_mnist(directory: str | os.PathLike | None = None) -> Path | None:
    """The first of (``directory``, ``$FASHION_MNIST_DIR``, the Debian locations) holding all four idx files."""
    candidates = [directory, os.environ.get("FASHION_MNIST_DIR"), *FASHION_DIRS]
    names = [n for pair in FASHION_FILES.values() for n in pair]
    for cand in candidates:
        if not cand:
            continue
        missing = [n for n in names if _idx_file(Path(cand), n) is None]
        if not missing:
            return Path(cand)
        if len(missing) < len(names):  # a damaged install: never fall back to digits without a word
            raise FileNotFoundError(f"{cand}: Fashion-MNIST is incomplete, missing {', '.join(missing)} (.gz or not)")
    return None


def _idx_file(root: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (root / name).is_file():
            return root / name
    return None


def load_fashion_mnist(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"train", "test"}: (images (N, 28, 28, 1) uint8, labels (N,) int64)."""
    root = Path(directory)
    out = {}
    for split, (img_name, lab_name) in FASHION_FILES.items():
        img_path, lab_path = _idx_file(root, img_name), _idx_file(root, lab_name)
        if img_path is None or lab_path is None:
            raise FileNotFoundError(f"{root}: missing {img_name}[.gz] or {lab_name}[.gz] (Fashion-MNIST idx files)")
        images, labels = read_idx(img_path), read_idx(lab_path)
        if images.dtype != np.uint8 or images.ndim != 3:
            raise ValueError(f"{img_path}: images are {images.dtype} {images.shape}; Fashion-MNIST has (N, H, W) uint8")
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"{lab_path}: labels are {labels.dtype} {labels.shape}; expected (N,) integers")
        if labels.shape != images.shape[:1]:
            raise ValueError(f"{img_path}: images {images.shape} do not match labels {labels.shape} of {lab_path}")
        if not len(labels):
            raise ValueError(f"{img_path}: no images (an empty split)")
        if len(labels) and (labels.min() < 0 or labels.max() > 9):
            bad = int(np.flatnonzero((labels < 0) | (labels > 9))[0])
            raise ValueError(f"{lab_path}: label {int(labels[bad])} at row {bad} is outside the 10 classes 0..9")
        out[split] = (images.astype(np.uint8)[..., None], labels.astype(np.int64))
    return out


# What a CIFAR-10 batch pickle may name: numpy's array reconstruction, nothing else. pickle.load of an arbitrary
# file runs any callable the file names (a crafted "batch" ran code here before).
_CIFAR_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _CIFAR_GLOBALS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a CIFAR-10 batch never does")
        return super().find_class(module, name)


def _unpickle(path: Path) -> dict:
    """One CIFAR-10 batch: a dict with ``b"data"`` (N, 3072) uint8 and ``b"labels"`` (N ints in 0..9), loaded
    with an unpickler that admits only numpy arrays, and checked; every error names the file."""
    try:
        with open(path, "rb") as f:
            batch = _BatchUnpickler(f, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"{path}: not a CIFAR-10 batch ({type(e).__name__}: {e})") from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise ValueError(f"{path}: not a CIFAR-10 batch (a dict with b'data' and b'labels' expected)")
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{path}: b'data' is {data.dtype} {data.shape}; CIFAR-10 has (N, 3072) uint8")
    if not len(data):
        raise ValueError(f"{path}: no images (an empty batch)")
    if labels.shape != (len(data),) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{path}: b'labels' is {labels.dtype} {labels.shape}; expected {len(data)} integers")
    if len(labels) and (labels.min() < 0 or labels.max() > 9):
        bad = int(np.flatnonzero((labels < 0) | (labels > 9))[0])
        raise ValueError(f"{path}: label {int(labels[bad])} at row {bad} is outside the 10 classes 0..9")
    return batch


def load_cifar10(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"train", "test"}: (images (N, 32, 32, 3) uint8 RGB, labels (N,) int64) from the pickle batches."""
    root = Path(directory)
    out = {}
    for split, names in (("train", CIFAR_TRAIN), ("test", (CIFAR_TEST,))):
        images, labels = [], []
        for name in names:
            path = root / name
            if not path.is_file():
                raise FileNotFoundError(f"{path}: CIFAR-10 batch missing (expected {CIFAR_TRAIN} and {CIFAR_TEST})")
            batch = _unpickle(path)
            data = np.asarray(batch[b"data"], dtype=np.uint8)
            images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
        out[split] = (np.concatenate(images), np.concatenate(labels))
    return out


def digits_file() -> Path:
    """scikit-learn's bundled ``datasets/data/digits.csv.gz``, located without importing sklearn: the import
    costs 1-3 s in every job that builds the set, reading the 1797 rows a few ms."""
    spec = importlib.util.find_spec("sklearn")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    raise FileNotFoundError(f"image source digits: scikit-learn's datasets/data/digits.csv.gz not found (in {roots})")


def load_digits_images() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"all"}: (images (1797, 8, 8, 1) uint8 scaled from 0-16 to 0-255, labels (1797,)); the rows of
    ``sklearn.datasets.load_digits`` (its file read the way it reads it: 64 pixels then the label per row)."""
    with gzip.open(digits_file(), mode="rt", encoding="utf-8") as f:
        data = np.loadtxt(f, delimiter=",")
    pixels, labels = data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)
    images = np.rint(pixels * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)[..., None]
    return {"all": (images, labels)}


def to_grayscale(images: np.ndarray) -> np.ndarray:
    """(N, H, W, 3) uint8 RGB -> (N, H, W, 1) uint8 with PIL's ``L`` weights (rounded)."""
    rgb = images.astype(np.float64)
    gray = rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114
    return np.rint(gray).clip(0, 255).astype(np.uint8)[..., None]


def to_sequence(images: np.ndarray, image_size: int | None = None) -> torch.Tensor:
    """(N, H, W, C) uint8 -> (N, S*S, C) uint8 row-major, bilinearly resized to S = image_size when given."""
    x = torch.from_numpy(np.ascontiguousarray(images))
    if image_size is not None and image_size != x.shape[1]:
        f = x.permute(0, 3, 1, 2).float()
        f = F.interpolate(f, size=(image_size, image_size), mode="bilinear", align_corners=False)
        x = f.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
    return x.reshape(x.shape[0], -1, x.shape[-1]).contiguous()


def _raw_splits(source: str, directory) -> tuple[dict, str]:
    if source == "auto":
        found = find_fashion_mnist(directory)
        return (load_fashion_mnist(found), "fashion-mnist") if found else (load_digits_images(), "digits")
    if source == "cifar10":
        if directory is None:
            raise ValueError("image source cifar10: give the directory of the python-pickle batches")
        return load_cifar10(directory), source
    if source == "fashion-mnist":
        found = find_fashion_mnist(directory)
        if found is None:
            raise FileNotFoundError(
                f"Fashion-MNIST idx files not found in {directory!r}, $FASHION_MNIST_DIR or {FASHION_DIRS}: install "
                "Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or point "
                "$FASHION_MNIST_DIR at a directory holding the four idx files"
            )
        return load_fashion_mnist(found), source
    if source == "digits":
        return load_digits_images(), source
    raise ValueError(f"image source {source!r}: expected one of auto, cifar10, fashion-mnist, digits")


def load_images(
    source: str = "auto",
    directory: str | os.PathLike | None = None,
    *,
    channels: int = 1,
    image_size: int | None = None,
    seed: int = 0,
    caps: dict[str, int | None] | None = None,
) -> dict:
    """The train/val/test pixel sequences of ``source`` (see the module docstring); ``caps`` keeps a seeded
    subset of at most that many examples per split (tiny and CPU scales)."""
    raw, name = _raw_splits(source, directory)
    if channels not in (1, 3):
        raise ValueError(f"channels={channels}: expected 1 (grayscale) or 3 (colour)")
    if channels == 3 and name != "cifar10":
        raise ValueError(f"channels=3 needs colour images; {name} is grayscale")
    if "all" in raw:  # digits: 80/10/10 within each class (a seeded shuffle per class)
        images, labels = raw["all"]
        parts = stratified_split(labels.tolist(), (0.8, 0.1), seed, "digits-split")
        splits = {k: (images[idx], labels[idx]) for k, idx in zip(("train", "val", "test"), parts)}
    else:
        train, val = holdout(len(raw["train"][1]), 0.1, seed, f"{name}-val")
        images, labels = raw["train"]
        splits = {"train": (images[train], labels[train]), "val": (images[val], labels[val]), "test": raw["test"]}
    out: dict = {"data_source": DATA_SOURCES[name]}
    for split, (images, labels) in splits.items():
        keep = subsample(len(labels), (caps or {}).get(split), seed, f"{name}-{split}-cap")
        images, labels = images[keep], labels[keep]
        if images.shape[-1] == 3 and channels == 1:
            images = to_grayscale(images)
        out[f"{split}/x"] = to_sequence(images, image_size)
        out[f"{split}/y"] = torch.from_numpy(np.ascontiguousarray(labels))
    return out
