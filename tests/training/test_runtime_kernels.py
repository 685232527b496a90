"""The op dispatcher with a Triton kernel beside the reference (simulated: no GPU here): a kernel that
imports is registered; one that cannot run falls back with a warning, or raises under strict kernels
(config key `kernels: strict` through the runtime, or SEQMIX_STRICT_KERNELS=1); mixers report the backend
their ops would run on their device."""

from __future__ import annotations

import warnings

import pytest
import torch

from seqmix.ops import dispatch
from seqmix.ops.dispatch import BackendOf, KernelFallbackError, Op
from seqmix.training.runtime import Runtime


def make_package(tmp_path, name: str, kernel_source: str | None) -> str:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    if kernel_source is not None:
        (pkg / "triton.py").write_text(kernel_source)
    return name


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    monkeypatch.delenv("SEQMIX_STRICT_KERNELS", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))  # the op packages each test writes
    dispatch.set_strict(None)
    yield
    dispatch.set_strict(None)


def reference(x):
    return x + 1


def test_op_without_kernel_runs_the_reference_and_refuses_a_triton_request(tmp_path):
    op = Op("double", make_package(tmp_path, "nokernel", None), reference)
    x = torch.zeros(2)
    assert op.backend_for(x) == "reference" and op.backend_on("cuda") == "reference"
    assert torch.equal(op(x, None, x), x + 1)
    with pytest.raises(ValueError, match="no 'triton' backend"):
        op.backend_for(x, "triton")
    with pytest.raises(ValueError, match="backend must be one of"):
        op.backend_for(x, "cuda-magic")


def test_a_kernel_that_imports_is_registered_and_chosen_for_cuda_only(tmp_path):
    op = Op(
        "double",
        make_package(tmp_path, "goodkernel", "def double(x):\n    return x * 2\n"),
        reference,
        speedups={"triton": 2.0},
    )
    assert set(op.backends) == {"reference", "triton"} and op.kernel_error is None
    assert op.backend_on("cuda") == "triton" and op.backend_on(torch.device("cuda", 1)) == "triton"
    assert op.backend_on("cpu") == "reference"
    x = torch.zeros(2)
    assert op.backend_for(x) == "reference"  # CPU tensors, automatic: the reference, no warning
    assert op.backend_for(x, "reference") == "reference"
    with pytest.warns(RuntimeWarning, match="needs CUDA"):  # asked for the kernel on CPU tensors
        assert op.backend_for(x, "triton") == "reference"


class _OnCuda:
    """What backend_for reads of a CUDA tensor (its device), without a GPU."""

    device = torch.device("cuda")
    is_cuda = True


def test_a_kernel_measured_slower_runs_only_when_asked_for(tmp_path):
    op = Op(
        "double",
        make_package(tmp_path, "slowkernel", "def double(x):\n    return x * 2\n"),
        reference,
        speedups={"triton": 0.5},
    )
    assert "triton" in op.backends and op.backend_on("cuda") == "reference"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reference by design on CUDA: no fallback warning
        assert op.backend_for(_OnCuda()) == "reference"
    assert op.backend_for(_OnCuda(), "triton") == "triton"
    fast = Op(
        "double",
        make_package(tmp_path, "fastkernel", "def double(x):\n    return x * 2\n"),
        reference,
        speedups={"triton": 2.0},
    )
    assert fast.backend_for(_OnCuda()) == "triton"
    unmeasured = Op("double", make_package(tmp_path, "newkernel", "def double(x):\n    return x * 2\n"), reference)
    assert unmeasured.backend_on("cuda") == "reference"  # never measured: never automatic


