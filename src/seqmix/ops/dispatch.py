"""One dispatcher for every op package (ops/<op>/__init__.py): which backend runs a call.

Each op has a ``reference`` backend (pure torch, CPU-capable, the oracle). An op may also register a ``lean``
backend (``Op(..., lean=fn)``): pure torch too, the same results to rounding, with a hand-written backward that
keeps less memory (e.g. ``ops/selective_scan/lean.py``); it is the automatic choice on CPU. A Triton kernel
lives beside it as ``ops/<op>/triton.py`` exposing a function with the op's name; the kernel is *declared*
when that file exists and *registered* when it imports (triton installed, a CUDA build of torch).

Choice for one call (``Op.backend_for``):
- ``requested`` None (automatic): the kernel on CUDA tensors when registered and the op chooses it
  automatically (``auto_kernel``, default true; false where the kernel was measured slower than the
  reference, see benchmarks/RESULTS.md); else the lean backend on CPU tensors when the op has one; else the
  reference. A kernel that is declared, would be chosen, but did not import counts as a fallback (see below).
- ``requested`` "reference": always honoured; "lean": honoured on any device when the op has one, a
  ValueError otherwise.
- ``requested`` "triton": the kernel when registered and the tensors are on CUDA; when the op has no kernel
  at all it is a ValueError (a typo-class mistake, not a fallback); otherwise it is a fallback.

A fallback runs what an automatic call would run there (lean or reference) and warns once per (op, reason),
unless strict kernels are on
(``kernels: strict`` in config/config.yaml, applied by the runtime, or SEQMIX_STRICT_KERNELS=1), where it
raises ``KernelFallbackError``. ``backend_on(device)`` says, without warning, which backend a call on that
device would use: mixers derive their ``backend`` property from it (``BackendOf``).

Arguments are checked by each backend with ``seqmix.ops.checks`` (shapes, dtypes, sizes; metadata only, no
device sync), so a kernel must run the same checks as its reference; the dispatcher itself only refuses a
first argument that is not a tensor.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
import warnings
from collections.abc import Callable, Iterable

import torch

log = logging.getLogger("seqmix.ops")

BACKEND_NAMES = ("reference", "lean", "triton")
_STRICT: bool | None = None  # set by the runtime; None = read SEQMIX_STRICT_KERNELS


class KernelFallbackError(RuntimeError):
    """A requested kernel could not run and strict kernels are on."""


def set_strict(strict: bool | None) -> None:
    """Strict kernels for this process (None: follow the SEQMIX_STRICT_KERNELS environment variable)."""
    global _STRICT
    _STRICT = strict


def strict() -> bool:
    if _STRICT is not None:
        return _STRICT
    return os.environ.get("SEQMIX_STRICT_KERNELS", "0").strip().lower() in ("1", "true", "yes", "strict")


class Op:
    """The backends of one op and the choice between them.

    ``Op("ssd", "seqmix.ops.ssd", reference.ssd_chunked)`` registers the reference and, when the package has a
    ``triton.py`` that imports, its function named like the op ("ssd"); ``lean=fn`` registers a lean backend.
    """

    def __init__(
        self, name: str, package: str, reference: Callable, lean: Callable | None = None, auto_kernel: bool = True
    ):
        self.name = name
        self.auto_kernel = auto_kernel  # False: the kernel runs only when asked for (backend="triton")
        self.backends: dict[str, Callable] = {"reference": reference}
        if lean is not None:
            self.backends["lean"] = lean
        self.first_arg = next(iter(inspect.signature(reference).parameters), "tensor")  # decides the device
        self.kernel_error: str | None = None  # why a declared kernel is not registered
        self.kernel_declared = importlib.util.find_spec(f"{package}.triton") is not None
        if self.kernel_declared:
            try:
                mod = importlib.import_module(f"{package}.triton")
                self.backends["triton"] = getattr(mod, name)
            except Exception as e:  # any import failure (no triton, no CUDA build) is a fallback
                self.kernel_error = f"{type(e).__name__}: {e}"
        self._warned: set[str] = set()

    def backend_on(self, device: torch.device | str) -> str:
        """The backend an automatic call on ``device`` runs (no warning, no error)."""
        kind = torch.device(device).type
        if kind == "cuda" and "triton" in self.backends and self.auto_kernel:
            return "triton"
        return "lean" if kind == "cpu" and "lean" in self.backends else "reference"

    def backend_for(self, tensor: torch.Tensor, requested: str | None = None) -> str:
        """Name of the backend to run on ``tensor``'s device; see the module docstring."""
        if requested is not None and requested not in BACKEND_NAMES:
            raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {requested!r}")
        if requested == "lean" and "lean" not in self.backends:
            raise ValueError(f"op {self.name!r} has no 'lean' backend; available: {sorted(self.backends)}")
        if requested in ("reference", "lean"):
            return requested
        if requested == "triton" and not self.kernel_declared:
            raise ValueError(f"op {self.name!r} has no 'triton' backend; available: {sorted(self.backends)}")
        if requested == "triton" and tensor.is_cuda and "triton" in self.backends:
            return "triton"
        chosen = self.backend_on(tensor.device)
        if chosen == "triton":
            return chosen
        if requested == "triton" or (tensor.is_cuda and self.kernel_declared and self.auto_kernel):
            why = self.kernel_error or f"tensors on {tensor.device.type}, the kernel needs CUDA"
            self._fallback(why, chosen)
        return chosen

    def _fallback(self, why: str, instead: str) -> None:
        msg = f"op {self.name!r}: the triton kernel cannot run ({why}); running the {instead} backend"
        if strict():
            raise KernelFallbackError(
                msg + " — refused because strict kernels are on "
                "(config key `kernels: strict` or SEQMIX_STRICT_KERNELS=1)"
            )
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            log.warning(msg)

    def __call__(self, tensor: torch.Tensor, backend: str | None, *args, **kwargs):
        """Run the chosen backend: ``tensor`` decides the device, ``args``/``kwargs`` go to the function."""
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"op {self.name!r}: {self.first_arg} must be a torch.Tensor, got {type(tensor).__name__}")
        return self.backends[self.backend_for(tensor, backend)](*args, **kwargs)


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter or buffer (CPU for a module with neither)."""
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return torch.device("cpu")


class BackendOf:
    """Class attribute giving a module's ``backend``: what its ops would run on the module's device.

    ``backend = BackendOf(ss_ops.OP)``; ``select(module) -> ops`` picks the ops a mode calls (e.g. S4D's
    convolution vs recurrence). A module whose mode calls no op reports "reference" (plain torch).
    """

    def __init__(self, *ops: Op, select: Callable[[torch.nn.Module], Iterable[Op]] | None = None):
        self.ops, self.select = ops, select

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ops = tuple(self.select(obj)) if self.select is not None else self.ops
        device = module_device(obj)
        names = sorted({op.backend_on(device) for op in ops}) or ["reference"]
        return "+".join(names)
