"""State-space family: S4D convolution == recurrence; B2S6 reductions (one block, no bias == S6; Im A = 0 ==
real path); Mamba2 chunked == recurrent; B2S6 optimiser groups."""

from __future__ import annotations

import pytest
import torch

from seqmix.mixers.base import build_mixer
from seqmix.mixers.mamba import Mamba2, MambaBlock
from seqmix.mixers.ssm import B2S6, S4D, S6
from seqmix.training.optim import param_groups
from tests.oracles import rel_err, selective_scan_loop

TOL = {torch.float64: 1e-10, torch.float32: 1e-4}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("complex_,tie_BC", [(True, False), (False, False), (True, True)])
def test_s4d_convolution_equals_recurrence(dtype, complex_, tie_BC):
    torch.manual_seed(0)
    m = S4D(6, d_state=4, complex=complex_, tie_BC=tie_BC, skip=True).to(dtype)
    with torch.no_grad():
        m.log_dt.uniform_(-2, 0)  # larger steps than the init, so the kernel decays within the sequence
    x = torch.randn(2, 33, 6, dtype=dtype)
    y_conv = m(x)
    m.mode = "recurrent"
    assert rel_err(y_conv, m(x)) <= TOL[dtype]


def test_s4d_kernel_matches_oracle_recurrence():
    torch.manual_seed(1)
    m = S4D(3, d_state=4).double()
    L = 9
    # impulse response of the oracle loop = the convolution kernel
    u = torch.zeros(1, L, 3, dtype=torch.float64)
    u[:, 0] = 1
    Bp, Cp = m._BC()
    delta = torch.exp(m.log_dt).expand(1, L, 3)
    y, _ = selective_scan_loop(
        u, delta, m.A().detach(), torch.zeros(1, L, 3, 4), Cp.detach().expand(1, L, 3, 4), Bp.detach()
    )
    assert rel_err(m.kernel(L), y[0]) <= 1e-10


def test_b2s6_one_block_no_bias_equals_s6():
    torch.manual_seed(2)
    d, n = 6, 4
    s6 = S6(d, d_state=n).double()
    b2 = B2S6(d, blocks=1, d_state=n, complex=False, bias=False).double()
    with torch.no_grad():
        b2.A.log_re.copy_(s6.A.log_re)
        b2.B_w.copy_(s6.B_proj.weight[None])  # (1, n, p)
        b2.C.copy_(s6.C_proj.weight.T[None])  # (1, p, n)
        b2.w.copy_(s6.w[None])
        b2.b.copy_(s6.b)
    x = torch.randn(2, 15, d, dtype=torch.float64)
    assert rel_err(b2(x), s6(x)) <= 1e-12


def test_b2s6_complex_path_with_real_A_equals_real_path():
    torch.manual_seed(3)
    real = B2S6(8, blocks=2, d_state=3, complex=False).double()
    cplx = B2S6(8, blocks=2, d_state=3, complex=True).double()
    with torch.no_grad():
        cplx.A.log_re.copy_(real.A.log_re)
        cplx.A.im.zero_()
        cplx.B_w.copy_(torch.stack((real.B_w, torch.zeros_like(real.B_w)), -1))
        cplx.B_bias.copy_(torch.stack((real.B_bias, torch.zeros_like(real.B_bias)), -1))
        for name in ("C", "w", "b"):
            getattr(cplx, name).copy_(getattr(real, name))
    x = torch.randn(2, 10, 8, dtype=torch.float64)
    assert rel_err(cplx(x), real(x)) <= 1e-12


