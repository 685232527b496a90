"""Shared by the op edge tests (tests/ops/test_edges*.py): the expected outcome of one edge case."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from tests.oracles import rel_err

F64 = torch.float64


@dataclass
class Raises:
    exc: type
    match: str  # regex over the message: the argument's name and what was expected


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)), dtype=F64)


def _t(t):
    """A non-contiguous tensor with the same values (a transposed copy, transposed back)."""
    return t.transpose(0, -1).contiguous().transpose(0, -1)


def check(run, expected):
    """``run()`` raises as ``expected`` says, or its outputs equal ``expected()`` in shape, dtype and value."""
    if isinstance(expected, Raises):
        with pytest.raises(expected.exc, match=expected.match):
            run()
        return
    outs, refs = run(), expected()
    outs, refs = (outs, refs) if isinstance(outs, tuple) else ((outs,), (refs,))
    for out, ref in zip(outs, refs, strict=True):
        assert out.shape == ref.shape, (out.shape, ref.shape)
        assert out.dtype in (F64, torch.complex128), out.dtype  # mixed float32/float64 inputs compute in float64
        assert out.numel() == 0 or rel_err(out, ref) <= 1e-10
