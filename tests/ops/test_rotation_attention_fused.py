"""The fused rotation-attention backend (seqmix.ops.rotation_attention.fused: rotations around torch's SDPA,
an ALiBi path by query blocks on CPU) against the reference evaluated in float64 on upcast inputs: the output
and the gradients of q, k, v, psi and psi_v, by relative RMSE ||a - b|| / ||b|| (float64 <= 1e-10, float32
<= 1e-5, bfloat16 <= 2e-2), for NoPE, RoPE, random steps on q/k and q/k/v, ALiBi alone and with rotations;
plus a token loop with explicit transport matrices, the reference's argument checks, dtype rule and T = 0,
a probe that a long sequence never forms a T x T tensor, and the CUDA ALiBi route's padding, block mask and
score_mod run through eager flex_attention (forward only: compiled flex itself is checked on a GPU)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqmix.ops.rotation_attention import fused, reference
from tests.oracles import rel_err, transport

F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16
TOL = {F64: 1e-10, F32: 1e-5, BF16: 2e-2}
NB, H, D = 2, 3, 8

# psi / psi_v: None, "rope", "shared" (1, 1, T, d/2), "heads" (Nb, H, T, d/2), or "psi" (psi_v = psi itself)
CASES = {
    "nope": (None, None, False),
    "rope": ("rope", None, False),
    "qk_shared": ("shared", None, False),
    "qk_heads": ("heads", None, False),
    "qkv_same_heads": ("heads", "psi", False),
    "qkv_same_shared": ("shared", "psi", False),
    "qkv_separate": ("heads", "shared", False),
    "alibi": (None, None, True),
    "alibi_qk": ("heads", None, True),
    "alibi_qkv_separate": ("shared", "heads", True),
}


def _steps(kind, T: int, gen: torch.Generator, dtype: torch.dtype):
    """Angle steps of one kind (random ones require grad; RoPE's are constants)."""
    if kind is None:
        return None
    if kind == "rope":
        return reference.rope_steps(T, torch.rand(D // 2, generator=gen, dtype=F64))
    lead = (1, 1) if kind == "shared" else (NB, H)
    return (2 * torch.randn(*lead, T, D // 2, generator=gen, dtype=dtype)).requires_grad_()


def _inputs(case: str, T: int, dtype: torch.dtype, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(NB, H, T, D, generator=gen).to(dtype).requires_grad_() for _ in range(3))
    psi_kind, psi_v_kind, alibi = CASES[case]
    steps_dtype = F64 if dtype == F64 else F32  # learned steps come as float32 beside bf16 projections
    psi = _steps(psi_kind, T, gen, steps_dtype)
    psi_v = psi if psi_v_kind == "psi" else _steps(psi_v_kind, T, gen, steps_dtype)
    slopes = torch.tensor([0.5, 0.25, 0.0625]) if alibi else None
    return q, k, v, psi, psi_v, slopes


def _assert_matches_reference(case: str, T: int, dtype: torch.dtype, layout: str, scale=None):
    q, k, v, psi, psi_v, slopes = _inputs(case, T, dtype)
    leaves = [t for t in (q, k, v, psi, psi_v) if t is not None and t.requires_grad]
    leaves = list({id(t): t for t in leaves}.values())  # psi_v = psi: one leaf
    out = fused.rotation_attention(q, k, v, psi, psi_v, slopes, scale, layout)
    assert out.dtype == dtype and out.shape == (NB, H, T, D)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=F64)
    grads = torch.autograd.grad((out.double() * weight).sum(), leaves)

    exact = {id(t): t.detach().double().requires_grad_() for t in leaves}
    up = [None if t is None else exact.get(id(t), t.detach().double()) for t in (q, k, v, psi, psi_v)]
    ref = reference.rotation_attention(*up, slopes, scale, layout)
    ref_grads = torch.autograd.grad((ref * weight).sum(), list(exact.values()))
    assert rel_err(out, ref) <= TOL[dtype], f"output: rel RMSE {rel_err(out, ref):.2e}"
    largest = max(float(r.norm()) for r in ref_grads)
    for i, (g, r, t) in enumerate(zip(grads, ref_grads, leaves)):
        assert g.dtype == t.dtype and g.shape == t.shape
        if r.norm() == 0:  # T = 1: one key, so q, k and the angles get no gradient (here: rounding only)
            assert g.norm() <= TOL[dtype] * largest, f"leaf {i}: gradient {float(g.norm()):.2e}, should be 0"
        else:
            assert rel_err(g, r) <= TOL[dtype], f"leaf {i}: gradient rel RMSE {rel_err(g, r):.2e}"


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize("T", [1, 17, 37])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("case", list(CASES))
def test_fused_matches_the_float64_reference(case, layout, T, dtype):
    _assert_matches_reference(case, T, dtype, layout)


@pytest.mark.parametrize("case", ["nope", "qkv_separate", "alibi", "alibi_qkv_separate"])
def test_fused_matches_the_reference_in_bfloat16(case):
    _assert_matches_reference(case, 37, BF16, "half")


@pytest.mark.parametrize("case", ["qk_heads", "alibi_qkv_separate"])
def test_fused_keeps_an_explicit_scale(case):
    _assert_matches_reference(case, 17, F64, "interleaved", scale=0.7)


def test_cpu_alibi_blocks_cover_lengths_past_one_block():
    """T = 300 spans three query blocks of 128, the last one partial; float64 so any seam shows."""
    _assert_matches_reference("alibi_qkv_separate", 300, F64, "half")


def test_fused_matches_a_token_loop_with_transport_matrices():
    """out_i = sum_j a_ij P^v_{j->i} v_j, a_i = softmax_j(q_i^T P_{j->i} k_j / sqrt(d) - m (i - j)) with the
    transports multiplied out step by step (oracles.transport): no rotate(), no prefix sums."""
    gen = torch.Generator().manual_seed(3)
    T, d, m = 7, 4, 0.3
    q, k, v = (torch.randn(1, 1, T, d, generator=gen, dtype=F64) for _ in range(3))
    psi, psi_v = (torch.rand(1, 1, T, d // 2, generator=gen, dtype=F64) * 3 for _ in range(2))
    out = fused.rotation_attention(q, k, v, psi, psi_v, torch.tensor([m], dtype=F64))
    expected = torch.zeros(T, d, dtype=F64)
    for i in range(T):
        logits = torch.stack(
            [q[0, 0, i] @ transport(psi[0, 0], j, i) @ k[0, 0, j] * d**-0.5 - m * (i - j) for j in range(i + 1)]
        )
        a = torch.softmax(logits, 0)
        expected[i] = sum(a[j] * transport(psi_v[0, 0], j, i) @ v[0, 0, j] for j in range(i + 1))
    assert rel_err(out[0, 0], expected) <= 1e-12


def test_fused_follows_the_reference_dtype_rule_and_checks():
    q = torch.randn(1, 2, 5, 4)
    k = torch.randn(1, 2, 5, 4, dtype=F64)
    slopes = torch.tensor([0.5, 0.25], requires_grad=True)
    out = fused.rotation_attention(q, k, q, slopes=slopes)
    assert out.dtype == F64 and torch.allclose(out, reference.rotation_attention(q, k, q, slopes=slopes))
    out.sum().backward()
    assert slopes.grad is None  # a constant, as in the reference
    with pytest.raises(ValueError, match=r"psi must have shape \(Nb or 1, H or 1, T, d/2\)"):
        fused.rotation_attention(q, q, q, torch.zeros(1, 2, 5, 3))
    with pytest.raises(ValueError, match=r"slopes must have shape \(H,\) = \(2,\)"):
        fused.rotation_attention(q, q, q, slopes=torch.zeros(3))
    with pytest.raises(ValueError, match="layout must be 'half' or 'interleaved'"):
        fused.rotation_attention(q, q, q, layout="split")
    with pytest.raises(ValueError, match="head dim d must be even"):
        fused.rotation_attention(*(torch.zeros(1, 2, 5, 3) for _ in range(3)), psi=torch.zeros(1, 1, 5, 1))
    empty = [torch.randn(1, 2, 0, 4, dtype=dt) for dt in (F32, F64, F32)]
    got, want = fused.rotation_attention(*empty, slopes=slopes), reference.rotation_attention(*empty)
    assert got.shape == want.shape == (1, 2, 0, 4) and got.dtype == want.dtype == F64


def test_fused_on_cpu_never_touches_cuda(monkeypatch):
    def touched(*args, **kwargs):
        raise AssertionError("torch.cuda was touched on CPU tensors")

    for name in ("is_available", "_lazy_init", "current_device", "device_count", "synchronize",
                 "get_device_properties", "current_stream"):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, touched)
    q, k, v, psi, psi_v, slopes = _inputs("alibi_qkv_separate", 9, F32)
    fused.rotation_attention(q, k, v, psi, psi_v, slopes).sum().backward()
    fused.rotation_attention(q, k, v, psi, psi_v).sum().backward()
    assert q.grad is not None and psi_v.grad is not None


class _LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an aten op returns."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _largest_tensor(fn, T: int) -> int:
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 1, T, 16, generator=gen, requires_grad=True) for _ in range(3))
    psi = torch.randn(1, 1, T, 8, generator=gen, requires_grad=True)
    probe = _LargestTensor()
    with probe:
        fn(q, k, v, psi, psi, torch.tensor([0.1])).sum().backward()
        fn(q, k, v, psi, psi).sum().backward()
    return probe.largest


def test_long_sequences_never_form_a_t_by_t_tensor():
    """T = 2048, one head, forward and backward, with and without ALiBi: no tensor near T x T (the CPU ALiBi
    path's (128 x T) logit blocks are T^2 / 16)."""
    T = 2048
    assert _largest_tensor(reference.rotation_attention, T) >= T * T  # the probe sees the reference's logits
    assert _largest_tensor(fused.rotation_attention, T) <= T * T // 8


@pytest.mark.parametrize("T", [128, 384, 1024])
def test_causal_block_mask_from_block_lists_equals_create_block_mask(T):
    """The CUDA ALiBi path's BlockMask, built from block lists without a T x T evaluation, lists the same
    partial and full blocks (both directions: the backward reads the q-side lists) as create_block_mask."""
    from torch.nn.attention.flex_attention import create_block_mask

    got = fused._causal_block_mask(T, torch.device("cpu"))
    want = create_block_mask(fused._causal, None, None, T, T, device="cpu")
    assert got.shape == want.shape and got.BLOCK_SIZE == want.BLOCK_SIZE
    for side in ("kv", "full_kv", "q", "full_q"):
        counts, indices = getattr(want, f"{side}_num_blocks"), getattr(want, f"{side}_indices")
        assert torch.equal(getattr(got, f"{side}_num_blocks").long(), counts.long()), side
        mine = getattr(got, f"{side}_indices")[0, 0].long()
        for row, count in enumerate(counts[0, 0].tolist()):  # entries past the count are never read
            assert torch.equal(mine[row, :count], indices[0, 0, row, :count].long()), (side, row)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")  # eager on purpose here
@pytest.mark.parametrize("T", [1, 17, 300])
def test_cuda_alibi_route_padding_mask_and_score_mod_on_cpu(T):
    """The CUDA ALiBi route (zero padding to whole blocks, the block-list mask, the score_mod) run with eager
    flex_attention on CPU, forward only (CPU flex has no backward), against the reference in float32."""
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 3, T, 16, generator=gen) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.0625])
    got = fused._padded_flex(fused._alibi_flex, q, k, v, slopes, 0.3)
    want = reference.rotation_attention(q.double(), k.double(), v.double(), slopes=slopes, scale=0.3)
    assert got.shape == (2, 3, T, 16) and rel_err(got, want) <= TOL[F32]
