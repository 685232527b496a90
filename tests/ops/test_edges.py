"""Edge inputs to every op under src/seqmix/ops: each case either raises a ValueError/TypeError whose message
names the argument and what was expected, or equals an independent oracle (tests/oracles.py).

Guards issue 12 §2: before the fix, empty sequences and chunk sizes of 0 gave raw torch errors (or a silent
default chunk), convolution kernels longer than the sequence wrapped around, group counts that do not divide
were raw reshape errors, and mixed dtypes were silently downcast. Float64 oracles, tolerance 1e-10 relative
(``rel_err``: ||a - b|| / ||b||); a float32 input mixed with float64 ones must be computed in float64.
"""

from __future__ import annotations

import pytest
import torch

from seqmix.ops import fftconv, ssd
from seqmix.ops import selective_scan as ss
from tests.edge_check import Raises, _r, _t, check
from tests.oracles import causal_conv_loop, selective_scan_loop, ssd_loop


# ---------------------------------------------------------------- selective scan
def scan_args(L=7, G=2, d=4, n=3, Nb=2):
    delta = torch.nn.functional.softplus(_r(Nb, L, d, seed=1))
    A, B_bias, D, x0 = -torch.exp(_r(d, n, seed=2)), _r(d, n, seed=5), _r(d, seed=6), _r(Nb, d, n, seed=7)
    B, C = _r(Nb, L, G, n, seed=3), _r(Nb, L, G, n, seed=4)
    return dict(u=_r(Nb, L, d), delta=delta, A=A, B=B, C=C, B_bias=B_bias, D=D, x0=x0)


def scan_case(expected=None, chunk=None, disc="zoh", **changes):
    a = {**scan_args(**{k: changes.pop(k) for k in ("L", "G") if k in changes}), **changes}
    run = lambda: ss.selective_scan(**a, disc=disc, chunk=chunk, return_state=True)
    oracle = lambda: selective_scan_loop(*(a[k] for k in ("u", "delta", "A", "B", "C", "B_bias", "D")), disc, a["x0"])
    return run, expected or oracle


SCAN = {
    "L0": scan_case(L=0),
    "L1": scan_case(L=1),
    "chunk0": scan_case(Raises(ValueError, r"chunk.*positive integer.*got 0"), chunk=0),
    "chunk-neg": scan_case(Raises(ValueError, r"chunk.*positive integer.*got -2"), chunk=-2),
    "chunk-float": scan_case(Raises(ValueError, r"chunk.*positive integer"), chunk=2.5),
    "chunk>L": scan_case(chunk=50),
    "chunk-not-dividing": scan_case(chunk=3),
    "groups-not-dividing": scan_case(Raises(ValueError, r"B.*group count G = 3.*divide d = 4"), G=3),
    "u-float32": scan_case(u=scan_args()["u"].float()),
    "x0-float32": scan_case(x0=scan_args()["x0"].float()),
    "u-int": scan_case(Raises(TypeError, r"u.*floating"), u=torch.ones(2, 7, 4, dtype=torch.long)),
    "u-complex": scan_case(Raises(TypeError, r"u.*real"), u=scan_args()["u"].to(torch.complex128)),
    "u-rank2": scan_case(Raises(ValueError, r"u.*\(Nb, L, d\)"), u=_r(7, 4)),
    "delta-shape": scan_case(Raises(ValueError, r"delta.*\(Nb, L, d\)"), delta=_r(2, 6, 4).abs()),
    "A-shape": scan_case(Raises(ValueError, r"A.*\(d, n\).* or \(n,\)"), A=-_r(5, 3).abs()),
    "C-shape": scan_case(Raises(ValueError, r"C.*\(Nb, L, G, n\)"), C=_r(2, 7, 2, 4)),
    "B_bias-shape": scan_case(Raises(ValueError, r"B_bias.*\(d, n\)"), B_bias=_r(3, 3)),
    "D-shape": scan_case(Raises(ValueError, r"D.*\(d,\)"), D=_r(5)),
    "x0-shape": scan_case(Raises(ValueError, r"x0.*\(Nb, d, n\)"), x0=_r(2, 4, 2)),
    "noncontiguous": scan_case(u=_t(scan_args()["u"]), B=_t(scan_args()["B"]), A=_t(scan_args()["A"])),
    "disc": scan_case(Raises(ValueError, r"disc.*'zoh' or 'euler'"), disc="rk4"),
}


@pytest.mark.parametrize("case", SCAN)
def test_selective_scan_edges(case):
    check(*SCAN[case])


def test_selective_scan_step_and_linear_scan_edges():
    a = scan_args(L=1)
    with pytest.raises(ValueError, match=r"state.*\(Nb, d, n\)"):
        ss.selective_scan_step(_r(2, 4, 5), a["u"][:, 0], a["delta"][:, 0], a["A"], a["B"][:, 0], a["C"][:, 0])
    with pytest.raises(ValueError, match=r"chunk.*positive integer.*got 0"):
        ss.linear_scan(_r(2, 5, 3), _r(2, 5, 3), chunk=0)


# ---------------------------------------------------------------- SSD
def ssd_args(L=7, G=2, H=4, P=3, N=5, Nb=2):
    dt, A = torch.nn.functional.softplus(_r(Nb, L, H, seed=1)), -_r(H, seed=2).abs() - 0.1
    B, C, D, h0 = _r(Nb, L, G, N, seed=3), _r(Nb, L, G, N, seed=4), _r(H, seed=5), _r(Nb, H, P, N, seed=6)
    return dict(x=_r(Nb, L, H, P), dt=dt, A=A, B=B, C=C, D=D, h0=h0)


