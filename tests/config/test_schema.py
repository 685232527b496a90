"""Malformed configs: each stops with a ConfigError naming the file, the key path and what was expected.

The shipped config/config.yaml and config/papers/heads.yaml are copied into tmp_path (same layout),
mutated, and loaded with ``seqmix.config.loading.load_all``; the last tests check the shipped configs validate
at every scale and that Snakemake stops with the same message before any job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.leaves import expand_cells, expand_leaves
from seqmix.config.loading import SCALES, discover_papers, load_all

CONFIG = "config.yaml"
PAPER = "heads.yaml"


@pytest.fixture
def tree(heads_tree):
    """Every test here mutates config.yaml or heads.yaml: the other papers' files are left out (conftest)."""
    return heads_tree


def config_path(tree: Path) -> Path:
    return tree / "config" / "config.yaml"


def paper_path(tree: Path) -> Path:
    return tree / "config" / "papers" / "heads.yaml"


def load(tree: Path, glob_mut=None, paper_mut=None, paper_text: str | None = None) -> dict:
    """Mutate the global config dict and/or the paper file, then load_all."""
    cfg = load_yaml(config_path(tree))
    if glob_mut:
        glob_mut(cfg)
    if paper_mut:
        paper = load_yaml(paper_path(tree))
        paper_mut(paper)
        paper_path(tree).write_text(yaml.safe_dump(paper, sort_keys=False))
    if paper_text is not None:
        paper_path(tree).write_text(paper_text)
    return load_all(cfg, root=tree, config_file=str(config_path(tree)))


def exp1(paper: dict) -> dict:
    return paper["experiments"]["exp1"]


def _pop_local_disk(g):
    g["dispatch"] = "submitit"
    g["tracking"].pop("results_on_local_disk")


def _local_disk_false(g):
    g["dispatch"] = "submitit"
    g["tracking"]["results_on_local_disk"] = False


