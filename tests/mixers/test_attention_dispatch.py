"""The attention mixer (SoftmaxAttention) on the rotation-attention op: where the op's automatic choice is its
Triton kernel it routes every position through the op (angle steps, ALiBi slopes, layout, value rotation) and
says so in ``backend`` (and the MLflow backend tag); elsewhere its torch paths run and it says "reference".
Sessa's forward branch (RoPE attention, interleaved pairs) does the same.

The kernel runs here in Triton's CPU interpreter (TRITON_INTERPRET=1 is set before the kernel module imports,
restored after this module), forced onto CPU tensors by the only test-side hook: the op's ``backend_on`` is
monkeypatched to say "triton" and the interpreted kernel is put in its backends (the dispatcher's automatic
choice on CUDA, made on the CPU). Outputs and parameter gradients are compared with the default torch path by
relative RMSE <= 5e-6 in float32. Guards: on today's main the mixers never call the op (the kernel spy stays
at zero calls) and its ``backend`` is the fixed string "reference". The CPU-default tests guard what must not
change (they pass on main too).
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch
from torch import nn

from seqmix.mixers.sessa import SessaMixer
from seqmix.mixers.softmax_attention import SoftmaxAttention
from seqmix.ops import rotation_attention as ra_ops
from seqmix.ops.backends import backend_tag

_PREVIOUS = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"  # read when the kernel is decorated and when it launches
pytest.importorskip("triton", reason="triton is not installed: the kernel cannot run")

TOL = 5e-6  # measured 1e-7 (outputs) to 4e-7 (gradients)
CASES = {
    "rope": {"position": "rope"},
    "rope_qkv_interleaved": {"position": "rope", "rotate_values": True, "layout": "interleaved"},
    "so2_random_qkv": {"position": "so2_random", "rotate_values": True},  # separate value steps
    "so2_random_same_per_head": {
        "position": "so2_random",
        "rotate_values": True,
        "value_path": "same",
        "angles_per_head": True,
    },
    "so2_learned_qkv_tokens": {"position": "so2_learned", "rotate_values": True, "token_angles": True, "vocab_size": 9},
    "so2_learned_hidden": {"position": "so2_learned"},
    "alibi": {"position": "alibi"},
    "alibi_query_block": {"position": "alibi", "query_block": 8},
    "nope": {"position": "nope"},
}


def _interpreted_kernel():
    """The kernel module, (re)imported under the interpreter (a CUDA build may hold a compiled copy)."""
    full = "seqmix.ops.rotation_attention.triton"
    return importlib.reload(sys.modules[full]) if full in sys.modules else importlib.import_module(full)


ra_kernel = _interpreted_kernel()


@pytest.fixture(autouse=True, scope="module")
def _restore_interpret_flag():
    # set again for this module's tests: it was set at import (collection), but another module's teardown may
    # have restored it since, and a kernel launch reads it
    os.environ["TRITON_INTERPRET"] = "1"
    yield
    if _PREVIOUS is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = _PREVIOUS


@pytest.fixture
def kernel_calls(monkeypatch) -> list:
    """Force the op's automatic choice to the (interpreted) kernel on any device; returns the list each kernel
    call appends its psi/psi_v/slopes/layout to."""
    calls = []

    def spy(q, k, v, psi=None, psi_v=None, slopes=None, scale=None, layout="half"):
        calls.append({"psi": psi, "psi_v": psi_v, "slopes": slopes, "layout": layout})
        return ra_kernel.rotation_attention(q, k, v, psi, psi_v, slopes, scale, layout)

    monkeypatch.setitem(ra_ops.OP.backends, "triton", spy)
    monkeypatch.setattr(ra_ops.OP, "backend_on", lambda device: "triton")
    return calls


@pytest.fixture
def no_cuda(monkeypatch):
    """torch.cuda entry points that raise: any touch of CUDA fails the test."""

    def touched(*args, **kwargs):
        raise AssertionError("torch.cuda was touched on CPU tensors")

    for name in ("is_available", "_lazy_init", "current_device", "device_count", "synchronize",
                 "get_device_properties", "current_stream"):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, touched)


def rel_rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    b = b.double()
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-300)).item()


def _mixer(options: dict, d_model: int = 32, heads: int = 2) -> SoftmaxAttention:
    torch.manual_seed(0)
    mixer = SoftmaxAttention(d_model, heads=heads, **options)
    for name, p in mixer.named_parameters():
        if name.startswith("angle_"):  # the learned angles start at zero (= RoPE): give them something to learn
            nn.init.normal_(p, std=0.5)
    return mixer


def _run(mixer: nn.Module, x: torch.Tensor, tokens: torch.Tensor | None) -> tuple[torch.Tensor, dict]:
    """Output and the gradient of a fixed random projection of it w.r.t. every parameter."""
    mixer.zero_grad()
    if hasattr(mixer, "reseed"):
        mixer.reseed()  # so2_random: both runs draw the same steps
    out = mixer(x, tokens=tokens) if getattr(mixer, "needs_tokens", False) else mixer(x)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
    (out * weight).sum().backward()
    return out.detach(), {n: p.grad.clone() for n, p in mixer.named_parameters()}


def _inputs(T: int = 37, d_model: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return torch.randn(2, T, d_model, generator=gen), torch.randint(0, 9, (2, T), generator=gen)


@pytest.mark.parametrize("case", sorted(CASES))
def test_mixer_through_the_kernel_equals_the_torch_path(case, request):
    """T = 37 spans three 16-query tiles with a partial last one; d_h = 16."""
    options = CASES[case]
    mixer = _mixer(options)
    x, tokens = _inputs()
    assert mixer.backend == "reference" and not mixer.uses_kernel(x.device)
    expected, expected_grads = _run(mixer, x, tokens)
    calls = request.getfixturevalue("kernel_calls")
    assert mixer.backend == "triton" and mixer.uses_kernel(x.device)
    got, got_grads = _run(mixer, x, tokens)
    assert len(calls) == 1, "the mixer did not run the op's kernel"
    call = calls[0]
    assert call["layout"] == mixer.layout
    assert (call["psi"] is None) == (options["position"] in ("nope", "alibi"))
    assert (call["psi_v"] is None) != bool(options.get("rotate_values"))
    assert (call["slopes"] is None) != (options["position"] == "alibi")
    assert rel_rmse(got, expected) <= TOL, f"output: rel RMSE {rel_rmse(got, expected):.2e}"
    for name, g in got_grads.items():
        err = rel_rmse(g, expected_grads[name])
        assert err <= TOL, f"{case}: gradient of {name}: rel RMSE {err:.2e}"


def test_backend_tag_names_the_kernel_where_it_runs(kernel_calls):
    """The MLflow backend tag (ops.backends.backend_tag) follows the mixer's ``backend``."""
    model = nn.Sequential(_mixer({"position": "rope"}), _mixer({"position": "alibi"}))
    assert backend_tag(model) == "triton"