def test_the_fastest_measured_backend_above_1x_is_automatic_on_cuda(tmp_path, monkeypatch):
    """Guards issue 28: the measured table, not a hand flag, turns a fast backend on; in deterministic mode a
    backend declared nondeterministic is skipped for the next fastest."""

    def fused(x):
        return x * 3

    kernel = "def double(x):\n    return x * 2\n"
    both = Op(
        "double", make_package(tmp_path, "both", kernel), reference, fused=fused, speedups={"triton": 1.5, "fused": 4.0}
    )
    assert both.backend_on("cuda") == "fused" and both.backend_on("cpu") == "reference"
    assert torch.equal(both(torch.zeros(2), "fused", torch.ones(2)), torch.full((2,), 3.0))  # runs on CPU on request
    slow = Op(
        "double", make_package(tmp_path, "slow", kernel), reference, fused=fused, speedups={"triton": 0.9, "fused": 1.0}
    )
    assert slow.backend_on("cuda") == "reference"  # 1.0x is not a win
    noisy = Op(
        "double", make_package(tmp_path, "noisy", kernel), reference, fused=fused,
        nondeterministic={"fused"}, speedups={"triton": 1.5, "fused": 4.0},
    )  # fmt: skip
    monkeypatch.setenv("SEQMIX_DETERMINISTIC", "1")
    assert noisy.backend_on("cuda") == "triton" and both.backend_on("cuda") == "fused"
    monkeypatch.delenv("SEQMIX_DETERMINISTIC")
    assert noisy.backend_on("cuda") == "fused"
    with pytest.raises(ValueError, match="no 'fused' backend"):
        Op("double", make_package(tmp_path, "plain", None), reference).backend_for(torch.zeros(1), "fused")


def test_the_speed_table_reads_the_card_in_use_or_the_first_card_listed():
    from seqmix.ops import speed_table

    cards = {"Card A": {"ops": {"ssd": {"fused": 2.0}}}, "Card B": {"ops": {"ssd": {"fused": 0.5, "triton": 1.2}}}}
    assert speed_table.speedups("ssd", "Card B", cards) == {"fused": 0.5, "triton": 1.2}
    assert speed_table.speedups("ssd", "Card Z", cards) == {"fused": 2.0} == speed_table.speedups("ssd", None, cards)
    assert speed_table.speedups("selective_scan", "Card A", cards) == {}
    assert speed_table.card_name("cpu") is None


def test_the_shipped_speed_table_names_real_ops_and_backends():
    from seqmix.ops import feedback_solve, rotation_attention, selective_scan, speed_table, ssd

    ops = {m.OP.name: m.OP for m in (feedback_solve, rotation_attention, selective_scan, ssd)}
    ops[feedback_solve.ATTENTION_OP.name] = feedback_solve.ATTENTION_OP
    cards = speed_table.load()
    assert cards, "ops/speed_table.json is missing or empty"
    for card, entry in cards.items():
        assert entry.get("date") and entry.get("source"), card
        for name, figures in entry["ops"].items():
            assert name in ops, f"{card}: unknown op {name}"
            declared = set(ops[name].backends) | ({"triton"} if ops[name].kernel_declared else set())
            assert set(figures) <= declared, f"{card}: {name} has no backend among {sorted(set(figures) - declared)}"
            assert all(x > 0 for x in figures.values())


def test_a_lean_backend_is_the_cpu_default_and_the_kernel_fallback_on_cpu(tmp_path):
    """Guards issue 14: an op registered with ``lean=`` runs it automatically on CPU (and says so), keeps the
    reference selectable, and a kernel that cannot run on CPU falls back to the lean backend."""

    def lean(x):
        return x + 2

    op = Op(
        "double",
        make_package(tmp_path, "leankernel", "def double(x):\n    return x * 2\n"),
        reference,
        lean=lean,
        speedups={"triton": 3.0},
    )
    assert set(op.backends) == {"reference", "lean", "triton"}
    x = torch.zeros(2)
    assert op.backend_on("cpu") == "lean" and op.backend_on("cuda") == "triton"
    assert op.backend_for(x) == "lean" and torch.equal(op(x, None, x), x + 2)
    assert op.backend_for(x, "reference") == "reference" and torch.equal(op(x, "reference", x), x + 1)
    assert op.backend_for(x, "lean") == "lean"
    with pytest.warns(RuntimeWarning, match="needs CUDA.*running the lean backend"):
        assert op.backend_for(x, "triton") == "lean"
    plain = Op("double", make_package(tmp_path, "nolean", None), reference)
    assert plain.backend_on("cpu") == "reference"
    with pytest.raises(ValueError, match="no 'lean' backend"):
        plain.backend_for(x, "lean")


