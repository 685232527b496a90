"""The rotation-attention op (seqmix.ops.rotation_attention) in pure torch: its reference reproduces the
attention mixer's rotation and ALiBi variants exactly (the conventions a kernel behind it must keep), and on
CPU tensors the dispatcher runs the references without touching torch.cuda. Guards: today's main has no such
op, and no kernel module that refuses to import on a CPU-only build."""

from __future__ import annotations

import math
import sys

import pytest
import torch

from seqmix.mixers.softmax_attention import SoftmaxAttention
from seqmix.ops import feedback_solve as fs_ops
from seqmix.ops import rotation_attention as ra_ops
from seqmix.ops.dispatch import Op
from seqmix.ops.triton_support import require_kernel_runtime


def _mixer_and_op(mixer: SoftmaxAttention, x: torch.Tensor, psi, psi_v, slopes) -> tuple[torch.Tensor, torch.Tensor]:
    """(the mixer's output, the same output through the op) on x: (B, T, D)."""
    Bsz, T, D = x.shape
    q, k, v = mixer.qkv(x).view(Bsz, T, 3, mixer.heads, mixer.head_dim).permute(2, 0, 3, 1, 4)
    o = ra_ops.rotation_attention(q, k, v, psi, psi_v, slopes, layout=mixer.layout)
    return mixer(x), mixer.out(o.transpose(1, 2).reshape(Bsz, T, D))


@pytest.mark.parametrize(
    "options",
    [
        {"position": "rope", "rotate_values": True},
        {"position": "rope", "layout": "interleaved"},
        {"position": "alibi"},
        {"position": "nope"},
        {"position": "so2_random", "rotate_values": True},  # separate value steps (spec U11)
        {"position": "so2_random", "rotate_values": True, "value_path": "same", "angles_per_head": True},
        {"position": "so2_learned", "rotate_values": True},  # angles from the hidden state, per head
    ],
)
def test_reference_reproduces_the_attention_mixer(options):
    torch.manual_seed(0)
    mixer = SoftmaxAttention(16, heads=2, **options).double()
    x = torch.randn(2, 11, 16, dtype=torch.float64)
    T, position = x.shape[1], options["position"]
    psi = psi_v = slopes = None
    if position == "rope":
        psi = ra_ops.rope_steps(T, mixer.omega)
    elif position == "alibi":
        slopes = mixer.slopes
    elif position == "so2_random":
        mixer.reseed()
        psi = mixer._random_steps(2, T)
        psi_v = psi if options.get("value_path") == "same" else mixer._random_steps(2, T)
        mixer.reseed()  # the mixer's forward draws the same steps again
    elif position == "so2_learned":
        torch.nn.init.normal_(mixer.angle_proj.weight, std=0.5)
        g = mixer.angle_proj(x).reshape(2, T, 2, mixer.head_dim // 2).transpose(1, 2)
        psi = mixer.omega + math.pi * torch.tanh(g)
    if options.get("rotate_values") and psi_v is None:
        psi_v = psi
    expected, got = _mixer_and_op(mixer, x, psi, psi_v, slopes)
    assert torch.allclose(got, expected, atol=1e-12, rtol=0)


@pytest.fixture
def no_cuda(monkeypatch):
    """torch.cuda entry points that raise: any touch of CUDA fails the test."""

    def touched(*args, **kwargs):
        raise AssertionError("torch.cuda was touched on CPU tensors")

    for name in ("is_available", "_lazy_init", "current_device", "device_count", "synchronize",
                 "get_device_properties", "current_stream"):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, touched)


def test_dispatcher_runs_the_references_on_cpu_without_touching_cuda(no_cuda):
    gen = torch.Generator().manual_seed(1)
    f = torch.randn(1, 6, 3, generator=gen, requires_grad=True)
    gamma, alpha = torch.rand(1, 6, generator=gen), torch.softmax(torch.randn(1, 6, 6, generator=gen), -1)
    assert fs_ops.backend_for(f) == "reference" and fs_ops.OP.backend_on(f.device) == "reference"
    s = fs_ops.feedback_solve(f, gamma, alpha)
    assert torch.equal(s, fs_ops.reference.feedback_solve_dense(f, gamma, alpha))
    q, k, v = (torch.randn(1, 2, 6, 4, generator=gen, requires_grad=True) for _ in range(3))
    psi = torch.rand(1, 1, 6, 2, generator=gen, dtype=torch.float64)
    assert ra_ops.backend_for(q) == "reference"
    o = ra_ops.rotation_attention(q, k, v, psi, psi, torch.tensor([0.5, 0.25]))
    assert torch.equal(o, ra_ops.reference.rotation_attention(q, k, v, psi, psi, torch.tensor([0.5, 0.25])))
    (s.sum() + o.sum()).backward()
    assert f.grad is not None and q.grad is not None