# (id, global mutation, paper mutation, file, keypath, fragments of the message)
CASES = [
    (
        "unknown-top-level-key",
        lambda g: g.update(bogus_key=1),
        None,
        CONFIG,
        "",
        [
            "'bogus_key' was unexpected",
            "allowed keys: amp, compile, device, dispatch, dtype, front_page, kernels, limits, papers",
        ],
    ),
    (
        "unknown-scale",
        lambda g: g.update(scale="huge"),
        None,
        CONFIG,
        "scale",
        ["'huge' is not one of ['tiny', 'cpu', 'paper']"],
    ),
    (
        "unknown-paper-id",
        lambda g: g.update(papers=["heads", "nope"]),
        None,
        CONFIG,
        "papers[1]",
        ["'nope' is not one of", "'heads'"],
    ),
    (
        "papers-not-a-list",
        lambda g: g.update(papers="heads"),
        None,
        CONFIG,
        "papers",
        ["expected array, got str 'heads'"],
    ),
    ("threads-zero", lambda g: g.update(threads=0), None, CONFIG, "threads", ["0 is less than the minimum of 1"]),
    ("missing-results", lambda g: g.pop("results"), None, CONFIG, "", ["'results' is a required property"]),
    (
        "bad-tracking-uri",
        lambda g: g["tracking"].update(uri="file:///tmp/x"),
        None,
        CONFIG,
        "tracking.uri",
        ["does not match", "sqlite"],
    ),
    (
        "sqlite-with-submitit",
        _pop_local_disk,
        None,
        CONFIG,
        "tracking.uri",
        ["SQLite tracking with SLURM dispatch is unsafe", "results_on_local_disk: true"],
    ),
    (
        "sqlite-with-submitit-not-local",
        _local_disk_false,
        None,
        CONFIG,
        "tracking.uri",
        ["SQLite tracking with SLURM dispatch is unsafe"],
    ),
    (
        "unknown-experiment-key",
        None,
        lambda p: exp1(p).update(epochs=3),
        PAPER,
        "experiments.exp1",
        ["'epochs' was unexpected", "allowed keys: base, description"],
    ),
    (
        "steps-not-an-integer",
        None,
        lambda p: exp1(p)["base"]["train"].update(steps="many"),
        PAPER,
        "experiments.exp1.base.train.steps",
        ["expected integer, got str 'many'"],
    ),
    (
        "negative-task-n",
        None,
        lambda p: exp1(p)["base"]["task"].update(n=-4),
        PAPER,
        "experiments.exp1.base.task.n",
        ["-4 is less than the minimum of 1"],
    ),
    (
        "negative-batch",
        None,
        lambda p: exp1(p)["base"]["train"].update(batch=-1),
        PAPER,
        "experiments.exp1.base.train.batch",
        ["-1 is less than the minimum of 1"],
    ),
    (
        "zero-cell-size",
        None,
        lambda p: exp1(p)["scales"]["tiny"].update(cell_size=0),
        PAPER,
        "experiments.exp1.scales.tiny.cell_size",
        ["0 is less than the minimum of 1"],
    ),
    (
        "zero-lr",
        None,
        lambda p: exp1(p)["base"]["train"].update(lr=0),
        PAPER,
        "experiments.exp1.base.train.lr",
        ["less than or equal to the minimum of 0"],
    ),
    (
        "unknown-optimizer",
        None,
        lambda p: exp1(p)["base"]["train"].update(optimizer="lbfgs"),
        PAPER,
        "experiments.exp1.base.train.optimizer",
        ["'lbfgs' is not one of ['adam', 'adamw', 'sgd']"],
    ),
    (
        "missing-train-steps",
        None,
        lambda p: exp1(p)["base"]["train"].pop("steps"),
        PAPER,
        "experiments.exp1.base.train",
        ["'steps' is a required property"],
    ),
    (
        "unknown-task",
        None,
        lambda p: exp1(p)["base"]["task"].update(name="parity"),
        PAPER,
        "experiments.exp1.base.task.name",
        ["unknown task 'parity'", "known: ", "rotation_teacher"],
    ),
    (
        "unknown-mixer",
        None,
        lambda p: exp1(p)["base"]["model"]["mixer"].update(name="mamba9"),
        PAPER,
        "experiments.exp1.base.model.mixer.name",
        ["unknown mixer 'mamba9'", "factorized_linear_attention"],
    ),
    (
        "unknown-mixer-in-variant",
        None,
        lambda p: exp1(p)["variants"]["k4"].update(model={"mixer": {"name": "x"}}),
        PAPER,
        "experiments.exp1.variants.k4.model.mixer.name",
        ["unknown mixer 'x'", "factorized_linear_attention"],
    ),
    (
        "unknown-task-in-variant-scale",
        None,
        lambda p: exp1(p)["variants"]["k4"].update(scales={"cpu": {"task": {"name": "parity"}}}),
        PAPER,
        "experiments.exp1.variants.k4.scales.cpu.task.name",
        ["unknown task 'parity'"],
    ),
    (
        "unknown-model",
        None,
        lambda p: exp1(p)["base"]["model"].update(name="transformer"),
        PAPER,
        "experiments.exp1.base.model.name",
        ["unknown model 'transformer'", "known: bare"],
    ),
    (
        "unknown-task-parameter",
        None,
        lambda p: exp1(p)["variants"]["k2"].update(task={"foo": 1}),
        PAPER,
        "experiments.exp1.variants.k2.task",
        ["'foo' was unexpected", "allowed keys: k, n, rho"],
    ),
    (
        "odd-k",
        None,
        lambda p: exp1(p)["variants"]["k2"].update(task={"k": 3}),
        PAPER,
        "experiments.exp1.variants.k2.task.k",
        ["3 is not a multiple of 2"],
    ),
    (
        "odd-k-in-scale-set",
        None,
        lambda p: exp1(p)["scales"]["tiny"]["set"]["task"].update(k=5),
        PAPER,
        "experiments.exp1.scales.tiny.set.task.k",
        ["5 is not a multiple of 2"],
    ),
    (
        "zero-heads-in-variant",
        None,
        lambda p: exp1(p)["variants"]["k8"].update(model={"mixer": {"heads": 0}}),
        PAPER,
        "experiments.exp1.variants.k8.model.mixer.heads",
        ["0 is less than the minimum of 1"],
    ),
    (
        "unknown-mixer-parameter",
        None,
        lambda p: exp1(p)["base"]["model"]["mixer"].update(softmax=True),
        PAPER,
        "experiments.exp1.base.model.mixer",
        ["'softmax' was unexpected", "allowed keys: d_out, heads, r"],
    ),
    # the mixer's options schema is generated from its signature (seqmix.options): bounds and types come along
    (
        "generated-schema-bound",
        None,
        lambda p: exp1(p)["base"]["model"]["mixer"].update(r=0),
        PAPER,
        "experiments.exp1.base.model.mixer.r",
        ["0 is less than the minimum of 1"],
    ),
    (
        "generated-schema-type",
        None,
        lambda p: exp1(p)["variants"]["k8"].update(model={"mixer": {"heads": "four"}}),
        PAPER,
        "experiments.exp1.variants.k8.model.mixer.heads",
        ["expected integer, got str 'four'"],
    ),
    (
        "generated-schema-enum",
        None,
        lambda p: p["experiments"]["exp2"]["variants"]["ssm"]["model"]["mixer"].update(init="hippo"),
        PAPER,
        "experiments.exp2.variants.ssm.model.mixer.init",
        ["'hippo' is not one of"],
    ),
    # claim families (expand:) and defaults by source: errors at the file's own entry, naming the member
    (
        "claim-family-unequal-lists",
        None,
        lambda p: p["claims"][0]["expand"].update(n=[16, 32]),
        PAPER,
        "claims[0].expand",
        ["the lists are zipped, so they need one length", "k: 3", "n: 2"],
    ),
    (
        "claim-family-not-a-list",
        None,
        lambda p: p["claims"][0]["expand"].update(k=2),
        PAPER,
        "claims[0].expand.k",
        ["expected a non-empty list of values, got 2"],
    ),
    (
        "claim-family-bad-member",
        None,
        lambda p: p["claims"][0]["expand"].update(k=[2, "four", 8]),
        PAPER,
        "claims[0].check.target",
        ["expected number, got str 'four'", "(in the family member k=four)"],
    ),
    (
        "claim-family-duplicate-id",
        None,
        lambda p: p["claims"][0].update(id="theory-rank"),
        PAPER,
        "claims[0].id",
        ["claim id 'theory-rank'", "is also the id of claims[0] (k=2)"],
    ),
    (
        "claim-defaults-unknown-key",
        None,
        lambda p: p["claim_defaults"]["paper"].update(expected=["cpu"]),
        PAPER,
        "claim_defaults.paper",
        ["'expected' is not one of ['artefact'"],
    ),
    (
        "seeds-not-a-list",
        None,
        lambda p: exp1(p)["scales"]["cpu"].update(seeds=5),
        PAPER,
        "experiments.exp1.scales.cpu.seeds",
        ["expected array, got int 5"],
    ),
    (
        "negative-seed",
        None,
        lambda p: exp1(p)["scales"]["cpu"].update(seeds=[0, -1]),
        PAPER,
        "experiments.exp1.scales.cpu.seeds[1]",
        ["-1 is less than the minimum of 0"],
    ),
    (
        "missing-scale-block",
        None,
        lambda p: exp1(p)["scales"].pop("paper"),
        PAPER,
        "experiments.exp1.scales",
        ["'paper' is a required property"],
    ),
    (
        "unknown-scale-block",
        None,
        lambda p: exp1(p)["scales"].update(huge={"seeds": [0], "cell_size": 1}),
        PAPER,
        "experiments.exp1.scales",
        ["'huge' was unexpected", "allowed keys: cpu, paper, tiny"],
    ),
    (
        "unknown-variant-scale",
        None,
        lambda p: exp1(p)["variants"]["k2"].update(scales={"huge": {}}),
        PAPER,
        "experiments.exp1.variants.k2.scales",
        ["'huge' is not one of ['tiny', 'cpu', 'paper']"],
    ),
    (
        "sweep-values-without-sweep",
        None,
        lambda p: (exp1(p).pop("sweep"), exp1(p)["scales"]["tiny"].update(sweep_values=[1])),
        PAPER,
        "experiments.exp1.scales",
        ["sweep_values given but the experiment has no sweep"],
    ),
    (
        "sweep-without-path",
        None,
        lambda p: exp1(p)["sweep"].pop("path"),
        PAPER,
        "experiments.exp1.sweep",
        ["'path' is a required property"],
    ),
    (
        "unknown-stage",
        None,
        lambda p: exp1(p).update(stages=["train", "fly"]),
        PAPER,
        "experiments.exp1.stages[1]",
        ["'fly' is not one of ['train', 'evaluate', 'diagnose']"],
    ),
    ("paper-id-mismatch", None, lambda p: p.update(paper="sessa"), PAPER, "paper", ["expected 'heads', got 'sessa'"]),
    (
        "claim-unknown-check-kind",
        None,
        lambda p: p["claims"][0]["check"].update(kind="approx"),
        PAPER,
        "claims[0].check.kind",
        ["expected one of 'within', 'ordering', 'slope', 'threshold'", "got 'approx'"],
    ),
    (
        "claim-check-without-kind",
        None,
        lambda p: p["claims"][1]["check"].pop("kind"),
        PAPER,
        "claims[1].check.kind",
        ["expected one of 'within', 'ordering', 'slope', 'threshold'", "got None"],
    ),
    (
        "claim-bad-threshold-op",
        None,
        lambda p: p["claims"][-1]["check"].update(kind="threshold", op="=="),
        PAPER,
        "claims[{last}].check.op",
        ["'==' is not one of ['<', '<=', '>', '>=']"],
    ),
    (
        "claim-unknown-within-key",
        None,
        lambda p: p["claims"][2]["check"].update(tol=0.1),
        PAPER,
        "claims[2].check",
        ["'tol' was unexpected", "allowed keys: atol, hi, kind, lo, rtol, target"],
    ),
    (
        "claim-within-without-target",
        None,
        lambda p: (p["claims"][0]["check"].pop("target"), p["claims"][0].update(reported="qualitative")),
        PAPER,
        "claims[0].check",
        ["within needs lo/hi, a target, or a numeric reported value", "'qualitative'"],
    ),
    (
        "claim-ordering-without-series",
        None,
        lambda p: p["claims"][0].update(check={"kind": "ordering", "order": [1, 2]}),
        PAPER,
        "claims[0].ours.over",
        ["check kind 'ordering' needs a series"],
    ),
    (
        "claim-slope-without-series",
        None,
        lambda p: p["claims"][1].update(check={"kind": "slope", "lo": 0}),
        PAPER,
        "claims[1].ours.over",
        ["check kind 'slope' needs a series"],
    ),
    (
        "claim-threshold-on-a-series",
        None,
        lambda p: p["claims"][2]["ours"].update(over="H"),
        PAPER,
        "claims[2].ours.over",
        ["check kind 'within' needs one value"],
    ),
    (
        "claim-bad-source",
        None,
        lambda p: p["claims"][0].update(source="blog"),
        PAPER,
        "claims[0].source",
        ["'blog' is not one of ['paper', 'spec-derived', 'closed-form']"],
    ),
    (
        "claim-bad-expected-at",
        None,
        lambda p: p["claims"][3].update(expected_at=["tiny", "huge"]),
        PAPER,
        "claims[3].expected_at[1]",
        ["'huge' is not one of ['tiny', 'cpu', 'paper']"],
    ),
    (
        "claim-missing-ours",
        None,
        lambda p: p["claims"][0].pop("ours"),
        PAPER,
        "claims[0]",
        ["'ours' is a required property"],
    ),
    (
        "claim-bad-aggregate",
        None,
        lambda p: p["claims"][0]["ours"].update(aggregate="mode"),
        PAPER,
        "claims[0].ours.aggregate",
        ["'mode' is not one of ['mean', 'median', 'geomean', 'min', 'max']"],
    ),
    (
        "claim-reduce-on-a-slope",
        None,
        lambda p: (
            p["claims"][0].update(check={"kind": "slope"}),
            p["claims"][0]["ours"].update(over="H", reduce="min"),
        ),
        PAPER,
        "claims[0].ours.reduce",
        ["check kind 'slope' needs the series: remove ours.reduce"],
    ),
    (
        "claim-reduce-without-series",
        None,
        lambda p: p["claims"][1]["ours"].update(reduce="min"),
        PAPER,
        "claims[1].ours.reduce",
        ["ours.reduce needs a series"],
    ),
    (
        "claim-bad-reduce",
        None,
        lambda p: p["claims"][2]["ours"].update(over="H", reduce="mean"),
        PAPER,
        "claims[2].ours.reduce",
        ["'mean' is not one of ['min', 'max']"],
    ),
    (
        "claim-unknown-slope-key",
        None,
        lambda p: p["claims"][0].update(check={"kind": "slope", "r2": 0.9}),
        PAPER,
        "claims[0].check",
        ["'r2' was unexpected", "allowed keys: hi, kind, lo, log_base, logx, logy, min_r2"],
    ),
    (
        "claim-bad-log-base",
        None,
        lambda p: p["claims"][0].update(check={"kind": "slope", "log_base": 2}),
        PAPER,
        "claims[0].check.log_base",
        ["2 is not one of [10, 'e']"],
    ),
    # the kind of check, by-construction reasons and seeds (issue 12): typos fail at load, not in claims.md
    (
        "claim-bad-kind",
        None,
        lambda p: p["claims"][0].update(kind="evidence"),
        PAPER,
        "claims[0].kind",
        ["'evidence' is not one of ['reproduction', 'derived', 'consistency']"],
    ),
    (
        "claim-reproduction-of-a-spec-value",
        None,
        lambda p: p["claims"][0].update(source="spec-derived", kind="reproduction"),
        PAPER,
        "claims[0].kind",
        ["kind 'reproduction' compares with the paper's own number", "source is 'spec-derived'"],
    ),
    (
        "claim-empty-by-construction",
        None,
        lambda p: p["claims"][0].update(by_construction=""),
        PAPER,
        "claims[0].by_construction",
        ["should be non-empty"],
    ),
    (
        "claim-zero-seeds",
        None,
        lambda p: p["claims"][0].update(seeds=0),
        PAPER,
        "claims[0].seeds",
        ["0 is less than the minimum of 1"],
    ),
    (
        "claim-seed-names",
        None,
        lambda p: p["claims"][0].update(seeds=["a"]),
        PAPER,
        "claims[0].seeds[0]",
        ["expected integer, got str 'a'"],
    ),
    # an experiment that trains needs a full train block; one that only measures models at init does not
    (
        "training-experiment-without-train",
        None,
        lambda p: exp1(p)["base"].pop("train"),
        PAPER,
        "experiments.exp1.base",
        ["'train' is a required property"],
    ),
    (
        "measured-experiment-that-trains",
        None,
        lambda p: p["experiments"]["exp2"].update(stages=["train", "evaluate"]),
        PAPER,
        "experiments.exp2.base.train",
        ["is a required property"],
    ),
]


