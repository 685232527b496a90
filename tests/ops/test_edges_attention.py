"""Edge inputs to the feedback solve, the rotary ops and PaTH attention (the other half of
tests/ops/test_edges.py, same rule): a ValueError/TypeError naming the argument and what was expected, or
equality with an independent float64 oracle (relative error ||a - b|| / ||b|| <= 1e-10).

Guards issue 12 §2: before the fix an empty sequence or ``chunk=0`` in PaTH attention was a ZeroDivisionError,
``block=0`` a raw ``range`` error, a float64 ``alpha`` beside a float32 ``f`` was silently cast down to float32,
an odd head dimension was silently floored, and mismatched shapes gave raw torch errors.
"""

from __future__ import annotations

import pytest
import torch

from seqmix.ops import feedback_solve as fs
from seqmix.ops import path_attention
from seqmix.ops.rotary import reference as rotary
from tests.edge_check import F64, Raises, _r, _t, check
from tests.oracles import feedback_recurrence, path_logits_explicit, rotate_blocks


# ---------------------------------------------------------------- feedback solve
def fb_args(T=6, Nb=2, D=3):
    strict = torch.ones(T, T, dtype=torch.bool).tril(-1)
    alpha = torch.softmax(_r(Nb, T, T, seed=2).masked_fill(~strict, -1e300), -1) * strict
    return dict(f=_r(Nb, T, D), gamma=0.9 * torch.tanh(_r(Nb, T, seed=1)), alpha=alpha)


def fb_case(expected=None, block=None, T=6, **changes):
    a = {**fb_args(T), **changes}
    fn = fs.feedback_solve if block is None else (lambda **k: fs.feedback_solve_blocked(**k, block=block))
    return (lambda: fn(**a)), expected or (lambda: feedback_recurrence(**a))


FEEDBACK = {
    "T0": fb_case(T=0),
    "T1": fb_case(T=1),
    "T0-blocked": fb_case(T=0, block=4),
    "block0": fb_case(Raises(ValueError, r"block.*positive integer.*got 0"), block=0),
    "block-neg": fb_case(Raises(ValueError, r"block.*positive integer.*got -3"), block=-3),
    "block>T": fb_case(block=50),
    "block-not-dividing": fb_case(block=4),
    "f-float32": fb_case(f=fb_args()["f"].float()),
    "f-int": fb_case(Raises(TypeError, r"f.*floating"), f=torch.ones(2, 6, 3, dtype=torch.long)),
    "f-rank2": fb_case(Raises(ValueError, r"f.*\(Nb, T, D\)"), f=_r(6, 3)),
    "gamma-shape": fb_case(Raises(ValueError, r"gamma.*\(Nb, T\)"), gamma=_r(2, 1)),
    "alpha-shape": fb_case(Raises(ValueError, r"alpha.*\(Nb, T, T\)"), alpha=_r(2, 6, 7)),
    "batch-mismatch": fb_case(Raises(ValueError, r"alpha.*\(Nb, T, T\)"), alpha=_r(3, 6, 6)),
    "noncontiguous": fb_case(f=_t(fb_args()["f"]), alpha=_t(fb_args()["alpha"])),
}


@pytest.mark.parametrize("case", FEEDBACK)
def test_feedback_solve_edges(case):
    check(*FEEDBACK[case])


