"""Attention family: accumulated rotations against explicit rotation matrices along the path (oracle), and
the reduction identities of the rotations paper (zero steps = NoPE, constant steps = RoPE, learned at init =
RoPE, Q/K/V at init = RoPE Q/K/V); ALiBi against a dense bias."""

from __future__ import annotations

import math

import pytest
import torch

from seqmix.mixers.base import build_mixer
from tests.oracles import rel_err, transported_attention

D, H, T = 8, 2, 7
DH = D // H


def mixer(name, seed=0, dtype=torch.float64, **kw):
    torch.manual_seed(seed)
    return build_mixer(name, D, heads=H, **kw).to(dtype)


def projections(m, x):
    q, k, v = m.qkv(x).view(x.shape[0], x.shape[1], 3, H, DH).permute(2, 0, 3, 1, 4)
    return q, k, v


def oracle_output(m, x, psi, psi_v):
    """Per (batch, head) transported attention from the explicit matrices, then W_o. psi: (B, H|1, T, DH/2)."""
    q, k, v = projections(m, x)
    outs = torch.zeros(x.shape[0], H, T, DH, dtype=torch.float64)
    for b in range(x.shape[0]):
        for h in range(H):
            ps = psi[b, h if psi.shape[1] > 1 else 0]
            pv = None if psi_v is None else psi_v[b, h if psi_v.shape[1] > 1 else 0]
            outs[b, h] = transported_attention(q[b, h], k[b, h], v[b, h], ps, pv)
    return m.out(outs.transpose(1, 2).reshape(x.shape[0], T, D))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "name,extra",
    [
        ("rope", {}),
        ("rope_qkv", {}),
        ("so2_learned_qk", {}),
        ("so2_learned_qkv", {"angles_per_head": False}),
        ("so2_random_qk", {}),
        ("so2_random_qkv", {"value_path": "same"}),
        ("so2_random_qkv", {"angles_per_head": True}),
    ],
)
def test_rotations_match_explicit_path_matrices(name, extra, dtype):
    m = mixer(name, **extra)
    x = torch.randn(2, T, D, dtype=torch.float64)
    omega = m.omega
    if name.startswith("rope"):
        psi = omega.expand(2, 1, T, DH // 2)
        psi_v = psi if name == "rope_qkv" else None
    elif name.startswith("so2_learned"):
        with torch.no_grad():
            m.angle_proj.weight.normal_(0, 1.0)
        nh = H if m.angles_per_head else 1
        g = m.angle_proj(x).reshape(2, T, nh, DH // 2).transpose(1, 2)
        psi = omega + math.pi * torch.tanh(g)
        psi_v = psi if m.rotate_values else None
    else:
        m.reseed()
        psi = m._random_steps(2, T)
        psi_v = None
        if m.rotate_values:
            psi_v = psi if m.value_path == "same" else m._random_steps(2, T)
        m.reseed()
    ref = oracle_output(m, x, psi.detach(), None if psi_v is None else psi_v.detach())
    y = m.to(dtype)(x.to(dtype))
    assert rel_err(y, ref) <= {torch.float64: 1e-10, torch.float32: 1e-4}[dtype]


def _copy(dst, src):
    dst.load_state_dict(src.state_dict(), strict=False)
    return dst


def test_learned_rotations_at_init_equal_rope():
    x = torch.randn(2, T, D, dtype=torch.float64)
    for learned, rope in (("so2_learned_qk", "rope"), ("so2_learned_qkv", "rope_qkv")):
        a, b = mixer(learned), mixer(rope)
        _copy(b, a)
        assert rel_err(a(x), b(x)) <= 1e-12


def test_learned_token_table_at_init_equals_rope():
    a = mixer("so2_learned_qkv", vocab_size=11)
    b = _copy(mixer("rope_qkv"), a)
    x = torch.randn(2, T, D, dtype=torch.float64)
    tok = torch.randint(0, 11, (2, T))
    assert rel_err(a(x, tokens=tok), b(x)) <= 1e-12
    with pytest.raises(ValueError, match="tokens"):
        a(x)


def test_learned_angles_refuse_tokens_without_a_table():
    """Before: so2_learned with vocab_size but without token_angles took tokens= and ignored them (angles from
    the hidden state, the ids silently unused)."""
    a = mixer("softmax_attention", position="so2_learned", vocab_size=11)
    x = torch.randn(2, T, D, dtype=torch.float64)
    with pytest.raises(ValueError, match="token_angles=False, vocab_size=11"):
        a(x, tokens=torch.randint(0, 11, (2, T)))
    assert a(x).shape == x.shape  # the hidden-state angles without tokens, as before


def test_zero_random_steps_equal_nope():
    x = torch.randn(2, T, D, dtype=torch.float64)
    for name in ("so2_random_qk", "so2_random_qkv"):
        a = mixer(name, random_scale=0.0)
        b = _copy(mixer("nope"), a)
        assert rel_err(a(x), b(x)) <= 1e-12


def test_constant_steps_equal_rope():
    """Accumulating the constant step omega reproduces RoPE's angles i * omega (learned table set to 0 is the
    constant-step case; here the hidden-state projection is zero)."""
    a = mixer("so2_learned_qk")
    assert float(a.angle_proj.weight.detach().abs().max()) == 0.0
    b = _copy(mixer("rope"), a)
    x = torch.randn(1, 40, D, dtype=torch.float64)
    assert rel_err(a(x), b(x)) <= 1e-12


def test_random_angles_are_redrawn_and_reseedable():
    m = mixer("so2_random_qk")
    x = torch.randn(1, T, D, dtype=torch.float64)
    m.reseed(1)
    y1 = m(x)
    y2 = m(x)
    m.reseed(1)
    assert not torch.allclose(y1, y2) and torch.equal(y1, m(x))


def test_alibi_matches_dense_bias():
    m = mixer("alibi")
    x = torch.randn(2, T, D, dtype=torch.float64)
    q, k, v = projections(m, x)
    i = torch.arange(T)
    slopes = torch.tensor([2.0 ** (-8 * h / H) for h in range(1, H + 1)], dtype=torch.float64)
    logits = q @ k.transpose(-1, -2) / math.sqrt(DH) - slopes[:, None, None] * (i[:, None] - i[None, :])
    logits = logits.masked_fill(i[None, :] > i[:, None], float("-inf"))
    ref = m.out((torch.softmax(logits, -1) @ v).transpose(1, 2).reshape(2, T, D))
    assert rel_err(m(x), ref) <= 1e-12


def test_angles_shared_or_per_head():
    x = torch.randn(2, T, D)
    assert mixer("so2_random_qk", dtype=torch.float32).angles(x)[0].shape == (2, 1, T, DH // 2)
    assert mixer("so2_random_qk", dtype=torch.float32, angles_per_head=True).angles(x)[0].shape == (2, H, T, DH // 2)
    assert mixer("so2_learned_qk", dtype=torch.float32).angles(x)[0].shape == (2, H, T, DH // 2)


def test_preset_options_cannot_be_overridden():
    with pytest.raises(ValueError, match="fixes"):
        build_mixer("rope", D, position="alibi")
