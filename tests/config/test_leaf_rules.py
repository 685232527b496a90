"""Rules between options, declared by the components and checked on every merged leaf before any job (issue 26
item 7): heads that do not divide the width, and a sequence length beyond the task's maximum, failed the train
job; now ``load_paper`` (the DAG parse) and ``--set`` refuse them, naming the paper file, the experiment and
variant, and both option keys. The paper config is the shipped rotations.yaml (a decoder LM of softmax attention
on the rotations LM) with its e1 rewritten; single rules are checked on leaf configs directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from torch import nn

from seqmix.config import catalogue
from seqmix.config.base import ConfigError
from seqmix.config.leaf_check import components
from seqmix.config.leaf_rules import violations
from seqmix.config.leaves import expand_leaves
from seqmix.config.loading import load_paper
from seqmix.config.overrides import apply_to_leaf
from seqmix.options import PosInt


def write_paper(tmp_path: Path, root: Path, mutate) -> Path:
    cfg = yaml.safe_load((root / "config" / "papers" / "rotations.yaml").read_text())
    mutate(cfg["experiments"]["e1"])
    path = tmp_path / "rotations.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def tiny_set(exp: dict, section: str, **values) -> None:
    exp["scales"]["tiny"]["set"][section].update(values)


def test_heads_not_dividing_the_width_are_refused_at_load(tmp_path, root):
    path = write_paper(tmp_path, root, lambda exp: tiny_set(exp, "model", mixer={"heads": 3, "query_block": 128}))
    with pytest.raises(ConfigError) as e:
        load_paper(path, "tiny")
    err, msg = e.value, str(e.value)
    assert err.file == str(path) and err.keypath == "experiments.e1.variants.m1"
    assert "model.mixer.heads: heads = 3 must divide" in msg
    assert "d_model = 16 (model.d_model)" in msg  # the other key, with its value
    assert "experiments.e1.scales.tiny.set.model.mixer.heads" in msg  # where the bad value is set
    assert "SoftmaxAttention" in msg and "'softmax_attention'" in msg


def test_an_evaluation_length_beyond_the_validation_stream_is_refused_at_load(tmp_path, root):
    """tiny: context 16 x eval_max_factor 32 + 1 = 513 tokens; a stream of 4000 keeps 400 for validation."""
    path = write_paper(tmp_path, root, lambda exp: tiny_set(exp, "task", n_tokens=4000))
    with pytest.raises(ConfigError) as e:
        load_paper(path, "tiny")
    msg = str(e.value)
    assert e.value.keypath == "experiments.e1.variants.m1"
    assert "task.eval_max_factor: eval_max_factor = 32 exceeds its maximum" in msg
    assert "n_tokens = 4000 (task.n_tokens)" in msg and "context = 16 (task.context)" in msg
    assert "RotationsLM" in msg


def test_the_same_lengths_pass_once_the_stream_holds_them(tmp_path, root):
    # 5130 x 0.1 = 513 validation tokens: exactly one window of 16 x 32 + 1
    load_paper(write_paper(tmp_path, root, lambda exp: tiny_set(exp, "task", n_tokens=5130)), "tiny")
    with pytest.raises(ConfigError, match="eval_max_factor = 32 exceeds"):
        load_paper(write_paper(tmp_path, root, lambda exp: tiny_set(exp, "task", n_tokens=5120)), "tiny")


def test_set_overrides_are_held_to_the_same_rules(root):
    cfg = load_paper(root / "config" / "papers" / "rotations.yaml", "tiny")
    leaf = next(iter(expand_leaves("rotations", cfg, "tiny"))).config
    assert apply_to_leaf(leaf, {"model.mixer.heads": 4})["model"]["mixer"]["heads"] == 4
    with pytest.raises(ConfigError, match=r"--set: model\.mixer\.heads: heads = 5 must divide"):
        apply_to_leaf(leaf, {"model.mixer.heads": 5})
    with pytest.raises(ConfigError, match=r"--set: task\.eval_max_factor: eval_max_factor = 1024 exceeds"):
        apply_to_leaf(leaf, {"task.eval_max_factor": 1024})


def check(leaf: dict) -> list[tuple[str, str]]:
    return list(violations(leaf, components(leaf)))


def lm(mixer: dict, **model) -> dict:
    return {"task": {"name": "assoc_recall"}, "model": {"name": "decoder_lm", "d_model": 16, **model, "mixer": mixer}}


def test_rotating_positions_need_heads_of_even_width():
    """d_model 16 in 16 heads: one channel each, which a rotation cannot pair; ALiBi does not rotate."""
    (key, msg), *_ = check(lm({"name": "rope", "heads": 16}))
    assert key == "model.mixer.heads" and "heads = 16 must divide d_model / 2" in msg
    assert "position = 'rope' (fixed by 'rope')" in msg  # the preset's fixed option, read by the rule
    assert check(lm({"name": "alibi", "heads": 16})) == []
    assert check(lm({"name": "softmax_attention", "position": "nope", "heads": 16})) == []
    assert check(lm({"name": "sessa", "heads": 16})) and check(lm({"name": "sessa", "heads": 8})) == []


def test_expressions_over_several_options():
    """Mamba2: headdim divides expand x d_model, ngroups the heads that gives."""
    assert check(lm({"name": "mamba2", "headdim": 8, "ngroups": 4})) == []  # 32 / 8 = 4 heads in 4 groups
    (key, msg), *_ = check(lm({"name": "mamba2", "headdim": 8, "ngroups": 3}))
    assert key == "model.mixer.ngroups" and "ngroups = 3 must divide expand * d_model // headdim = 4" in msg
    (key, msg), *_ = check(lm({"name": "mamba2", "headdim": 24}))
    assert key == "model.mixer.headdim" and "expand = 2 (model.mixer.expand)" in msg


def test_the_default_option_blames_the_key_the_leaf_sets():
    """heads is the default 4 here, so the width is the value the leaf gave."""
    (key, msg), *_ = check(lm({"name": "mha"}, d_model=6))
    assert key == "model.d_model" and "heads = 4 must divide d_model = 6" in msg


def test_a_width_the_model_does_not_take_from_the_leaf_is_not_checked():
    """target_params: build_model picks a width the mixer accepts; the bare model's width is the task's."""
    assert check(lm({"name": "mha", "heads": 3}, target_params=5000)) == []
    bare = {
        "task": {"name": "rotation_teacher", "n": 4},
        "model": {"name": "bare", "mixer": {"name": "mha", "heads": 3}},
    }
    assert check(bare) == []


def test_a_mixer_option_the_model_sets_is_the_models_to_check():
    probe = {"task": {"name": "b2s6_waves"}, "model": {"name": "ssm_probe", "width": 4, "mixer": {"name": "b2s6"}}}
    (key, msg), *_ = check(probe)  # the default 8 blocks do not split 4 channels
    assert key == "model.width" and "blocks = 8 must divide d_model = 4 (model.width)" in msg
    assert check({**probe, "model": {**probe["model"], "square_blocks": True}}) == []


def test_nested_mixer_specs_are_checked_at_their_wrappers_width():
    lra = {
        "task": {"name": "lra_listops"},
        "model": {"name": "lra_classifier", "d_model": 8, "n_layers": 1},
    }
    lra["model"]["mixer"] = {"name": "bidirectional", "mixer": {"name": "b2s6", "blocks": 3}}
    (key, _), *_ = check(lra)
    assert key == "model.mixer.mixer.blocks"


@pytest.mark.parametrize(
    "task, key, message",
    [
        (
            {"name": "lra_listops", "min_len": 300, "max_len": 256},
            "task.min_len",
            "min_len = 300 exceeds its maximum max_len = 256",
        ),
        (
            {"name": "symbolsoup", "min_tokens": 700},
            "task.min_tokens",
            "min_tokens = 700 exceeds its maximum max_tokens = 600",
        ),
        ({"name": "diffuse_mqar", "n_queries": 20}, "task.n_queries", "n_queries = 20 exceeds its maximum n_kv = 16"),
        ({"name": "assoc_recall", "pairs": 20}, "task.pairs", "pairs = 20 exceeds its maximum keys = 16"),
        ({"name": "reachability", "n": 80}, "task.n", "n = 80 exceeds its maximum d if embed"),
    ],
)
def test_task_lengths_within_their_maximum(task, key, message):
    found = check({"task": task})
    assert found and found[0][0] == key and message in found[0][1]


def test_a_rule_reading_an_unknown_value_is_left_to_the_job():
    assert check({"task": {"name": "reachability", "n": 80, "embed": "random_gaussian_normalised"}}) == []
    assert check({"task": {"name": "rotations_lm", "source": "english", "n_tokens": 1000}}) == []


def test_a_misspelt_rule_is_refused_when_the_catalogue_reads_it():
    class Misspelt(nn.Module):
        divides: ClassVar[dict] = {"heads": "d_modl"}

        def __init__(self, d_model: int, *, heads: PosInt = 2):
            super().__init__()

    with pytest.raises(TypeError, match=r"Misspelt\.divides\['heads'\]: 'd_modl' in 'd_modl' is neither an option"):
        catalogue.of_class("mixer", "misspelt", Misspelt)
    Misspelt.divides = {"head": "d_model"}
    with pytest.raises(TypeError, match=r"'head' is not an option of .*Misspelt \(heads\)"):
        catalogue.of_class("mixer", "misspelt", Misspelt)
    Misspelt.divides = {"heads": "d_model"}
    assert catalogue.of_class("mixer", "misspelt", Misspelt).rules == {"divides": {"heads": "d_model"}}


@pytest.mark.parametrize(
    "name, options, refused",
    [
        ("rope", {"heads": 16}, True),
        ("rope", {"heads": 8}, False),
        ("alibi", {"heads": 16}, False),
        ("sessa", {"heads": 16}, True),
        ("sessa", {"heads": 8}, False),
        ("mha", {"heads": 3}, True),
        ("path", {"heads": 3}, True),
        ("b2s6", {"blocks": 3}, True),
        ("b2s6", {"blocks": 4}, False),
        ("mamba2", {"headdim": 24}, True),
        ("mamba2", {"headdim": 8, "ngroups": 3}, True),
        ("mamba2", {"headdim": 8, "ngroups": 4}, False),
    ],
)
def test_a_mixers_declared_rules_are_the_ones_its_constructor_enforces(name, options, refused):
    """The leaf check refuses exactly the widths and options the mixer itself refuses when it is built."""
    from seqmix.mixers.base import build_mixer

    assert bool(check(lm({"name": name, **options}))) == refused
    if refused:
        with pytest.raises(ValueError):
            build_mixer(name, 16, seq_len=8, **options)
    else:
        build_mixer(name, 16, seq_len=8, **options)


@pytest.mark.parametrize(
    "options, refused",
    [({"pairs": 20}, True), ({"pairs": 16}, False)],
)
def test_a_tasks_declared_rules_are_the_ones_its_constructor_enforces(options, refused):
    from seqmix.tasks.assoc_recall import AssocRecall

    assert bool(check({"task": {"name": "assoc_recall", **options}})) == refused
    if refused:
        with pytest.raises(ValueError):
            AssocRecall(**options)
    else:
        AssocRecall(**options)