@pytest.mark.parametrize("package", ["feedback_solve", "rotation_attention"])
def test_kernel_module_refuses_a_cpu_only_build_and_falls_back(monkeypatch, package):
    """On a CPU build of torch without TRITON_INTERPRET the kernel module does not import, so the op's
    kernel is declared but not registered, and a request for it falls back to the reference."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)
    with pytest.raises(ImportError, match="CPU-only"):
        require_kernel_runtime(package)
    monkeypatch.delitem(sys.modules, f"seqmix.ops.{package}.triton", raising=False)  # a copy another test imported
    op = Op(package, f"seqmix.ops.{package}", lambda x: x)
    assert op.kernel_declared and "triton" not in op.backends and "CPU-only" in op.kernel_error
    with pytest.warns(RuntimeWarning, match="CPU-only"):
        assert op.backend_for(torch.zeros(1), "triton") == "reference"


def _block_rotation(theta: torch.Tensor, d: int) -> torch.Tensor:
    """The d x d matrix rotating block b = (b, b + d/2) by theta[b] (``half`` layout), built entry by entry."""
    R = torch.eye(d, dtype=torch.float64)
    for b, t in enumerate(theta.tolist()):
        e, o = b, b + d // 2
        R[e, e], R[e, o], R[o, e], R[o, o] = math.cos(t), -math.sin(t), math.sin(t), math.cos(t)
    return R


def test_reference_matches_a_token_loop_with_explicit_rotation_matrices():
    """score_ij = q_i^T R(Theta_j - Theta_i) k_j / sqrt(d) - m (i - j), out_i = sum_j a_ij R(Phi_j - Phi_i) v_j,
    with Theta, Phi the exclusive prefix sums of the steps: one query at a time, no rotate()."""
    gen = torch.Generator().manual_seed(2)
    T, d, m = 7, 4, 0.3
    q, k, v = (torch.randn(1, 1, T, d, generator=gen, dtype=torch.float64) for _ in range(3))
    psi, psi_v = (torch.rand(1, 1, T, d // 2, generator=gen, dtype=torch.float64) * 3 for _ in range(2))
    theta, phi = (torch.cumsum(p[0, 0], 0) - p[0, 0] for p in (psi, psi_v))
    out = ra_ops.rotation_attention(q, k, v, psi, psi_v, torch.tensor([m], dtype=torch.float64))
    for i in range(T):
        scores = torch.stack([
            q[0, 0, i] @ _block_rotation(theta[j] - theta[i], d) @ k[0, 0, j] / math.sqrt(d) - m * (i - j)
            for j in range(i + 1)
        ])  # fmt: skip
        a = torch.softmax(scores, 0)
        expected = sum(a[j] * _block_rotation(phi[j] - phi[i], d) @ v[0, 0, j] for j in range(i + 1))
        assert torch.allclose(out[0, 0, i], expected, atol=1e-12)


def test_reference_names_a_bad_argument():
    q = torch.zeros(1, 2, 5, 4)
    with pytest.raises(ValueError, match=r"psi must have shape \(Nb or 1, H or 1, T, d/2\) = \(1 or 1, 2 or 1, 5, 2\)"):
        ra_ops.rotation_attention(q, q, q, torch.zeros(1, 2, 5, 3))
    with pytest.raises(ValueError, match=r"slopes must have shape \(H,\) = \(2,\)"):
        ra_ops.rotation_attention(q, q, q, slopes=torch.zeros(3))
    with pytest.raises(ValueError, match="layout must be 'half' or 'interleaved'"):
        ra_ops.rotation_attention(q, q, q, layout="split")
    assert ra_ops.rotation_attention(*(torch.zeros(1, 2, 0, 4) for _ in range(3))).shape == (1, 2, 0, 4)
