"""Long-length attention: the query-blocked path (softmax attention's ``query_block``, PaTH's ``blocked_from``)
gives the single call's outputs and gradients, and its peak memory grows linearly in T (the single call's
ALiBi bias and PaTH's logits grow as T^2: on main no path of either was linear)."""

from __future__ import annotations

import pytest
import torch

from seqmix.mixers.base import build_mixer
from seqmix.mixers.blocked_attention import blocked_causal_attention
from seqmix.ops.memory import PeakTensorMemory
from seqmix.ops.path_attention import path_attention, path_attention_blocked

TOL = {torch.float32: 1e-6, torch.float64: 1e-12}
ATTENTION = ("alibi", "nope", "rope", "rope_qkv", "so2_random_qk", "so2_random_qkv", "so2_learned_qkv")


def _pair(name: str, dtype: torch.dtype, block: int, D: int = 32):
    """The same mixer twice (equal weights): one single call, one blocked for T > block."""
    torch.manual_seed(0)
    kw = {"heads": 4}
    if name == "path":
        dense, blocked = build_mixer(name, D, chunk=8, **kw), build_mixer(name, D, chunk=8, blocked_from=block, **kw)
    else:
        dense, blocked = build_mixer(name, D, **kw), build_mixer(name, D, query_block=block, **kw)
    with torch.no_grad():  # non-zero angle maps, so the learned variant is not plain RoPE
        for p in dense.parameters():
            if not p.any():
                p.normal_(0, 0.3)
    blocked.load_state_dict(dense.state_dict())
    return dense.to(dtype), blocked.to(dtype)


def _run(m, x):
    if hasattr(m, "reseed"):
        m.reseed(3)  # the random variants draw the same steps in both
    return m(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", [*ATTENTION, "path"])
def test_blocked_path_matches_single_call_and_gradients(name, dtype):
    """Blocks of 7 queries (T = 45: a partial last block) against the one-call path, outputs and gradients."""
    dense, blocked = _pair(name, dtype, block=7)
    x = torch.randn(2, 45, 32, dtype=dtype, requires_grad=True)
    y0, y1 = _run(dense, x), _run(blocked, x)
    tol = TOL[dtype]
    assert (y0 - y1).abs().max() <= tol * max(1.0, float(y0.detach().abs().max()))
    g = torch.randn_like(y0)
    gx0, *gp0 = torch.autograd.grad(y0, [x, *dense.parameters()], g)
    gx1, *gp1 = torch.autograd.grad(y1, [x, *blocked.parameters()], g)
    for a, b in zip([gx0, *gp0], [gx1, *gp1]):
        assert (a - b).abs().max() <= 10 * tol * max(1.0, float(a.abs().max()))


def test_short_sequences_keep_the_single_call():
    """T <= query_block: bit-identical to the default mixer (configs that never set it are unchanged)."""
    dense, blocked = _pair("alibi", torch.float32, block=64)
    x = torch.randn(1, 64, 32)
    assert torch.equal(dense(x), blocked(x))


def _peak_bytes(m, T: int) -> int:
    x = torch.randn(1, T, 32)
    with torch.no_grad(), PeakTensorMemory() as mem:
        _run(m, x)
    return mem.peak_bytes


@pytest.mark.parametrize("name", ["alibi", "path"])
def test_peak_memory_is_linear_in_length_on_the_blocked_path(name):
    """Evaluation (no autograd) at 4T costs under 5x the memory at T on the blocked path; the single call of
    the same mixer costs over 8x (its T x T bias or logits), which is what the blocked path exists for."""
    dense, blocked = _pair(name, torch.float32, block=64)
    T = 256
    assert _peak_bytes(blocked, 4 * T) < 5 * _peak_bytes(blocked, T)
    assert _peak_bytes(dense, 4 * T) > 8 * _peak_bytes(dense, T)


def test_peak_tensor_memory_counts_live_storages():
    """1 MiB held, 4 MiB temporary (with a view: no new storage) then freed, 1 MiB more: peak 5 MiB, not 6."""
    with PeakTensorMemory() as mem:
        kept = torch.ones(256, 1024)  # 1 MiB float32
        tmp = torch.ones(1024, 1024)  # 4 MiB
        view = tmp[:10]  # a view: no new storage
        del tmp, view
        kept = kept + 1  # the temporary is found dead at this op, before its output is counted
    assert mem.peak_bytes == 5 * 2**20
    assert mem.live_bytes == 2 * 2**20  # the first `kept` died with the rebinding, seen at the next op only
    torch.ones(1024, 1024)  # outside the mode: not counted
    assert mem.live_bytes == 2 * 2**20


def test_blocked_attention_checks_its_arguments():
    q = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="block"):
        blocked_causal_attention(q, q, q, block=0)
    with pytest.raises(ValueError, match="slopes must be positive with shape"):
        blocked_causal_attention(q, q, q, block=2, slopes=torch.ones(3))
    with pytest.raises(ValueError, match="query_block"):
        build_mixer("alibi", 8, heads=2, query_block=0)


def test_path_blocked_matches_reference_op_with_padding():
    """The op alone, T not a multiple of the chunk, float64."""
    torch.manual_seed(1)
    q, k, w = (torch.randn(2, 3, 45, 8, dtype=torch.float64) for _ in range(3))
    v = torch.randn(2, 3, 45, 5, dtype=torch.float64)
    w = torch.nn.functional.normalize(w, dim=-1)
    beta = 2 * torch.rand(2, 3, 45, dtype=torch.float64)
    ref = path_attention(q, k, v, w, beta, chunk=8)
    assert (ref - path_attention_blocked(q, k, v, w, beta, chunk=8)).abs().max() < 1e-12


def test_language_model_passes_query_block_to_its_attention():
    """A decoder LM built with ``query_block`` in its mixer block gives the same logits as without it."""
    from seqmix.models.lm import DecoderLM

    tokens = torch.randint(0, 50, (2, 40))
    logits = []
    for extra in ({}, {"query_block": 16}):
        torch.manual_seed(0)
        lm = DecoderLM(vocab_size=50, d_model=16, n_layers=2, mixer={"name": "alibi", "heads": 2, **extra})
        logits.append(lm(tokens))
    assert (logits[0] - logits[1]).abs().max() < 1e-5
    assert lm.blocks[0].mixer.query_block == 16