def test_odd_head_dim_keeps_the_torch_path_even_where_the_kernel_runs(kernel_calls):
    """The kernel pairs head columns; a nope/alibi head of odd width is not covered: the torch path runs and
    the mixer says "reference"."""
    mixer = _mixer({"position": "alibi"}, d_model=15, heads=3)
    x = torch.randn(2, 9, 15)
    assert mixer.backend == "reference" and not mixer.uses_kernel(x.device)
    mixer(x).sum().backward()
    assert kernel_calls == []


@pytest.mark.parametrize("case", ["rope", "so2_random_qkv", "alibi_query_block", "so2_learned_qkv_tokens"])
def test_on_cpu_by_default_the_torch_path_runs_without_touching_cuda(case, no_cuda, monkeypatch):
    """No forcing: the op's automatic choice on CPU is not the kernel, so the mixer runs its torch path
    (the op itself is never called) and reports "reference"."""

    def op_called(*args, **kwargs):
        raise AssertionError("the rotation-attention op ran on CPU by default")

    for name in list(ra_ops.OP.backends):
        monkeypatch.setitem(ra_ops.OP.backends, name, op_called)
    mixer = _mixer(CASES[case])
    x, tokens = _inputs(T=20)
    assert mixer.backend == "reference" and ra_ops.OP.backend_on(x.device) != "triton"
    out, grads = _run(mixer, x, tokens)
    assert out.shape == x.shape and all(torch.isfinite(g).all() for g in grads.values())


@pytest.mark.parametrize("feedback", [True, False])
def test_sessa_forward_branch_through_the_kernel_equals_its_torch_path(feedback, request):
    """Sessa's forward branch (RoPE, interleaved pairs) runs through the op where its kernel runs; the
    feedback branch is untouched. Outputs and parameter gradients as the torch path's."""
    torch.manual_seed(0)
    mixer = SessaMixer(32, heads=2, feedback=feedback)
    x, _ = _inputs()
    assert mixer.backend == "reference"
    expected, expected_grads = _run(mixer, x, None)
    calls = request.getfixturevalue("kernel_calls")
    # the feedback solve's op is not forced here: on CPU it says "reference" beside the forced kernel
    assert mixer.backend == ("reference+triton" if feedback else "triton")
    got, got_grads = _run(mixer, x, None)
    assert len(calls) == 1 and calls[0]["layout"] == "interleaved" and calls[0]["psi_v"] is None
    assert rel_rmse(got, expected) <= TOL, f"output: rel RMSE {rel_rmse(got, expected):.2e}"
    for name, g in got_grads.items():
        err = rel_rmse(g, expected_grads[name])
        assert err <= TOL, f"sessa: gradient of {name}: rel RMSE {err:.2e}"


def test_sessa_on_cpu_by_default_runs_its_torch_branch_without_touching_cuda(no_cuda, monkeypatch):
    def op_called(*args, **kwargs):
        raise AssertionError("the rotation-attention op ran on CPU by default")

    for name in list(ra_ops.OP.backends):
        monkeypatch.setitem(ra_ops.OP.backends, name, op_called)
    mixer = SessaMixer(32, heads=2)
    assert mixer.backend == "reference"
    out, grads = _run(mixer, _inputs(T=20)[0], None)
    assert out.shape == (2, 20, 32) and all(torch.isfinite(g).all() for g in grads.values())