def ssd_case(expected=None, chunk=4, fn=None, **changes):
    a = {**ssd_args(**{k: changes.pop(k) for k in ("L", "G", "H") if k in changes}), **changes}
    fn = fn or (lambda **k: ssd.ssd(**k, chunk=chunk, return_state=True))
    return (lambda: fn(**a)), expected or (lambda: ssd_loop(**a))


SSD = {
    "L0": ssd_case(L=0),
    "L1": ssd_case(L=1),
    "L0-recurrent": ssd_case(L=0, fn=lambda **k: ssd.ssd_recurrent(**k, return_state=True)),
    "chunk0": ssd_case(Raises(ValueError, r"chunk.*positive integer.*got 0"), chunk=0),
    "chunk-neg": ssd_case(Raises(ValueError, r"chunk.*positive integer.*got -1"), chunk=-1),
    "chunk>L": ssd_case(chunk=64),
    "chunk-not-dividing": ssd_case(chunk=3),
    "groups-not-dividing": ssd_case(Raises(ValueError, r"B.*group count G = 3.*divide H = 4"), G=3),
    "groups-not-dividing-recurrent": ssd_case(
        Raises(ValueError, r"group count G = 4.*divide H = 6"), G=4, H=6, fn=ssd.ssd_recurrent
    ),
    "x-float32": ssd_case(x=ssd_args()["x"].float()),
    "x-B-float32-h0-float64": ssd_case(**{k: v.float() for k, v in ssd_args().items() if k != "h0"}),
    "dt-int": ssd_case(Raises(TypeError, r"dt.*floating"), dt=torch.ones(2, 7, 4, dtype=torch.long)),
    "x-complex": ssd_case(Raises(TypeError, r"x.*real"), x=ssd_args()["x"].to(torch.complex128)),
    "x-rank3": ssd_case(Raises(ValueError, r"x.*\(Nb, L, H, P\)"), x=_r(2, 7, 12)),
    "dt-shape": ssd_case(Raises(ValueError, r"dt.*\(Nb, L, H\)"), dt=_r(2, 7, 3).abs()),
    "A-shape": ssd_case(Raises(ValueError, r"A.*\(H,\)"), A=-_r(4, 1).abs()),
    "C-shape": ssd_case(Raises(ValueError, r"C.*\(Nb, L, G, N\)"), C=_r(2, 7, 2, 6)),
    "D-shape": ssd_case(Raises(ValueError, r"D.*\(H,\)"), D=_r(3)),
    "h0-shape": ssd_case(Raises(ValueError, r"h0.*\(Nb, H, P, N\)"), h0=_r(2, 4, 5, 3)),
    "noncontiguous": ssd_case(x=_t(ssd_args()["x"]), B=_t(ssd_args()["B"]), dt=_t(ssd_args()["dt"])),
    "not-a-tensor": ssd_case(Raises(TypeError, r"'ssd'.*x.*torch.Tensor.*list"), x=[[1.0]]),
    "A-other-device": ssd_case(Raises(ValueError, r"A is on meta.*on cpu"), A=torch.empty(4, device="meta")),
}


@pytest.mark.parametrize("case", SSD)
def test_ssd_edges(case):
    check(*SSD[case])


def test_ssd_step_edges():
    a = ssd_args(L=1)
    step = lambda **k: ssd.ssd_step(
        **{**dict(state=a["h0"], x=a["x"][:, 0], dt=a["dt"][:, 0], A=a["A"], B=a["B"][:, 0], C=a["C"][:, 0]), **k}
    )  # E731
    with pytest.raises(ValueError, match=r"state.*\(Nb, H, P, N\)"):
        step(state=_r(2, 4, 3, 4))
    with pytest.raises(ValueError, match=r"group count G = 3.*divide H = 4"):
        step(B=_r(2, 3, 5), C=_r(2, 3, 5))


# ---------------------------------------------------------------- causal FFT convolution
def conv_case(L=6, taps=None, d=3, expected=None, **changes):
    a = {"u": _r(2, L, d), "K": _r(L if taps is None else taps, d, seed=1), **changes}
    return (lambda: fftconv.causal_conv_fft(**a)), expected or (lambda: causal_conv_loop(a["u"], a["K"]))


CONV = {
    "L0": conv_case(L=0, taps=4),
    "L1": conv_case(L=1),
    "kernel-longer-than-L": conv_case(taps=9),
    "kernel-over-twice-L": conv_case(taps=15),
    "kernel-shorter-than-L": conv_case(taps=2),
    "kernel-no-taps": conv_case(taps=0, expected=Raises(ValueError, r"K.*\(taps, d\).*taps >= 1")),
    "K-channels": conv_case(K=_r(6, 4), expected=Raises(ValueError, r"K.*\(taps, d\)")),
    "K-rank1": conv_case(K=_r(6), expected=Raises(ValueError, r"K.*\(taps, d\)")),
    "u-rank2": conv_case(u=_r(6, 3), expected=Raises(ValueError, r"u.*\(Nb, L, d\)")),
    "u-float32": conv_case(u=_r(2, 6, 3).float()),
    "u-complex": conv_case(u=_r(2, 6, 3).to(torch.complex128), expected=Raises(TypeError, r"u.*real")),
    "noncontiguous": conv_case(u=_t(_r(2, 6, 3)), K=_t(_r(6, 3))),
}


@pytest.mark.parametrize("case", CONV)
def test_fftconv_edges(case):
    check(*CONV[case])
