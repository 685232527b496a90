"""Atomic file writes, checksums and canonical JSON.

Every output of the pipeline goes through these helpers: a killed job leaves a ``.<name>.tmp-*`` file
behind, never a half-written file under the final name, and the next write of that name removes the
temporary files a dead writer left (``_clean_stale_temporaries``). A full disk (ENOSPC, EDQUOT) is raised
as ``DiskFullError`` naming the path and the space left.

Files whose later corruption must be caught (checkpoints, experiment summaries) are written with
``checksum=True``: a sidecar ``<name>.sha256`` (``sha256sum`` format) is written after the file, and
``verify_checksum`` says why a file does not match it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# a temporary file untouched for this long is stale whoever wrote it (a writer rewrites it continuously)
STALE_TMP_AGE_S = 3600.0
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFullError(OSError):
    """A write failed for lack of space or quota; the message names the file and the free space."""


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


def _host() -> str:
    # '-' separates the fields of a temporary name, so the host name must not contain one
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left untouched; a full disk is re-raised
    as ``DiskFullError``. The temporary name ``.<name>.tmp-<host>-<pid>-<random>`` says who wrote it, so
    the next write of ``path`` can remove what a killed writer left.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale_temporaries(path)
        fd, tmp = tempfile.mkstemp(prefix=f"{_tmp_prefix(path)}{_host()}-{os.getpid()}-", dir=path.parent)
    except OSError as e:
        _raise_if_disk_full(e, path)
        raise
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the final file the usual umask mode
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        _raise_if_disk_full(e, path)
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


def _raise_if_disk_full(e: OSError, path: Path) -> None:
    """Raise a ``DiskFullError`` naming ``path`` and the space left when ``e`` says the disk is full."""
    if e.errno not in _DISK_FULL or isinstance(e, DiskFullError):
        return
    try:
        free = f"{shutil.disk_usage(_existing_parent(path)).free / 2**20:.1f} MiB free"
    except OSError:
        free = "free space unknown"
    what = "no space left on device" if e.errno == errno.ENOSPC else "disk quota exceeded"
    raise DiskFullError(e.errno, f"{what} writing {path} ({free} in {_existing_parent(path)})") from e


def _existing_parent(path: Path) -> Path:
    for p in path.parents:
        if p.exists():
            return p
    return Path(".")


def _clean_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files of earlier writes of ``path`` whose writer is gone: written on this host
    by a process that no longer runs, or untouched for ``STALE_TMP_AGE_S`` (another host's, or an older
    naming). A live writer's temporary file is kept (two jobs may write the same cache file)."""
    removed = []
    prefix, host, now = _tmp_prefix(path), _host(), time.time()
    for tmp in path.parent.glob(f"{_glob_escape(prefix)}*"):
        fields = tmp.name[len(prefix) :].rsplit("-", 2)
        try:
            old = now - tmp.stat().st_mtime > STALE_TMP_AGE_S
            dead = len(fields) == 3 and fields[0] == host and fields[1].isdigit() and not _alive(int(fields[1]))
            if old or dead:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # its writer renamed or removed it meanwhile
            continue
    return removed


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ----------------------------------------------------------------------------- checksums


def checksum_path(path: str | os.PathLike) -> Path:
    """The sidecar holding ``path``'s sha256: ``<name>.sha256``."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recorded_digests(path: str | os.PathLike) -> list[str]:
    """The digests ``path``'s sidecar accepts (one; two while a write of ``path`` is under way), [] if none."""
    try:
        text = checksum_path(path).read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    return [line.split()[0] for line in text.splitlines() if line.split() and len(line.split()[0]) == 64]


def _write_sidecar(path: Path, digests: list[str]) -> None:
    with atomic_path(checksum_path(path)) as tmp:
        tmp.write_text("".join(f"{d}  {path.name}\n" for d in dict.fromkeys(digests)))


def verify_checksum(path: str | os.PathLike, data: bytes | None = None) -> str | None:
    """None when ``path`` (or ``data``, its bytes already read) matches its sidecar, else why not."""
    path = Path(path)
    if data is None:
        if not path.exists():
            return "missing"
        data = path.read_bytes()
    recorded = recorded_digests(path)
    if not recorded:
        return f"no checksum ({checksum_path(path).name} missing or unreadable), so it cannot be trusted"
    if not data:
        return "empty file"
    actual = sha256_bytes(data)
    if actual not in recorded:
        return f"checksum mismatch ({len(data)} bytes, sha256 {actual[:12]}..., recorded {recorded[0][:12]}...)"
    return None


def write_bytes(path: str | os.PathLike, data: bytes, checksum: bool = False) -> None:
    """Atomically write ``data``; with ``checksum`` also its sidecar. The sidecar accepts the old and the
    new digest while the file is replaced, so a kill at any moment leaves a file that verifies."""
    path = Path(path)
    digest = sha256_bytes(data) if checksum else None
    if digest:
        _write_sidecar(path, [digest] + recorded_digests(path)[:1])
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            if checksum:  # files worth a checksum are worth surviving a power loss
                f.flush()
                os.fsync(f.fileno())
    if digest:
        _write_sidecar(path, [digest])


def copy_checked(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Atomically make ``dst`` a copy of ``src`` with ``src``'s checksum (a hard link where possible)."""
    src, dst = Path(src), Path(dst)
    digests = recorded_digests(src)[:1]
    _write_sidecar(dst, digests + recorded_digests(dst)[:1])
    with atomic_path(dst) as tmp:
        tmp.unlink()
        try:
            os.link(src, tmp)
        except OSError:  # no hard links on this filesystem
            shutil.copyfile(src, tmp)
    _write_sidecar(dst, digests)


# ----------------------------------------------------------------------------- text, JSON, torch


def write_text(path: str | os.PathLike, text: str, checksum: bool = False) -> None:
    write_bytes(path, text.encode(), checksum=checksum)


def write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2, checksum: bool = False) -> None:
    """Atomically write JSON with sorted keys (with ``checksum`` also its sidecar). Non-finite floats are
    written as null."""
    text = json.dumps(_finite(obj), sort_keys=True, indent=indent, default=lambda x: _finite(_jsonable(x)))
    write_text(path, text + "\n", checksum=checksum)


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


def torch_bytes(obj: Any) -> bytes:
    """``obj`` as ``torch.save`` writes it (serialised in memory, so a failed disk write is a Python OSError
    naming the file, not a torch stream-writer error), its bytes a function of its values (``_canonical``)."""
    from io import BytesIO

    import torch

    buf = BytesIO()
    torch.save(_canonical(obj), buf)
    return buf.getvalue()


def _canonical(obj: Any) -> Any:
    """``obj`` with every string interned and its dicts, lists and tuples rebuilt (tensors shared, not copied).

    Pickle writes a string once and then refers back to it by object identity, so the bytes depended on
    which equal strings were one object: after a resume the optimizer's and the history's keys are strings
    unpickled from the checkpoint, not the interned literals of an uninterrupted run, and the checkpoint
    differed in bytes though equal in values. Interned, equal strings are one object whatever their origin."""
    if type(obj) is str:
        return sys.intern(obj)
    if type(obj) in (dict, OrderedDict):
        out = type(obj)((_canonical(k), _canonical(v)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):  # a module's state_dict: the versions load_state_dict reads
            out._metadata = _canonical(obj._metadata)
        return out
    if type(obj) in (list, tuple):
        return type(obj)(_canonical(v) for v in obj)
    return obj


def torch_save(obj: Any, path: str | os.PathLike, checksum: bool = False) -> None:
    write_bytes(path, torch_bytes(obj), checksum=checksum)
