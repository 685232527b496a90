"""The runtime: device resolution and the config error for a missing GPU, batches moved to the device,
the run config carrying the runtime, optimizer hints reaching the loop's optimizer, the fused NaN guard,
and in-training diagnostics that are counted and can be switched off."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

import pytest
import torch

from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.leaves import cell_run_config
from seqmix.config.loading import load_all
from seqmix.io import config_hash
from seqmix.training import loop, optim
from seqmix.training.guard import NonFiniteError, StepGuard
from seqmix.training.optim import param_groups
from seqmix.training.runtime import Runtime, move
from tests.conftest import ROOT


def cuda_available(monkeypatch, value: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: value)


# ----------------------------------------------------------------------------- resolution and config errors


def test_defaults_and_auto_resolve_to_this_machine(monkeypatch):
    assert Runtime.resolve(None) == Runtime("cpu", "bfloat16", False, False, "fallback")
    cuda_available(monkeypatch, False)
    assert Runtime.resolve({"device": "auto"}).device == "cpu"
    cuda_available(monkeypatch, True)
    assert Runtime.resolve({"device": "auto"}).device == "cuda"
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert Runtime.resolve({"device": "cuda"}).device == "cuda:1"  # one GPU per data-parallel rank


def test_activate_selects_a_cuda_device_only_when_it_has_an_index(monkeypatch):
    # torch.cuda.set_device("cuda") raises (no index): a single-GPU job keeps the current device; a rank's
    # "cuda:<LOCAL_RANK>" is selected (found on the first real GPU run, 2026-11-26)
    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: chosen.append(torch.device(d)))
    Runtime("cuda").activate()
    assert chosen == []
    Runtime("cuda:1").activate()
    assert chosen == [torch.device("cuda", 1)]
    Runtime("cpu").activate()
    assert chosen == [torch.device("cuda", 1)]


def test_cuda_without_cuda_is_a_config_error_in_the_job(monkeypatch):
    cuda_available(monkeypatch, False)
    with pytest.raises(ConfigError, match=r"config/config\.yaml: device: .*'cuda'.*is_available\(\) is False"):
        Runtime.resolve({"device": "cuda"})
    with pytest.raises(ConfigError, match=r": dtype: expected one of bfloat16, float16"):
        Runtime.resolve({"dtype": "float8"})
    with pytest.raises(ConfigError, match=r": kernels: "):
        Runtime.resolve({"kernels": "sometimes"})


def _globals(**over) -> dict:
    cfg = load_yaml(ROOT / "config" / "config.yaml")
    cfg.update(papers=["heads"], **over)
    return cfg


def test_cuda_without_cuda_is_refused_when_the_config_loads(monkeypatch):
    cuda_available(monkeypatch, False)
    with pytest.raises(ConfigError) as exc:
        load_all(_globals(device="cuda"), ROOT)
    assert exc.value.keypath == "device" and exc.value.file.endswith("config.yaml")
    # jobs sent to a cluster run where the GPUs are: the job itself checks (above), not this machine
    load_all(_globals(device="cuda", dispatch="submitit"), ROOT)
    load_all(_globals(device="auto"), ROOT)


@pytest.mark.parametrize("key,value", [("amp", "yes"), ("dtype", "float8"), ("compile", 1), ("kernels", "loose")])
def test_runtime_keys_are_validated(key, value):
    with pytest.raises(ConfigError, match=key):
        load_all(_globals(**{key: value}), ROOT)


def test_run_config_carries_the_runtime_settings():
    from seqmix.config.leaves import expand_cells

    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    (exp, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    run = cell_run_config("heads", exp, cell, leaves, "tiny", _globals(device="auto", amp=True))
    assert run["runtime"] == {
        "device": "auto",
        "dtype": "bfloat16",
        "amp": True,
        "compile": False,
        "kernels": "fallback",
    }
    assert Runtime.resolve(run["runtime"]).amp is True
    # the runtime is not part of a leaf's identity: moving a run to a GPU re-runs nothing that is done
    cpu_run = cell_run_config("heads", exp, cell, leaves, "tiny", _globals(device="cpu"))
    assert [leaf["hash"] for leaf in run["leaves"]] == [leaf["hash"] for leaf in cpu_run["leaves"]]


# ----------------------------------------------------------------------------- moving batches, autocast


@dataclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


def test_move_reaches_every_tensor_of_a_batch():
    batch = ((torch.zeros(2), {"k": torch.ones(1)}), Pair(torch.zeros(3), torch.ones(3)), 7)
    moved = move(batch, torch.device("meta"))
    assert moved[0][0].device.type == "meta" and moved[0][1]["k"].device.type == "meta"
    assert moved[1].a.device.type == "meta" and moved[1].b.device.type == "meta" and moved[2] == 7
    assert Runtime().to(batch) is batch  # a no-op on the CPU


def test_amp_autocasts_the_forward_on_cpu():
    lin = torch.nn.Linear(4, 4)
    with Runtime(amp=True).autocast():
        out = lin(torch.randn(2, 4))
    assert out.dtype == torch.bfloat16 and lin.weight.dtype == torch.float32
    with Runtime().autocast():
        assert lin(torch.randn(2, 4)).dtype == torch.float32


# ----------------------------------------------------------------------------- optimizer hints in the loop


def lm_leaf(mixer: dict, steps: int = 6, lr: float = 0.01, weight_decay: float = 0.1, **train) -> dict:
    return {
        "task": {"name": "assoc_recall", "pairs": 2, "keys": 8, "values": 4, "test_size": 16},
        "model": {"name": "decoder_lm", "d_model": 16, "n_layers": 1, "mixer": mixer},
        "train": {
            "optimizer": "adamw",
            "lr": lr,
            "weight_decay": weight_decay,
            "schedule": "constant",
            "steps": steps,
            "batch": 4,
            "checkpoint_every": steps,
            "log_every": 2,
            "dtype": "float32",
            **train,
        },
        "eval": {},
        "paper": "t",
        "experiment": "e",
        "variant": "v",
        "point": "-",
        "seed": 0,
        "sweep_value": None,
    }


def test_hinted_learning_rates_reach_the_loops_optimizer(tmp_path, monkeypatch):
    built = []
    real = optim.build_optimizer

    def spy(model, tcfg):
        built.append((model, real(model, tcfg)))
        return built[-1][1]

    monkeypatch.setattr(loop, "build_optimizer", spy)
    cfg = lm_leaf({"name": "b2s6", "blocks": 2, "d_state": 2})
    loop.train(cfg, tmp_path, config_hash(cfg))
    ((model, opt),) = built
    names = {id(p): n for n, p in model.named_parameters()}
    by_name = {names[id(p)]: (g["lr"], g["weight_decay"]) for g in opt.param_groups for p in g["params"]}
    assert sorted(by_name) == sorted(names.values())
    # the checkpoint holds the same groups (what a resumed run continues with)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["optimizer"]["param_groups"]
    assert [(g["lr"], g["weight_decay"], len(g["params"])) for g in saved] == [
        (g["lr"], g["weight_decay"], len(g["params"])) for g in opt.param_groups
    ]
    mixer = "blocks.0.mixer."
    assert by_name[mixer + "w"] == by_name[mixer + "b"] == (pytest.approx(1e-3), 0.0)  # min(1e-3, 0.1 lr)
    assert by_name[mixer + "B_bias"] == (1e-3, 0.0)
    assert all(v == (1e-3, 0.0) for n, v in by_name.items() if n.startswith(mixer + "A."))
    assert by_name[mixer + "C"] == (0.01, 0.1)  # a plain matrix: base lr, decayed
    assert by_name["embed.weight"] == (0.01, 0.0)  # embeddings (and the head tied to them) are not decayed
    assert all(v[1] == 0.0 for n, v in by_name.items() if "norm" in n or n.endswith(".bias"))


def test_hints_naming_no_parameter_are_refused():
    class Bad(torch.nn.Linear):
        def optim_hints(self):
            return {"nope": {"lr": 1.0}}

    with pytest.raises(ValueError, match="names 'nope'"):
        param_groups(Bad(2, 2), 0.1)


# ----------------------------------------------------------------------------- the fused NaN guard


def test_guard_syncs_once_and_names_nothing_while_finite(monkeypatch):
    model = torch.nn.Linear(3, 2)
    model(torch.randn(4, 3)).sum().backward()
    guard = StepGuard(model)
    monkeypatch.setattr(StepGuard, "_name_the_culprit", lambda *a: pytest.fail("looked for a culprit"))
    calls = {"n": 0}
    real = torch.Tensor.__bool__

    def counting_bool(t):
        calls["n"] += 1
        return real(t)

    monkeypatch.setattr(torch.Tensor, "__bool__", counting_bool)
    norm = guard.check(0, torch.tensor(1.0))
    assert calls["n"] == 1
    expected = torch.cat([p.grad.flatten() for p in model.parameters()]).norm()
    assert torch.allclose(norm, expected)


def test_guard_clips_like_clip_grad_norm():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    x = torch.randn(5, 3)
    for m in (a, b):
        (100 * m(x)).sum().backward()
    StepGuard(a, grad_clip=0.5).check(0, torch.tensor(0.0))
    torch.nn.utils.clip_grad_norm_(b.parameters(), 0.5)
    assert all(torch.equal(pa.grad, pb.grad) for pa, pb in zip(a.parameters(), b.parameters()))


def test_guard_names_the_gradient_and_tolerates_an_overflowing_norm(caplog):
    model = torch.nn.Linear(3, 2)
    model.weight.grad = torch.full_like(model.weight, 1e30)  # finite, but the float32 norm overflows
    model.bias.grad = torch.zeros_like(model.bias)
    with caplog.at_level(logging.WARNING, logger="seqmix.train"):
        StepGuard(model).check(5, torch.tensor(1.0))
    assert "overflowed" in caplog.text
    model.bias.grad[0] = float("nan")
    with pytest.raises(NonFiniteError, match=r"step 5: tensor 'bias\.grad' has non-finite values"):
        StepGuard(model).check(5, torch.tensor(1.0))


# ----------------------------------------------------------------------------- diagnostics during training


def test_in_training_diagnostics_are_counted_and_can_be_switched_off(tmp_path, monkeypatch):
    from seqmix.tasks.assoc_recall import AssocRecall

    monkeypatch.setattr(AssocRecall, "diagnostics", lambda self, model: {"probe": 1.0})
    cfg = lm_leaf({"name": "softmax_attention", "heads": 2}, steps=6)
    cfg["eval"] = {"every": 2}
    on = loop.train(cfg, tmp_path / "on", config_hash(cfg))
    assert on["diagnostics"]["calls"] == 4 and on["history"]["diagnostics"]["step"] == [0, 2, 4, 6]
    assert on["diagnostics"]["seconds"] >= 0
    off_cfg = copy.deepcopy(cfg)
    off_cfg["eval"] = {"every": 0}
    off = loop.train(off_cfg, tmp_path / "off", config_hash(off_cfg))
    assert off["diagnostics"]["calls"] == 0 and "diagnostics" not in off["history"]
    assert off["history"]["train_loss"] == on["history"]["train_loss"]  # diagnostics never touch training
    monkeypatch.undo()  # AssocRecall keeps Task.diagnostics: no probe, so eval.every is ignored
    plain = loop.train(cfg, tmp_path / "plain", config_hash(cfg))
    assert plain["diagnostics"]["calls"] == 0 and "diagnostics" not in plain["history"]


def test_backend_is_reported_after_the_first_step(tmp_path):
    cfg = lm_leaf({"name": "s6", "d_state": 2}, steps=3)
    seen = []
    result = loop.train(cfg, tmp_path, config_hash(cfg), on_backend=seen.append)
    assert len(seen) == 1 and seen[0] == result["backends"]
    assert set(seen[0].values()) == {"lean"} and any("mixer" in k for k in seen[0])  # S6 on CPU: the lean scan


# ----------------------------------------------------------------------------- allocator settings for jobs


def test_allocator_tunables_are_added_unless_malloc_is_already_set(monkeypatch):
    from seqmix.training import allocator

    assert allocator.tunables("") == allocator.GLIBC_TUNABLES
    assert allocator.tunables("glibc.rtld.nns=2") == "glibc.rtld.nns=2:" + allocator.GLIBC_TUNABLES
    assert allocator.tunables("glibc.malloc.arena_max=1") == "glibc.malloc.arena_max=1"  # the user's choice
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert allocator.apply_to_environ() == allocator.GLIBC_TUNABLES
    import os

    assert os.environ["GLIBC_TUNABLES"] == allocator.GLIBC_TUNABLES


def test_submitit_jobs_get_the_allocator_settings(tmp_path, monkeypatch):
    from seqmix.pipeline.dispatch import executor_for
    from seqmix.training import allocator

    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    settings = {"cluster": "local", "folder": str(tmp_path), "resources": {"default": {"timeout_min": 1}}}
    ex = executor_for(settings, "train", "job")
    assert ex._executor.parameters["setup"] == [f"export GLIBC_TUNABLES={allocator.GLIBC_TUNABLES}"]


def test_copies_to_the_cpu_block_and_copies_to_a_device_do_not(monkeypatch):
    # a non-blocking device-to-host copy can be read before its data arrives (garbage logits on a GPU run)
    calls = []
    real_to = torch.Tensor.to

    def spy(self, *args, **kwargs):
        calls.append((str(args[0]), kwargs.get("non_blocking", False)))
        return real_to(self, "cpu")

    monkeypatch.setattr(torch.Tensor, "to", spy)
    move({"a": torch.zeros(1), "b": [torch.zeros(1)]}, torch.device("cpu"))
    move(torch.zeros(1), torch.device("cuda"))
    assert calls == [("cpu", False), ("cpu", False), ("cuda", True)]


def test_cpu_batches_reach_a_model_on_another_device():
    """Evaluation and in-training diagnostics feed CPU batches; on a GPU runtime the hooks move them (the
    'meta' device stands in for CUDA here) and take them off again after the block."""
    from seqmix.training.runtime import cpu_batches, keep_inputs_on_device

    class Where(torch.nn.Module):
        def forward(self, x, *, y=None):
            return {"x": str(x.device), "y": str(y.device)}

    model, elsewhere = Where(), Runtime(device="meta")
    with cpu_batches(model, elsewhere):
        assert model(torch.zeros(1), y=torch.zeros(1)) == {"x": "meta", "y": "meta"}
    assert model(torch.zeros(1), y=torch.zeros(1)) == {"x": "cpu", "y": "cpu"}
    assert keep_inputs_on_device(model, Runtime()) == []  # nothing to do on the CPU