def test_b2s6_block_only_rank_and_bias_rank():
    """Special cases (c)/(d) of the b2s6 spec: without B_bias the channel outputs span at most h directions
    of input-driven state when u_k^(i) = 1 for all channels; with the bias the rank grows past h."""
    torch.manual_seed(4)
    d, h = 8, 2
    torch.randn(1, 12, d, dtype=torch.float64)
    for bias, limit in ((False, h), (True, d)):
        m = B2S6(d, blocks=h, d_state=6, complex=False, bias=bias).double()
        ones = torch.ones(1, 12, d, dtype=torch.float64)
        with torch.no_grad():
            m.w.zero_()  # one Delta per block; channels of a block then differ only through b and the bias
            m.b.fill_(0.3)
        delta, A, B, C, Bb, _ = m._scan_inputs(ones)
        Bin = B.repeat_interleave(d // h, dim=2)[0, 0] + (Bb if Bb is not None else 0)
        rank = torch.linalg.matrix_rank(Bin).item()
        assert rank <= limit and (rank > h) == bias


def test_b2s6_param_groups():
    """B2S6's optim_hints (b2s6 spec §2.9) become optimizer groups: A and B_bias at lr_ssm, Delta (w, b) at
    min(1e-3, 0.1 lr), none decayed; the rest at (lr, weight_decay) except biases/1-d tensors."""
    m = B2S6(8, blocks=2, d_state=3)
    groups = param_groups(m, lr=0.01, weight_decay=0.05)
    lr_of = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    assert lr_of[id(m.w)] == lr_of[id(m.b)] == (pytest.approx(1e-3), 0.0)
    assert all(lr_of[id(p)] == (m.lr_ssm, 0.0) for p in m.A.parameters())
    assert lr_of[id(m.B_bias)] == (m.lr_ssm, 0.0)
    assert lr_of[id(m.C)] == (0.01, 0.05) and lr_of[id(m.B_w)] == (0.01, 0.05)
    low = {id(p): g["lr"] for g in param_groups(m, lr=1e-3, weight_decay=0.0) for p in g["params"]}
    assert low[id(m.w)] == pytest.approx(1e-4)  # 0.1 lr when that is below the 1e-3 cap
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in m.parameters())
    blk = MambaBlock(8, unit="b2s6", unit_options={"blocks": 2, "d_state": 3})
    all_groups = param_groups(torch.nn.Sequential(blk), 0.01, 0.05)
    ids = [id(p) for g in all_groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in blk.parameters())
    by_id = {id(p): g["lr"] for g in all_groups for p in g["params"]}
    assert by_id[id(blk.unit.w)] == pytest.approx(1e-3) and by_id[id(blk.in_proj.weight)] == 0.01
    torch.optim.AdamW(all_groups)  # accepted as given


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_mamba2_chunked_equals_recurrent(dtype):
    torch.manual_seed(5)
    m = Mamba2(8, d_state=4, headdim=4, chunk=5, ngroups=2).to(dtype)
    x = torch.randn(2, 13, 8, dtype=dtype)
    y = m(x)
    m.mode = "recurrent"
    assert rel_err(y, m(x)) <= TOL[dtype]


def test_mamba_block_swappable_units():
    x = torch.randn(1, 9, 8)
    for unit, opts in (("s6", {}), ("s4d", {}), ("b2s6", {"blocks": 4})):
        assert build_mixer("mamba", 8, unit=unit, unit_options={"d_state": 3, **opts})(x).shape == x.shape


@pytest.mark.parametrize(
    "name,options",
    [
        ("mamba", {}),
        ("mamba", {"unit": "s4d"}),
        ("mamba2", {"headdim": 4, "d_state": 4, "chunk": 4}),
        ("mamba2", {"headdim": 4, "d_state": 4, "mode": "recurrent"}),
        ("s4d", {"mode": "conv"}),
    ],
)
def test_length_zero_gives_an_empty_output(name, options):
    """Before: the depthwise conv of Mamba/Mamba2 and S4D's convolution kernel refused a length-0 input
    (conv1d's "only zero batch or zero channel", "taps >= 1"); every other op returns (B, 0, d)."""
    m = build_mixer(name, 8, **options)
    x = torch.randn(2, 0, 8, requires_grad=True)
    y = m(x)
    y.sum().backward()
    assert y.shape == (2, 0, 8) and x.grad.shape == (2, 0, 8)
