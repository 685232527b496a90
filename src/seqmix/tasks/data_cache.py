"""A built-once, checksummed on-disk cache for generated or tokenised data sets.

A data set is a dict of CPU tensors and strings (``{"tokens": (N,) int16, "meta": "..."}``). ``cached(kind, key,
build, cache_dir)`` returns it from ``<root>/<kind>/<hash of key>.pt`` when that file's content checksum
(sha256 over every entry's name, dtype, shape and bytes) matches the one stored beside it; otherwise it calls
``build()``, writes the result atomically (``seqmix.io.torch_save``) and returns it. A corrupted or truncated
file is rebuilt with a warning, never trusted. The root is ``$SEQMIX_DATA_CACHE`` when set, else the
``cache_dir`` the caller passes; with neither, nothing is written (the set is built in memory each time).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

import torch

from ..io import canonical_json, torch_save

log = logging.getLogger("seqmix.data")

Entry = torch.Tensor | str
DataSet = dict[str, Entry]


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path | None:
    """``$SEQMIX_DATA_CACHE`` when set (the pipeline's shared cache), else ``cache_dir``, else None."""
    env = os.environ.get("SEQMIX_DATA_CACHE")
    if env:
        return Path(env)
    return Path(cache_dir) if cache_dir else None


def checksum(data: DataSet) -> str:
    """sha256 over the entries in name order: name, type, dtype and shape, then the raw bytes."""
    h = hashlib.sha256()
    for name in sorted(data):
        value = data[name]
        h.update(name.encode())
        if isinstance(value, str):
            h.update(b"str:" + value.encode())
        else:
            t = value.detach().cpu().contiguous()
            h.update(f"tensor:{t.dtype}:{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def cache_file(kind: str, key: dict, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """Where the data set of ``kind`` built from ``key`` (its JSON-able parameters) is stored, or None."""
    root = cache_root(cache_dir)
    if root is None:
        return None
    return root / kind / f"{hashlib.sha256(canonical_json(key).encode()).hexdigest()[:20]}.pt"


def _load_verified(path: Path) -> DataSet | None:
    try:
        stored = torch.load(path, weights_only=True)
        data, want = stored["data"], stored["sha256"]
    except Exception as e:  # unreadable or truncated: rebuilt, never trusted
        log.warning("%s: unreadable data cache (%s); rebuilding", path, e)
        return None
    if checksum(data) != want:
        log.warning("%s: data cache checksum mismatch; rebuilding", path)
        return None
    return data


def cached(kind: str, key: dict, build: Callable[[], DataSet], cache_dir: str | os.PathLike | None = None) -> DataSet:
    """The data set ``build()`` makes for ``key``, read from the cache when its checksum verifies."""
    path = cache_file(kind, key, cache_dir)
    if path is not None and path.exists():
        data = _load_verified(path)
        if data is not None:
            return data
    data = build()
    if path is not None:
        torch_save({"key": canonical_json(key), "data": data, "sha256": checksum(data)}, path)
    return data
