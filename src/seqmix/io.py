"""Atomic file writes and canonical JSON.

Every output of the pipeline goes through these helpers: a killed job leaves a ``*.tmp-*`` file behind,
never a half-written file under the final name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """Sorted, compact, deterministic JSON (the form that is hashed)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def config_hash(obj: Any, length: int = 12) -> str:
    """Content hash of a config: sha256 of its canonical JSON, truncated."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def _jsonable(x: Any) -> Any:
    if hasattr(x, "tolist"):  # numpy / torch scalars and arrays (.item() fails on arrays)
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the final file the usual umask mode
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Atomically write JSON with sorted keys. Non-finite floats are written as null."""
    write_text(
        path, json.dumps(_finite(obj), sort_keys=True, indent=indent, default=lambda x: _finite(_jsonable(x))) + "\n"
    )


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def read_json(path: str | os.PathLike) -> Any:
    with open(path) as f:
        return json.load(f)


def torch_save(obj: Any, path: str | os.PathLike) -> None:
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)
