"""The data a leaf's task needs is estimated from its options and checked before any job (issue 26 item 8).

Integer options were bounded only at 2^31 - 1, so ``task.n: 100000`` on the heads paper's rotation teacher
passed the config check and made the job allocate its (n, n) lag index (80 GB) and its (n, n, k, k) operator.
Each task now states its largest tensors (``Task.memory``); the merged-leaf check and ``--set`` refuse a leaf
whose sum exceeds the data limit (``seqmix.config.memory``), naming the paper, experiment, option keys and the
estimate. The configs are copies of the shipped ones, loaded the way the Snakefile loads them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seqmix.config import memory
from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.leaves import expand_leaves
from seqmix.config.loading import load_all, load_paper
from seqmix.config.overrides import apply_to_leaf

GB = 1 << 30


def _load(tree: Path, **globals_) -> dict:
    file = tree / "config" / "config.yaml"
    config = {**load_yaml(file), "papers": ["heads"], **globals_}
    return load_all(config, root=tree, config_file=str(file))


def _set_heads(tree: Path, **task) -> Path:
    """heads.yaml with task options of exp1 at the tiny scale replaced."""
    path = tree / "config" / "papers" / "heads.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["experiments"]["exp1"]["scales"]["tiny"]["set"]["task"].update(task)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_an_n_squared_size_is_refused_at_config_time_naming_paper_experiment_key_and_estimate(tree):
    path = _set_heads(tree, n=100000)
    with pytest.raises(ConfigError) as e:
        _load(tree, limits={"max_data_gb": 64})
    err = e.value
    assert err.file == str(path)
    assert err.keypath.startswith("experiments.exp1.variants.")
    msg = str(err)
    assert "task.n:" in msg and "rotation_teacher" in msg
    assert "need about 1.3 TB, over the limit of 64.0 GB (limits.max_data_gb: 64 in" in msg
    assert "lag and mask indices (n, n) int64: 2 * n * n * 8 = 149.0 GB with n=100000" in msg
    assert "set at experiments.exp1.scales.tiny.set.task.n" in msg  # where the size came from
    assert "lower task.n" in msg and "raise the limit (limits.max_data_gb in config/config.yaml)" in msg


def test_the_limit_is_the_config_key_when_set(tree):
    _set_heads(tree, n=100000)
    _load(tree, limits={"max_data_gb": 100_000})  # the k = 8 variant's 19 TB fit: a machine that large may run it
    with pytest.raises(ConfigError, match=r"over the limit of 1\.0 MB \(limits\.max_data_gb: 0\.000976562 in"):
        _load(tree, limits={"max_data_gb": 1 / 1024})


@pytest.mark.parametrize("scale", ["tiny", "cpu", "paper"])
def test_every_shipped_paper_passes_at_every_scale(tree, scale):
    file = tree / "config" / "config.yaml"
    config = {**load_yaml(file), "scale": scale}  # the default limit: half the RAM, or the jobs' mem_gb
    out = load_all(config, root=tree, config_file=str(file))
    assert set(out["papers"]) == {p.stem for p in (tree / "config" / "papers").glob("*.yaml")}


def test_the_default_limit_is_the_larger_of_half_the_ram_and_the_train_jobs_memory(monkeypatch):
    monkeypatch.delenv(memory.ENV, raising=False)
    monkeypatch.setattr(memory, "machine_memory", lambda: 16 * GB)
    resources = {"default": {"mem_gb": 4}, "scales": {"paper": {"train": {"mem_gb": 32}}}}
    tiny = memory.limit_of({"scale": "tiny", "resources": resources})
    assert tiny.bytes == 8 * GB and tiny.source == "half of this machine's 16.0 GB of RAM"
    paper = memory.limit_of({"scale": "paper", "resources": resources})
    assert paper.bytes == 32 * GB and "32 GB the train jobs request at scale 'paper'" in paper.source
    monkeypatch.setenv(memory.ENV, "2.5")  # replaces half the RAM; the cluster jobs' memory still counts
    assert memory.limit_of({"scale": "tiny"}).bytes == int(2.5 * GB)
    assert memory.limit_of({"scale": "paper", "resources": resources}).bytes == 32 * GB
    monkeypatch.setenv(memory.ENV, "lots")
    with pytest.raises(ValueError, match="SEQMIX_MAX_DATA_GB='lots': expected a positive number of GB"):
        memory.default_limit()


def test_the_config_key_is_typed_in_the_global_schema(tree):
    with pytest.raises(ConfigError) as e:
        _load(tree, limits={"max_data_gb": 0})
    assert e.value.keypath == "limits.max_data_gb"
    with pytest.raises(ConfigError) as e:
        _load(tree, limits={"max_data_bytes": 10})
    assert "max_data_bytes" in str(e.value)


# ----------------------------------------------------------------------------- --set


def _heads_leaf(root: Path) -> dict:
    cfg = load_paper(root / "config" / "papers" / "heads.yaml", "tiny")
    return next(leaf.config for leaf in expand_leaves("heads", cfg, "tiny") if leaf.config["experiment"] == "exp1")


def test_a_set_override_to_an_n_squared_size_is_refused_before_the_job(root, monkeypatch):
    monkeypatch.setenv(memory.ENV, "16")
    leaf = _heads_leaf(root)
    with pytest.raises(ConfigError) as e:
        apply_to_leaf(leaf, {"task.n": 100000})
    assert e.value.file == "--set" and e.value.keypath == "task.n"
    assert "need about 1.3 TB, over the limit of 16.0 GB ($SEQMIX_MAX_DATA_GB=16)" in str(e.value)
    assert apply_to_leaf(leaf, {"task.n": 64})["task"]["n"] == 64  # 64 x 64 fits


def test_a_set_override_that_does_not_grow_the_data_is_not_refused(root, monkeypatch):
    """The DAG checked the leaf against its own limit (possibly a cluster node's); ``--set train.lr`` must not
    be refused because this machine is smaller, only an override that makes the data larger."""
    leaf = _heads_leaf(root)
    monkeypatch.setenv(memory.ENV, str(1 / (1 << 20)))  # 1 KB: less than the leaf's data
    assert apply_to_leaf(leaf, {"train.lr": 0.001})["train"]["lr"] == 0.001
    with pytest.raises(ConfigError, match="task.test_size"):
        apply_to_leaf(leaf, {"task.test_size": 4096})


# ----------------------------------------------------------------------------- the expressions


def test_expressions_read_options_and_key_paths_and_skip_what_is_unknown():
    mem = {
        "rows": "(train_size or 60000) * max_len * 2",
        "batch": "(train.batch or 1) * max_len * 8",
        "files": "n_files * 10",  # null: read from the files, unknown before
        "generated only": "size * 4 if source == 'generated' else None",
    }
    leaf = {"train": {"batch": 32}}
    found = memory.terms(mem, {"train_size": None, "max_len": 100, "n_files": None, "source": "lra"}, leaf)
    assert [(t.what, t.bytes) for t in found] == [("rows", 12_000_000), ("batch", 25_600)]
    assert found[1].names == {"train.batch": 32, "max_len": 100}
    assert memory.names_of("max(T) if T else 100") == ["T"]
    assert memory.names_of("(train.batch or 1) * d") == ["train.batch", "d"]


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "n.bit_length()", "[n for n in x]", "lambda: 1", "n; 1", "n if"],
)
def test_an_expression_beyond_arithmetic_is_refused(expression):
    with pytest.raises(ValueError, match="memory expression"):
        memory.parse(expression)