def test_a_kernel_that_fails_to_import_warns_or_raises_when_strict(tmp_path, monkeypatch):
    op = Op("double", make_package(tmp_path, "badkernel", "import not_a_module_xyz\n"), reference)
    assert op.kernel_declared and "triton" not in op.backends and "ModuleNotFoundError" in op.kernel_error
    x = torch.zeros(2)
    with pytest.warns(RuntimeWarning, match="cannot run .*ModuleNotFoundError"):
        assert op.backend_for(x, "triton") == "reference"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same fallback warns once
        assert op.backend_for(x, "triton") == "reference"
    monkeypatch.setenv("SEQMIX_STRICT_KERNELS", "1")
    with pytest.raises(KernelFallbackError, match="strict kernels"):
        op.backend_for(x, "triton")
    monkeypatch.delenv("SEQMIX_STRICT_KERNELS")
    Runtime.resolve({"kernels": "strict"}).activate()
    with pytest.raises(KernelFallbackError):
        op(x, "triton", x)
    Runtime.resolve({"kernels": "fallback"}).activate()
    assert op.backend_for(x, "triton") == "reference"


def test_mixer_backend_follows_its_device_and_ops(tmp_path, monkeypatch):
    from seqmix.mixers.ssm import S4D, S6

    op = Op(
        "double",
        make_package(tmp_path, "mixkernel", "def double(x):\n    return x * 2\n"),
        reference,
        speedups={"triton": 2.0},
    )

    class Unit(torch.nn.Linear):
        backend = BackendOf(op)

    unit = Unit(2, 2)
    assert unit.backend == "reference"
    monkeypatch.setattr(dispatch, "module_device", lambda m: torch.device("cuda"))
    assert unit.backend == "triton"  # what it would run once on a GPU
    # the real mixers follow their op's registration: the scan kernel is registered only when this process
    # imported the ops under TRITON_INTERPRET=1 or on a CUDA build (test order decides which here), so the
    # expectation is read from the op, and the pinned case is a registry without the kernel
    from seqmix.ops import selective_scan as ss_ops

    scan = "triton" if "triton" in ss_ops.OP.backends else "reference"
    assert S6(4, d_state=2).backend == scan == S4D(4, d_state=2, mode="recurrent").backend
    monkeypatch.setattr(ss_ops.OP, "backends", {k: v for k, v in ss_ops.OP.backends.items() if k != "triton"})
    assert S6(4, d_state=2).backend == "reference"
    assert S4D(4, d_state=2).backend == S4D(4, d_state=2, mode="recurrent").backend == "reference"
    monkeypatch.undo()
    # on CPU the selective scan runs its lean backend; S4D's convolution mode calls no scan
    assert S4D(4, d_state=2).backend == "reference" and S4D(4, d_state=2, mode="recurrent").backend == "lean"
    s6 = S6(4, d_state=2)
    before = s6.backend
    s6(torch.randn(1, 3, 4))
    assert s6.backend == before == "lean"  # a property, not state that forward sets


def test_deterministic_mode_switches_torch_on_and_leaves_a_users_setting_alone(monkeypatch):
    monkeypatch.delenv("SEQMIX_DETERMINISTIC", raising=False)
    assert not torch.are_deterministic_algorithms_enabled()
    dispatch.set_deterministic(True)
    try:
        assert dispatch.deterministic() and torch.are_deterministic_algorithms_enabled()
    finally:
        dispatch.set_deterministic(None)
    assert not dispatch.deterministic() and not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # the user's own choice: set_deterministic(None) keeps it
    try:
        dispatch.set_deterministic(None)
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
