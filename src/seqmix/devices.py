"""Whether a device can be used on this machine: shared by the config check (before any job) and the
job's Runtime (``training.runtime``). torch is imported only when a CUDA device is asked for, so loading a
CPU config stays light."""

from __future__ import annotations


def cuda_missing(device: str) -> str | None:
    """Why ``device`` cannot be used here, or None."""
    if not device.startswith("cuda"):
        return None
    import torch

    if torch.cuda.is_available():
        return None
    return (
        f"device {device!r} was asked for but torch.cuda.is_available() is False on this machine "
        f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); use device: cpu or auto"
    )