# ---------------------------------------------------------------- rotary
def rotate_case(T=5, d=6, layout="half", expected=None, **changes):
    a = {"x": _r(T, d), "theta": _r(T, d // 2, seed=1), **changes}

    def run():
        cos, sin = (a.get("cos"), a.get("sin")) if "cos" in a else rotary.cos_sin(a["theta"], F64)
        return rotary.rotate(a["x"], cos, sin, layout)

    return run, expected or (lambda: rotate_blocks(a["x"], a["theta"], layout))


ROTARY = {
    "rotate-T0": rotate_case(T=0),
    "rotate-T1": rotate_case(T=1, layout="interleaved"),
    "rotate-odd-d": rotate_case(d=5, expected=Raises(ValueError, r"x.*last dimension.*even.*got 5")),
    "rotate-cos-shape": rotate_case(cos=_r(5, 4), sin=_r(5, 4), expected=Raises(ValueError, r"cos.*\(\.\.\., T, 3\)")),
    "rotate-sin-shape": rotate_case(cos=_r(5, 3), sin=_r(5, 2), expected=Raises(ValueError, r"sin.*shape of cos")),
    "rotate-x-float32": rotate_case(x=_r(5, 6).float()),
    "rotate-x-int": rotate_case(x=torch.ones(5, 6, dtype=torch.long), expected=Raises(TypeError, r"x.*floating")),
    "rotate-noncontiguous": rotate_case(x=_t(_r(6, 5)).T, layout="interleaved"),
    "rotate-layout": rotate_case(layout="zigzag", expected=Raises(ValueError, r"layout.*'half' or 'interleaved'")),
}


@pytest.mark.parametrize("case", ROTARY)
def test_rotate_edges(case):
    check(*ROTARY[case])


def test_angle_edges():
    """Empty and one-step angle scans equal the exclusive prefix sum; malformed sizes name the argument."""
    assert rotary.accumulate_angles(_r(2, 0, 3)).shape == (2, 0, 3)
    assert torch.equal(rotary.accumulate_angles(_r(2, 1, 3)), torch.zeros(2, 1, 3, dtype=F64))
    assert rotary.rope_angles(0, rotary.rope_frequencies(4)).shape == (0, 2)
    with pytest.raises(ValueError, match=r"psi.*\(\.\.\., T, B\)"):
        rotary.accumulate_angles(_r(4))
    with pytest.raises(ValueError, match=r"theta0.*\(\.\.\., B\) = \(2, 3\)"):
        rotary.accumulate_angles(_r(2, 5, 3), theta0=_r(2, 4))
    for bad in (0, -2, 2.0):
        with pytest.raises(ValueError, match=rf"head_dim.*positive integer.*got {bad}"):
            rotary.rope_frequencies(bad)
    with pytest.raises(ValueError, match=r"T.*non-negative.*got -1"):
        rotary.rope_angles(-1, rotary.rope_frequencies(4))


# ---------------------------------------------------------------- PaTH attention
def path_args(T=5, Nb=1, H=2, d=4):
    w = torch.nn.functional.normalize(_r(Nb, H, T, d, seed=3), dim=-1)
    return dict(q=_r(Nb, H, T, d), k=_r(Nb, H, T, d, seed=1), v=_r(Nb, H, T, d, seed=2), w=w,
                beta=2 * torch.sigmoid(_r(Nb, H, T, seed=4)))  # fmt: skip


def path_oracle(q, k, v, w, beta):
    Nb, H, T, d = q.shape
    logits = torch.stack([path_logits_explicit(q[0, h], k[0, h], w[0, h], beta[0, h]) for h in range(H)])[None]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return torch.softmax((logits * d**-0.5).masked_fill(mask, float("-inf")), -1) @ v.to(F64)


def path_case(expected=None, chunk=2, T=5, logits=False, **changes):
    a = {**path_args(T), **changes}
    if logits:  # the unscaled logits alone, against the explicit Householder products
        a.pop("v")
        run = lambda: path_attention.path_logits(**a, chunk=chunk)
        return run, expected or (
            lambda: torch.stack([path_logits_explicit(*(t[0, h] for t in a.values())) for h in range(2)])[None]
        )
    return (lambda: path_attention.path_attention(**a, chunk=chunk)), expected or (lambda: path_oracle(**a))


PATH = {
    "T0": path_case(T=0),
    "T1": path_case(T=1),
    "chunk0": path_case(Raises(ValueError, r"chunk.*positive integer.*got 0"), chunk=0),
    "chunk-neg": path_case(Raises(ValueError, r"chunk.*positive integer.*got -4"), chunk=-4),
    "chunk>T": path_case(chunk=32),
    "chunk-not-dividing": path_case(chunk=3),
    "q-float32": path_case(q=path_args()["q"].float()),
    "beta-float32": path_case(beta=path_args()["beta"].float()),
    "q-int": path_case(Raises(TypeError, r"q.*floating"), q=torch.ones(1, 2, 5, 4, dtype=torch.long)),
    "q-rank3": path_case(Raises(ValueError, r"q.*\(Nb, H, T, d\)"), q=_r(2, 5, 4)),
    "k-shape": path_case(Raises(ValueError, r"k.*\(Nb, H, T, d\)"), k=_r(1, 2, 4, 4)),
    "w-shape": path_case(Raises(ValueError, r"w.*\(Nb, H, T, d\)"), w=_r(1, 2, 5, 3)),
    "v-shape": path_case(Raises(ValueError, r"v.*\(Nb, H, T, dv\)"), v=_r(1, 2, 6, 4)),
    "beta-shape": path_case(Raises(ValueError, r"beta.*\(Nb, H, T\)"), beta=_r(1, 2, 5, 1)),
    "noncontiguous": path_case(q=_t(path_args()["q"]), w=_t(path_args()["w"])),
    "logits-T0": path_case(T=0, logits=True),
    "logits-chunk-not-dividing": path_case(chunk=3, logits=True),
    "logits-chunk0": path_case(Raises(ValueError, r"chunk.*positive integer.*got 0"), chunk=0, logits=True),
    "logits-beta-shape": path_case(Raises(ValueError, r"beta.*\(Nb, H, T\)"), beta=_r(1, 2, 4), logits=True),
}


@pytest.mark.parametrize("case", PATH)
def test_path_attention_edges(case):
    check(*PATH[case])