@pytest.mark.parametrize("glob_mut,paper_mut,file,keypath,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_config(tree, glob_mut, paper_mut, file, keypath, fragments):
    if "{last}" in keypath:
        keypath = keypath.replace("{last}", str(len(load_yaml(paper_path(tree))["claims"]) - 1))
    want_file = config_path(tree) if file == CONFIG else paper_path(tree)
    with pytest.raises(ConfigError) as info:
        load(tree, glob_mut, paper_mut)
    err = info.value
    assert err.file == str(want_file)
    assert err.keypath == keypath
    for frag in fragments:
        assert frag in err.message, (frag, err.message)
    # the one-line form names all three
    assert str(err) == f"{want_file}: {keypath or '<top>'}: {err.message}"


def test_within_against_a_numeric_reported_value_is_accepted(tree):
    """No lo/hi/target, but a numeric reported value (or [mean, std]): valid."""

    def mut(p):
        p["claims"][0]["check"].pop("target")
        p["claims"][0]["reported"] = [2, 0.1]
        p["claims"][1]["check"].pop("target")
        p["claims"][1]["reported"] = 4

    load(tree, paper_mut=mut)


def test_kind_by_construction_and_seeds_are_accepted(tree):
    """The keys the claims engine reads (seqmix.claims.engine): on a claim, and as a per-source default."""

    def mut(p):
        p["claims"][0].update(kind="consistency", by_construction="zero row sums", seeds=2)
        p["claims"][1]["seeds"] = [42, 43]
        p.setdefault("claim_defaults", {}).setdefault("paper", {})["kind"] = "derived"

    load(tree, paper_mut=mut)


def test_malformed_yaml_names_the_line(tree):
    text = paper_path(tree).read_text()
    lines = text.splitlines()
    i = next(n for n, l in enumerate(lines) if l.startswith("experiments:"))
    lines.insert(i + 1, "  broken: [1, 2")  # an unclosed flow sequence
    with pytest.raises(ConfigError) as info:
        load(tree, paper_text="\n".join(lines) + "\n")
    err = info.value
    assert err.file == str(paper_path(tree))
    assert err.keypath == ""
    assert err.message.startswith("malformed YAML at line ")
    line = int(err.message.split("line ")[1].split(",")[0])
    assert i + 2 <= line <= i + 3  # the unclosed bracket is noticed on the next line


def test_malformed_yaml_tab_indentation(tree):
    with pytest.raises(ConfigError) as info:
        load(tree, paper_text="paper: heads\nexperiments:\n\texp1: {}\n")
    assert info.value.file == str(paper_path(tree))
    assert "malformed YAML at line 3" in info.value.message


def test_missing_paper_file(tree):
    """Paper ids are the files config/papers/<paper>.yaml: selecting one without a file names the selection."""
    with pytest.raises(ConfigError) as info:
        load(tree, glob_mut=lambda g: g.update(papers=["heads", "nosuchpaper"]))
    assert info.value.file == str(tree / "config" / "config.yaml") and info.value.keypath == "papers[1]"
    assert "'nosuchpaper' is not one of the paper files" in info.value.message


# ----------------------------------------------------------------------------- the shipped configs


@pytest.mark.parametrize("scale", SCALES)
def test_shipped_configs_validate_at_every_scale(root, scale):
    cfg = load_yaml(root / "config" / "config.yaml")
    cfg["scale"] = scale
    out = load_all(cfg, root=root, config_file=str(root / "config" / "config.yaml"))
    assert set(out["papers"]) == set(cfg["papers"] or discover_papers(root))
    paper = out["papers"]["heads"]
    leaves = expand_leaves("heads", paper, scale)
    want = 0
    for exp in paper["experiments"].values():
        sc = exp["scales"][scale]
        n_points = len(sc.get("sweep_values", exp["sweep"]["values"])) if exp.get("sweep") else 1
        want += len(exp["variants"]) * n_points * len(sc["seeds"])
    assert len(leaves) == want
    assert len({leaf.hash for leaf in leaves}) == len(leaves)  # every leaf's config is distinct
    cells = expand_cells("heads", paper, scale)
    assert sum(len(v) for v in cells.values()) == len(leaves)
    for (experiment, _cell), members in cells.items():
        assert len(members) <= paper["experiments"][experiment]["scales"][scale]["cell_size"]
    for (_experiment, cell), members in cells.items():
        assert {leaf.variant for leaf in members} == {cell.rsplit("-", 1)[0]}  # cells never mix variants


def test_snakemake_stops_on_a_config_error_before_any_job(root):
    env = dict(os.environ, PYTHONPATH=str(root / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--config", "scale=huge"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "config error" in out, out
    # the bad value came from the command line, and the message says so (config.loading.blame_command_line)
    assert "--config scale=huge (command line, over config/config.yaml): scale: 'huge' is not one of" in out, out
    # nothing was scheduled: no job table, no rule announced
    assert "Job stats" not in out and "rule " not in out.replace("rules/", ""), out


# ----------------------------------------------------------------------------- one table of cluster resources


def test_resources_table_resolves_per_rule_and_scale():
    from seqmix.config.resources import resolve, slurm_resources

    table = {
        "default": {"timeout_min": 60, "mem_gb": 4, "partition": None},
        "diagnose": {"mem_gb": 8},
        "scales": {"paper": {"default": {"partition": "gpu"}, "train": {"timeout_min": 720, "gpus_per_node": 1}}},
    }
    tiny, paper = resolve(table, "tiny"), resolve(table, "paper")
    assert tiny["train"] == {"timeout_min": 60, "mem_gb": 4, "partition": None}
    assert tiny["diagnose"]["mem_gb"] == 8
    assert paper["train"] == {"timeout_min": 720, "mem_gb": 4, "partition": "gpu", "gpus_per_node": 1}
    assert paper["diagnose"] == {"timeout_min": 60, "mem_gb": 8, "partition": "gpu"}
    assert paper["default"] == {"timeout_min": 60, "mem_gb": 4, "partition": "gpu"}
    assert slurm_resources(paper["train"]) == {
        "runtime": 720,
        "mem_mb": 4096,
        "cpus_per_task": 1,
        "gpu": 1,
        "tasks": 1,
        "slurm_partition": "gpu",
        "slurm_account": "",
    }


def test_both_cluster_routes_read_the_one_table(root):
    """The profiles hold no resources; the shipped table gives the paper-scale train step a GPU in both the
    executor plugin's names and submitit's (what dispatch.executor_for reads)."""
    from seqmix.config.resources import resolve, slurm_resources

    for prof in ("slurm", "slurm-local", "local"):
        keys = set(yaml.safe_load((root / "profiles" / prof / "profile.yaml").read_text()))
        assert not keys & {"default-resources", "set-resources", "resources"}, prof
    cfg = load_yaml(root / "config" / "config.yaml")
    assert "resources" not in cfg["submitit"] and "scales" not in cfg["submitit"]
    paper = resolve(cfg["resources"], "paper")
    assert paper["train"]["gpus_per_node"] == 1 and slurm_resources(paper["train"])["gpu"] == 1
    assert slurm_resources(resolve(cfg["resources"], "tiny")["train"])["gpu"] == 0
    smk = (root / "workflow" / "rules" / "stages.smk").read_text()
    for rule in ("train", "evaluate", "diagnose"):
        assert f'**slurm_resources_of("{rule}")' in smk, rule


def test_dead_keys_are_refused(tree):
    """Keys no code reads are not in the schema (a config that still sets one fails, naming it)."""

    def ingest(g):
        g["tracking"]["ingest_timeout_s"] = 5

    with pytest.raises(ConfigError, match="ingest_timeout_s"):
        load(tree, glob_mut=ingest)

    def old_table(g):
        g["submitit"]["resources"] = {"default": {"mem_gb": 4}}

    with pytest.raises(ConfigError, match="'resources' was unexpected"):
        load(tree, glob_mut=old_table)


def test_a_mixer_inside_a_mixer_is_validated_against_its_own_generated_schema():
    """``bidirectional`` declares ``mixer: MixerSpec``: the inner spec is checked against the named mixer."""
    from seqmix import registry
    from seqmix.config.components import validate_options

    bidi = registry.get_mixer("bidirectional")
    validate_options("p.yaml", "m", bidi, {"name": "bidirectional", "mixer": {"name": "s4d", "d_state": 3}})
    with pytest.raises(ConfigError) as info:
        validate_options(
            "p.yaml",
            "experiments.e.base.model.mixer",
            bidi,
            {"name": "bidirectional", "mixer": {"name": "s4d", "mode": "fft"}},
        )
    assert info.value.keypath == "experiments.e.base.model.mixer.mixer.mode"
    assert "'fft' is not one of ['conv', 'recurrent']" in info.value.message
    with pytest.raises(ConfigError, match=r"m\.mixer\.name: unknown mixer 's4x'"):
        validate_options("p.yaml", "m", bidi, {"mixer": {"name": "s4x"}})
