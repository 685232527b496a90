"""The merged leaves are validated before any job (issue 24 item 4).

Each config block was validated against the components in force where it is written, but a leaf is the merge
of the base, the variant and the scale blocks: ``heads: 2`` on an experiment's base mixer leaked into an S6
variant (whose mixer has no ``heads``), passed ``snakemake -n`` and failed a train job after 7 of 15 jobs; a
task with no ``evaluate`` in an experiment whose stages include evaluate failed only when the job ran. Both
now stop ``load_paper`` (which the Snakefile calls at parse) with the paper file, the experiment and variant
and the bad key named. The paper config is the shipped heads.yaml, with its exp1 rewritten.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seqmix import registry
from seqmix.config.base import ConfigError
from seqmix.config.leaf_check import validate_leaves
from seqmix.config.leaves import expand_leaves
from seqmix.config.loading import SCALES, load_paper
from seqmix.tasks.base import Task
from seqmix.tasks.rotation_teacher import RotationTeacher


def write_paper(tmp_path: Path, root: Path, mutate) -> Path:
    cfg = yaml.safe_load((root / "config" / "papers" / "heads.yaml").read_text())
    mutate(cfg["experiments"]["exp1"])
    path = tmp_path / "heads.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _leaky(exp: dict) -> None:
    """An attention base with ``heads: 2`` and one variant that swaps in S6 (which has no ``heads``)."""
    exp.pop("sweep")
    exp["base"]["model"]["mixer"] = {"name": "mha", "heads": 2}
    exp["variants"]["s6"] = {"task": {"k": 2}, "model": {"mixer": {"name": "s6", "d_state": 4}}}


def test_a_base_mixer_option_leaking_into_a_variant_with_another_mixer_is_refused(tmp_path, root):
    path = write_paper(tmp_path, root, _leaky)
    with pytest.raises(ConfigError) as e:
        load_paper(path, "tiny")
    err = e.value
    assert err.file == str(path)
    assert err.keypath == "experiments.exp1.variants.s6"
    msg = str(err)
    assert "model.mixer.heads" in msg  # the bad key, as a path in the leaf
    assert "experiments.exp1.base.model.mixer.heads" in msg  # where it came from
    assert "has no option 'heads'" in msg and "'s6'" in msg
    assert "set this option per variant" in msg  # the fix


def test_the_leak_is_accepted_once_the_option_is_set_per_variant(tmp_path, root):
    def per_variant(exp):
        _leaky(exp)
        del exp["base"]["model"]["mixer"]["heads"]
        for v in ("k2", "k4", "k8"):
            exp["variants"][v]["model"] = {"mixer": {"heads": 2}}

    path = write_paper(tmp_path, root, per_variant)
    validate_leaves(path, yaml.safe_load(path.read_text()), "tiny")  # the claims on the sweep column would object


class _NoEvaluate(RotationTeacher):
    """The rotation teacher without its evaluate (the base class's, which raises)."""

    evaluate = Task.evaluate


class _NoTestSet(RotationTeacher):
    """The rotation teacher without its test set (the base class's, which raises)."""

    test_set = Task.test_set


@pytest.fixture
def no_evaluate_task():
    registry.load_all()
    registry.register_task("test_no_evaluate")(_NoEvaluate)
    yield "test_no_evaluate"
    registry._TABLES["task"].pop("test_no_evaluate", None)


def test_a_task_lacking_a_listed_stage_is_refused(tmp_path, root, no_evaluate_task):
    def mutate(exp):
        exp["base"]["task"]["name"] = no_evaluate_task  # stages: [train, evaluate]

    path = write_paper(tmp_path, root, mutate)
    with pytest.raises(ConfigError) as e:
        load_paper(path, "tiny")
    err = e.value
    assert err.file == str(path) and err.keypath.startswith("experiments.exp1.variants.")
    msg = str(err)
    assert "task.name" in msg and "_NoEvaluate" in msg and "'evaluate'" in msg
    assert "experiments.exp1.stages" in msg and "implements no evaluate(model)" in msg


def test_the_same_task_is_accepted_when_the_experiment_does_not_evaluate(tmp_path, root, no_evaluate_task):
    def mutate(exp):
        exp["base"]["task"]["name"] = no_evaluate_task
        exp["stages"] = ["train"]

    path = write_paper(tmp_path, root, mutate)
    validate_leaves(path, yaml.safe_load(path.read_text()), "tiny")  # the claims on its metrics would object


def test_a_diagnose_stage_needs_a_probe_or_a_test_set():
    """A task without a probe of its own gets the influence diagnostic, which reads its test set."""
    lacks = registry.worker("stages").lacks
    assert lacks(RotationTeacher, "diagnose") is None
    assert "no test_set()" in lacks(_NoTestSet, "diagnose")


def test_an_unknown_option_set_by_a_sweep_names_the_sweep(tmp_path, root):
    def mutate(exp):
        exp["variants"]["s6"] = {"task": {"k": 2}, "model": {"mixer": {"name": "s6"}}}
        del exp["base"]["model"]["mixer"]["r"]  # the sweep's heads is then the first key S6 lacks

    with pytest.raises(ConfigError) as e:
        load_paper(write_paper(tmp_path, root, mutate), "tiny")
    assert "model.mixer.heads" in str(e.value) and "experiments.exp1.sweep.path" in str(e.value)


@pytest.mark.parametrize("scale", SCALES)
def test_shipped_leaves_validate_and_keep_their_hashes(root, scale):
    """The check reads the leaves and never changes them: every shipped leaf validates at every scale."""
    for file in sorted((root / "config" / "papers").glob("*.yaml")):
        cfg = load_paper(file, scale)
        before = [leaf.hash for leaf in expand_leaves(cfg["paper"], cfg, scale)]
        validate_leaves(file, cfg, scale)
        assert [leaf.hash for leaf in expand_leaves(cfg["paper"], cfg, scale)] == before


def test_stage_work_names_what_a_task_lacks():
    """The one place that knows what each stage calls on a task (reached through the registry)."""
    lacks = registry.worker("stages").lacks
    lag, teacher = registry.get("task", "lag_sensitivity"), registry.get("task", "rotation_teacher")
    assert "batch" in lacks(lag, "train") and "evaluate(model)" in lacks(lag, "evaluate")
    assert lacks(lag, "diagnose") is None
    assert lacks(teacher, "train") is None and lacks(teacher, "evaluate") is None
    assert lacks(teacher, "diagnose") is None  # the influence diagnostic (seqmix.diagnostics.probes)
    with pytest.raises(NotImplementedError, match="_NoEvaluate implements no evaluate"):
        _NoEvaluate.evaluate(object.__new__(_NoEvaluate), None)


def test_more_warmup_than_training_steps_is_refused(tmp_path, root):
    """Cross-field: warmup_steps > steps ran a schedule that never reached its peak (found by the job, not the load)."""

    def too_much_warmup(exp):
        exp["base"].setdefault("train", {}).update(schedule="warmup_cosine", warmup_steps=10**6)

    path = write_paper(tmp_path, root, too_much_warmup)
    with pytest.raises(ConfigError, match=r"train\.warmup_steps: 1000000 warmup steps exceed the \d+ training steps"):
        load_paper(path, "tiny")
