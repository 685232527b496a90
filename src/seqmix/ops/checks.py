"""Argument checks shared by the ops: types, ranks, sizes, dtypes and devices only. They read tensor metadata
(Python ints), never tensor data, so they cost microseconds and never synchronise a GPU.

Every error names the op, the argument and what was expected, e.g.
``ssd: B must have shape (Nb, L, G, N) = (2, 7, G, 5), got (2, 7, 2, 6)``.

Dtype rule (``common_dtype``): floating inputs of different precisions are promoted to their common dtype
(float32 with float64 -> float64; bfloat16 projections beside float32 parameters, as autocast produces them
-> float32), the op computes in it and returns it; nothing is cast down silently. Integer and boolean
tensors are a TypeError, and so are complex tensors where the op is defined for real data only.
"""

from __future__ import annotations

import functools

import torch


def positive_int(op: str, name: str, value) -> int:
    """``value`` itself, when it is a positive int (bool excluded)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{op}: {name} must be a positive integer, got {value!r}")
    return value


class Signature:
    """The dimensions of one call, bound by name as its arguments are checked.

    ``sig.tensor("x", x, "Nb L H P")`` checks the rank and binds Nb, L, H, P (or compares them with the
    sizes bound by earlier arguments); ``sig.divides("G", "H", "B")`` checks that one bound size divides
    another. Arguments must all be on one device.
    """

    def __init__(self, op: str):
        self.op = op
        self.dims: dict[str, int] = {}
        self.source: dict[str, str] = {}  # which argument bound each dimension, for messages
        self.device: torch.device | None = None
        self.dtypes: list[torch.dtype] = []

    def tensor(self, name: str, t, spec: str | tuple[str, ...] | None, *, complex_ok: bool = False):
        """Check ``t`` (None passes through) against one spec, any of several (``("d n", "n")``) or, for
        ``spec=None``, only its type, dtype and device."""
        if t is None:
            return None
        specs = () if spec is None else (spec,) if isinstance(spec, str) else spec
        if not isinstance(t, torch.Tensor):
            shown = " or ".join(_paren(s.split()) for s in specs) or "any shape"
            raise TypeError(f"{self.op}: {name} must be a torch.Tensor of shape {shown}, got {type(t).__name__}")
        self._dtype(name, t, complex_ok)
        if self.device is None:
            self.device = t.device
        elif t.device != self.device:
            raise ValueError(f"{self.op}: {name} is on {t.device}, the other arguments on {self.device}")
        if spec is None:
            return t
        shape = tuple(t.shape)
        for s in specs:
            syms = _symbols(s)
            if self._matches(syms, shape):
                self._bind(name, syms, shape)
                return t
        expected = " or ".join(self._show(s.split()) for s in specs)
        raise ValueError(f"{self.op}: {name} must have shape {expected}, got {tuple(t.shape)}")

    def divides(self, part: str, whole: str, name: str) -> None:
        p, w = self.dims[part], self.dims[whole]
        if w % p:
            raise ValueError(
                f"{self.op}: {name}'s group count {part} = {p} (from {self.source[part]}) must divide "
                f"{whole} = {w} (from {self.source[whole]})"
            )

    def common_dtype(self) -> torch.dtype:
        """The real dtype every checked tensor promotes to (complex tensors count by their real part)."""
        out = self.dtypes[0]
        for d in self.dtypes[1:]:
            out = torch.promote_types(out, d)
        return out

    def _dtype(self, name: str, t: torch.Tensor, complex_ok: bool) -> None:
        if t.is_complex():
            if not complex_ok:
                raise TypeError(f"{self.op}: {name} must be a real floating tensor, got {t.dtype}")
            self.dtypes.append(t.real.dtype)
        elif t.is_floating_point():
            self.dtypes.append(t.dtype)
        else:
            kind = "real or complex floating" if complex_ok else "real floating"
            raise TypeError(f"{self.op}: {name} must be a {kind} tensor, got {t.dtype}")

    def _matches(self, syms: tuple[str, ...], shape: tuple[int, ...]) -> bool:
        if len(syms) != len(shape):
            return False
        dims = self.dims
        for s, n in zip(syms, shape):
            if dims.get(s, n) != n:
                return False
        return True

    def _bind(self, name: str, syms: tuple[str, ...], shape: tuple[int, ...]) -> None:
        for i, (s, n) in enumerate(zip(syms, shape)):
            if s not in self.dims:
                self.dims[s], self.source[s] = n, f"{name}.shape[{i}]"

    def _show(self, syms: list[str]) -> str:
        values = [str(self.dims.get(s, s)) for s in syms]
        return f"{_paren(syms)} = {_paren(values)}" if values != syms else _paren(syms)


@functools.cache
def _symbols(spec: str) -> tuple[str, ...]:
    """The dimension names of a spec ("Nb L H P"), split once per spec."""
    return tuple(spec.split())


def _paren(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def cast(t: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """``t`` in the real ``dtype`` (its complex counterpart for a complex ``t``); a no-op when it already is."""
    if t is None:
        return None
    want = (torch.complex128 if dtype == torch.float64 else torch.complex64) if t.is_complex() else dtype
    return t if t.dtype == want else t.to(want)
