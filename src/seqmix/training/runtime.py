"""Where and how a job computes: ``Runtime(device, dtype, amp, compile, kernels)``, resolved once per job.

Settings come from config/config.yaml (keys ``device``, ``dtype``, ``amp``, ``compile``, ``kernels``) and
reach each leaf through its cell's run config (``run["runtime"]``, written by ``config.cell_run_config``).

- ``device``: ``cpu`` | ``cuda`` | ``auto`` (CUDA when present). Asking for ``cuda`` where
  ``torch.cuda.is_available()`` is False is a ConfigError: at config load when the jobs run on this
  machine (``dispatch: local``), else in the job itself. Data-parallel CUDA ranks take ``cuda:LOCAL_RANK``.
- ``amp`` with ``dtype`` (``bfloat16`` | ``float16``): the forward pass and the loss run under
  ``torch.autocast`` in that dtype; parameters and optimizer state stay in the leaf's ``train.dtype``.
- ``compile``: the training forward goes through ``torch.compile`` (the saved weights are the plain module's).
- ``kernels``: ``fallback`` (a kernel that cannot run warns and the reference runs) | ``strict`` (it raises).

Models are initialised on the CPU from the leaf's seed and then moved, so a leaf starts from the same
weights on every device.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import torch

from ..devices import cuda_missing

CONFIG_FILE = "config/config.yaml"
DEFAULTS = {"device": "cpu", "dtype": "bfloat16", "amp": False, "compile": False, "kernels": "fallback"}
AMP_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def _config_error(keypath: str, message: str, file: str = CONFIG_FILE) -> Exception:
    from ..config.base import ConfigError

    return ConfigError(file, keypath, message)


@dataclass(frozen=True)
class Runtime:
    device: str = "cpu"
    dtype: str = "bfloat16"
    amp: bool = False
    compile: bool = False
    kernels: str = "fallback"

    @classmethod
    def resolve(cls, settings: dict | None = None, file: str = CONFIG_FILE) -> Runtime:
        """The runtime of this process from the run config's ``runtime`` block (missing keys: defaults)."""
        s = {**DEFAULTS, **{k: v for k, v in (settings or {}).items() if v is not None}}
        device = str(s["device"])
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device not in ("cpu", "cuda"):
            raise _config_error("device", f"expected one of cpu, cuda, auto, got {device!r}", file)
        why = cuda_missing(device)
        if why:
            raise _config_error("device", why, file)
        if device == "cuda" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        if s["dtype"] not in AMP_DTYPES:
            raise _config_error("dtype", f"expected one of {', '.join(AMP_DTYPES)}, got {s['dtype']!r}", file)
        if s["kernels"] not in ("fallback", "strict"):
            raise _config_error("kernels", f"expected fallback or strict, got {s['kernels']!r}", file)
        return cls(device, s["dtype"], bool(s["amp"]), bool(s["compile"]), s["kernels"])

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)

    @property
    def is_cuda(self) -> bool:
        return self.torch_device.type == "cuda"

    def activate(self) -> Runtime:
        """Apply the process-wide parts: the CUDA device of this rank and the kernel strictness."""
        from ..ops import dispatch

        dispatch.set_strict(True if self.kernels == "strict" else None)
        # a bare "cuda" means the current device: torch.cuda.set_device refuses a device without an index
        if self.is_cuda and self.torch_device.index is not None:
            torch.cuda.set_device(self.torch_device)
        return self

    def autocast(self) -> contextlib.AbstractContextManager:
        if not self.amp:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.torch_device.type, dtype=AMP_DTYPES[self.dtype])

    def place(self, model: torch.nn.Module, dtype: torch.dtype | None = None) -> torch.nn.Module:
        """Move a (CPU-initialised) model to the device, in ``dtype`` when given."""
        return model.to(device=self.torch_device, dtype=dtype) if dtype is not None else model.to(self.torch_device)

    def forward_fn(self, model: torch.nn.Module):
        """What the training loop calls for the forward pass: the module, or its ``torch.compile``d form."""
        return torch.compile(model) if self.compile else model

    def to(self, batch: Any) -> Any:
        """The batch (a tensor, or tuples/lists/dicts/dataclasses of them) on the device; a no-op on CPU."""
        return batch if self.device == "cpu" else move(batch, self.torch_device)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def move(obj: Any, device: torch.device) -> Any:
    """Every tensor inside ``obj`` on ``device``. Host-to-device copies are non-blocking; copies to the CPU
    block: a non-blocking device-to-host copy returns before its data has arrived, so code reading the CPU
    tensor at once reads garbage (found 2026-11-26 on an H200: the rotations evaluation, which takes the logits
    off the GPU through ``keep_inputs_on_device``, scored trained models at up to exactly ln(vocab))."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=torch.device(device).type != "cpu")
    if isinstance(obj, (tuple, list)):
        out = [move(o, device) for o in obj]
        return type(obj)(out) if not hasattr(obj, "_fields") else type(obj)(*out)
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(
            obj, **{f.name: move(getattr(obj, f.name), device) for f in dataclasses.fields(obj) if f.init}
        )
    return obj


def keep_inputs_on_device(model: torch.nn.Module, runtime: Runtime) -> list:
    """For evaluation code that feeds CPU batches to ``model(...)``: move its inputs to the runtime's device
    and its outputs back to the CPU. No hooks on CPU. Returns the hook handles (``.remove()`` undoes it)."""
    if runtime.device == "cpu":
        return []
    cpu = torch.device("cpu")
    return [
        model.register_forward_pre_hook(
            lambda m, args, kwargs: (move(args, runtime.torch_device), move(kwargs, runtime.torch_device)),
            with_kwargs=True,
        ),
        model.register_forward_hook(lambda m, args, out: move(out, cpu)),
    ]


@contextlib.contextmanager
def cpu_batches(model: torch.nn.Module, runtime: Runtime):
    """``keep_inputs_on_device`` for the duration of a block (in-training diagnostics on a GPU model)."""
    handles = keep_inputs_on_device(model, runtime)
    try:
        yield model
    finally:
        for h in handles:
            h.remove()
