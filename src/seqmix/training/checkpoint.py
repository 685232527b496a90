"""Checkpoints that survive corruption: checksummed, with the previous good one kept.

``checkpoint.pt`` is a plain ``torch.save`` file (``torch.load(weights_only=True)`` reads it) with a
sidecar ``checkpoint.pt.sha256``. Before a new checkpoint replaces it, a checkpoint that verifies is kept
as ``checkpoint.prev.pt`` (+ its sidecar), so at every moment of a save one of the two verifies
(``seqmix.io.write_bytes`` keeps the old digest in the sidecar while the file is replaced).

On load, a file that is missing its checksum, does not match it (a flipped bit, a truncation, zero
length) or does not unpickle is discarded with a warning naming it and why; the previous one is tried
next, else training starts afresh. Batches are a pure function of (seed, step), so resuming from the
older checkpoint still ends bit-identical to an uninterrupted run.

``model.pt`` (the finished run's weights) is checksummed too; a damaged one is remade from the final
checkpoint (``load_final_weights``).
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import torch

from ..io import copy_checked, recorded_digests, torch_bytes, torch_save, verify_checksum, write_bytes
from ..results import CorruptResult

log = logging.getLogger("seqmix.train")

KEYS = frozenset({"model", "optimizer", "scheduler", "step", "history", "config_hash"})


def previous_path(path: str | Path) -> Path:
    """Where the last good checkpoint is kept while a new one is written: ``<stem>.prev<suffix>``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def save_checkpoint(state: dict, path: str | Path) -> None:
    """Write ``state`` to ``path`` with its checksum, after keeping the current checkpoint, if it verifies,
    as ``previous_path(path)``. A corrupt current checkpoint is not kept (it would replace a good one)."""
    path = Path(path)
    data = torch_bytes(state)
    if path.exists() and verify_checksum(path) is None:
        copy_checked(path, previous_path(path))
    write_bytes(path, data, checksum=True)


def load_checkpoint(path: str | Path, map_location=None) -> dict | None:
    """The newest checkpoint that verifies and loads (``path``, then ``previous_path(path)``), or None.

    Each one that exists but cannot be used is logged as a warning with the file and the reason."""
    path = Path(path)
    candidates = [p for p in (path, previous_path(path)) if p.exists()]
    for candidate in candidates:
        state, why = _read(candidate, map_location)
        if state is not None:
            if candidate != path:
                log.warning("%s: resuming from the previous checkpoint %s", path.parent, candidate.name)
            return state
        log.warning("%s: discarding checkpoint %s: %s", path.parent, candidate, why)
    if candidates:
        log.warning("%s: no usable checkpoint; training starts afresh", path.parent)
    return None


def _read(path: Path, map_location) -> tuple[dict | None, str]:
    """(state, "") for a checkpoint that verifies and holds every key, else (None, why not)."""
    data = path.read_bytes()
    why = verify_checksum(path, data)
    if why:
        return None, why
    try:
        state = torch.load(io.BytesIO(data), weights_only=True, map_location=map_location)
    except Exception as e:  # unpickling a damaged file raises many kinds
        return None, f"does not load ({type(e).__name__}: {e})"
    if not isinstance(state, dict) or not KEYS <= set(state):
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        return None, f"not a training checkpoint (keys {keys})"
    return state, ""


def load_final_weights(model_path: str | Path, steps: int, map_location=None) -> dict:
    """The state dict of a finished run's ``model.pt``. When it fails its checksum or does not load, it is
    remade, with a warning, from the final checkpoint (saved at the last step, the same tensors); with no
    usable final checkpoint either, ``CorruptResult`` says how to retrain. A ``model.pt`` with no checksum
    (written before they existed) is used as long as it loads."""
    model_path = Path(model_path)
    data = model_path.read_bytes() if model_path.exists() else b""
    why = verify_checksum(model_path, data) if (recorded_digests(model_path) or not data) else None
    if why is None:
        try:
            return torch.load(io.BytesIO(data), weights_only=True, map_location=map_location)
        except Exception as e:  # unpickling a damaged file raises many kinds
            why = f"does not load ({type(e).__name__}: {e})"
    log.warning("%s: %s; remaking it from the final checkpoint", model_path, why)
    final = load_checkpoint(model_path.with_name("checkpoint.pt"), map_location=map_location)
    if final is None or int(final["step"]) != steps:
        raise CorruptResult(
            f"{model_path}: {why}, and no checkpoint of step {steps} to remake it from; delete "
            f"{model_path.with_name('train.done.json')} and rerun to train the leaf again"
        )
    # a staged run (train.lr_stages) finishes with its best validation weights, kept under "best"
    weights = (final.get("best") or {}).get("model") or final["model"]
    torch_save(weights, model_path, checksum=True)
    return weights
