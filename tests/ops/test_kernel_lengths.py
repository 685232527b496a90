"""No recompilation per length (issue 28): every Triton kernel leaves its length arguments (and the strides
that scale with the length) unspecialised, and no autotuner keys on a length, so an extrapolation sweep of
lengths reuses one compiled kernel. Read from the kernels' source, because Triton's CPU interpreter (all a
CPU-only machine runs) drops the decorator's options; benchmarks/kernels.py counts the compilations on a GPU."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

OPS = Path(__file__).resolve().parents[2] / "src" / "seqmix" / "ops"
LENGTHS = {"T", "L", "Lp", "CH", "n_chunks"}  # the names our kernels give a length or a length-derived count
KERNEL_FILES = sorted(OPS.glob("*/triton.py"))


def _decorators(fn: ast.FunctionDef) -> dict[str, ast.Call | None]:
    """'jit' / 'autotune' -> the decorator call (None for a bare ``@triton.jit``)."""
    out = {}
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr in ("jit", "autotune"):
            out[target.attr] = dec if isinstance(dec, ast.Call) else None
    return out


def _keyword_strings(call: ast.Call | None, name: str) -> set[str]:
    if call is None:
        return set()
    for kw in call.keywords:
        if kw.arg == name:
            return {e.value for e in kw.value.elts if isinstance(e, ast.Constant)}
    return set()


def test_there_are_kernels_to_check():
    assert len(KERNEL_FILES) == 4


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.parent.name)
def test_length_arguments_are_not_specialised_nor_autotune_keys(path):
    kernels = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef) or "jit" not in (decs := _decorators(node)):
            continue
        params = {a.arg for a in node.args.args}
        lengths = params & LENGTHS
        if not lengths or not node.name.endswith("_kernel"):
            continue  # a device helper inlined into its caller: compiled with it
        kernels += 1
        free = _keyword_strings(decs["jit"], "do_not_specialize")
        assert lengths <= free, f"{path.parent.name}.{node.name}: {sorted(lengths - free)} specialised"
        keys = _keyword_strings(decs.get("autotune"), "key")
        assert not keys & LENGTHS, f"{path.parent.name}.{node.name}: autotunes per {sorted(keys & LENGTHS)}"
    assert kernels, f"no launched kernel with a length argument found in {path}"
