"""One dispatcher for every op package (ops/<op>/__init__.py): which backend runs a call.

Each op has a ``reference`` backend (pure torch, CPU-capable, the oracle). An op may also register:
- ``lean`` (``Op(..., lean=fn)``): pure torch, the same results to rounding, a hand-written backward that keeps
  less memory (e.g. ``ops/selective_scan/lean.py``); the automatic choice on CPU.
- ``fused`` (``Op(..., fused=fn)``): pure torch rewritten so that torch's own fast GPU kernels do the work
  (flash SDPA, FlexAttention, large cuBLAS matmuls), e.g. ``ops/rotation_attention/fused.py``; runs anywhere.
- ``triton``: our kernel, ``ops/<op>/triton.py`` exposing a function with the op's name; *declared* when that
  file exists and *registered* when it imports (triton installed, a CUDA build of torch).

Choice for one call (``Op.backend_for``):
- ``requested`` None (automatic): on CUDA, the fastest of ``fused`` and ``triton`` by the measured table
  ``ops/speed_table.json`` (forward + backward speedup over the reference at the op's benchmark shapes, for
  the card in use, written by ``benchmarks/kernels.py --table``), and only where that speedup is above 1;
  a backend never measured is never automatic. A card not in the table uses the first card listed. Else the
  lean backend on CPU tensors when the op has one; else the reference. A kernel the table prefers that did
  not import counts as a fallback (see below).
- Deterministic mode (``set_deterministic(True)`` or SEQMIX_DETERMINISTIC=1): backends the op declares
  nondeterministic (``Op(..., nondeterministic={"fused"})``: e.g. atomics in a backward) are not chosen
  automatically, and torch's own deterministic algorithms are switched on; benchmarks/kernels.py measures
  what it costs.
- ``requested`` "reference": always honoured; "lean"/"fused": honoured on any device when the op has one, a
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

from . import speed_table

log = logging.getLogger("seqmix.ops")

BACKEND_NAMES = ("reference", "lean", "fused", "triton")
FAST = ("fused", "triton")  # the backends the measured table can turn on automatically on CUDA
_STRICT: bool | None = None  # set by the runtime; None = read SEQMIX_STRICT_KERNELS
_DETERMINISTIC: bool | None = None  # set_deterministic; None = read SEQMIX_DETERMINISTIC


class KernelFallbackError(RuntimeError):
    """A requested kernel could not run and strict kernels are on."""


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() in ("1", "true", "yes", "on", "strict")


def set_strict(strict: bool | None) -> None:
    """Strict kernels for this process (None: follow the SEQMIX_STRICT_KERNELS environment variable)."""
    global _STRICT
    _STRICT = strict


def strict() -> bool:
    return _STRICT if _STRICT is not None else _env_flag("SEQMIX_STRICT_KERNELS")


def set_deterministic(on: bool | None) -> None:
    """Deterministic mode for this process (None: follow SEQMIX_DETERMINISTIC): automatic choices skip the
    backends an op declares nondeterministic, and torch's deterministic algorithms are switched on (which
    also needs CUBLAS_WORKSPACE_CONFIG on CUDA; set here when unset)."""
    global _DETERMINISTIC
    _DETERMINISTIC = on
    _apply_torch_determinism()


def deterministic() -> bool:
    return _DETERMINISTIC if _DETERMINISTIC is not None else _env_flag("SEQMIX_DETERMINISTIC")


def _apply_torch_determinism() -> None:
    """Switch torch's deterministic algorithms on in deterministic mode, and off again only where this module
    switched them on (a user's own setting is left alone)."""
    global _TORCH_SET
    if deterministic():
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        _TORCH_SET = True
    elif _TORCH_SET:
        torch.use_deterministic_algorithms(False)
        _TORCH_SET = False


_TORCH_SET = False
if deterministic():  # SEQMIX_DETERMINISTIC=1 in the environment: in force from the first import
    _apply_torch_determinism()


class Op:
    """The backends of one op and the choice between them.

    ``Op("ssd", "seqmix.ops.ssd", reference.ssd_chunked, fused=fused.ssd)`` registers the reference, the fused
    form and, when the package has a ``triton.py`` that imports, its function named like the op ("ssd");
    ``lean=fn`` registers a lean backend. ``nondeterministic``: backends whose results may differ run to run
    (skipped automatically in deterministic mode). ``speedups``: backend -> measured speedup, overriding
    ``speed_table.json`` (for ops outside seqmix and for tests).
    """

    def __init__(
        self,
        name: str,
        package: str,
        reference: Callable,
        lean: Callable | None = None,
        fused: Callable | None = None,
        nondeterministic: Iterable[str] = (),
        speedups: dict[str, float] | None = None,
    ):
        self.name = name
        self.backends: dict[str, Callable] = {"reference": reference}
        if lean is not None:
            self.backends["lean"] = lean
        if fused is not None:
            self.backends["fused"] = fused
        self.nondeterministic = frozenset(nondeterministic)
        self._speedups = speedups
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

    def speedups(self, device: torch.device | str = "cuda") -> dict[str, float]:
        """backend -> measured forward + backward speedup over the reference on ``device``'s card."""
        if self._speedups is not None:
            return dict(self._speedups)
        return speed_table.speedups(self.name, speed_table.card_name(device))

    def preferred_on_cuda(self, device: torch.device | str = "cuda") -> str | None:
        """The fast backend the measured table prefers on ``device`` (declared, whether or not it imported;
        nondeterministic ones skipped in deterministic mode), or None when none beats the reference."""
        declared = {b for b in FAST if b in self.backends} | ({"triton"} if self.kernel_declared else set())
        if deterministic():
            declared -= self.nondeterministic
        measured = {b: x for b, x in self.speedups(device).items() if b in declared and x > 1.0}
        return max(measured, key=measured.get) if measured else None

    def backend_on(self, device: torch.device | str) -> str:
        """The backend an automatic call on ``device`` runs (no warning, no error)."""
        kind = torch.device(device).type
        if kind == "cuda":
            preferred = self.preferred_on_cuda(device)
            if preferred in self.backends:
                return preferred
        return "lean" if kind == "cpu" and "lean" in self.backends else "reference"

    def backend_for(self, tensor: torch.Tensor, requested: str | None = None) -> str:
        """Name of the backend to run on ``tensor``'s device; see the module docstring."""
        if requested is not None and requested not in BACKEND_NAMES:
            raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {requested!r}")
        if requested in ("lean", "fused") and requested not in self.backends:
            raise ValueError(f"op {self.name!r} has no {requested!r} backend; available: {sorted(self.backends)}")
        if requested in ("reference", "lean", "fused"):
            return requested
        if requested == "triton" and not self.kernel_declared:
            raise ValueError(f"op {self.name!r} has no 'triton' backend; available: {sorted(self.backends)}")
        if requested == "triton" and tensor.is_cuda and "triton" in self.backends:
            return "triton"
        chosen = self.backend_on(tensor.device)
        if chosen in FAST:
            return chosen
        wanted_kernel = tensor.is_cuda and self.preferred_on_cuda(tensor.device) == "triton"
        if requested == "triton" or wanted_kernel:
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
