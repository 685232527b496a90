"""Every kind of bad config is rejected before any job, with the file, the key path and what was expected.

Issue 12 (part 2) found 14 of 39 bad configs accepted on main: NaN/Inf numbers passed the schema (JSON
schema's bounds are comparisons, and every comparison with NaN is false), sweep values became path
components outside ``results/``, ``steps`` had no upper bound, integral floats passed as integers, YAML
duplicate keys silently kept the last value, and claims naming a table or metric that no experiment writes
ended as "not run" after the whole DAG. Each case below is one kind; it mutates a copy of the shipped
config/config.yaml or config/papers/heads.yaml and loads it the way the Snakefile (workflow/rules/common.smk)
and ``python -m seqmix validate`` do: ``load_all(load_yaml(config/config.yaml), root)``.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml

from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.loading import load_all
from tests.conftest import copy_workflow, snakemake_local

G, P = "config/config.yaml", "config/papers/heads.yaml"
E1, E2 = "experiments.exp1", "experiments.exp2"
NAN, INF = math.nan, math.inf
# the raw index of exp1-k8-monotone (a plain ordering claim) in heads.yaml's claims, so adding claims never shifts it
K8 = next(
    i
    for i, c in enumerate(yaml.safe_load((Path(__file__).resolve().parents[2] / P).read_text())["claims"])
    if c.get("id") == "exp1-k8-monotone"
)
RATE = next(  # exp2-ssm-rate: the claim with check.relative_to
    i
    for i, c in enumerate(yaml.safe_load((Path(__file__).resolve().parents[2] / P).read_text())["claims"])
    if c.get("id") == "exp2-ssm-rate"
)


def entry_point(tree: Path) -> dict:
    """What runs before any job: the global file read with seqmix's loader, then every paper's."""
    file = tree / G
    return load_all(load_yaml(file), root=tree, config_file=str(file))


# ----------------------------------------------------------------------------- mutations


def glob(fn):
    return ("glob", fn)


def paper(fn):
    return ("paper", fn)


def text(file, fn):
    return ("text", file, fn)


def setp(dotted: str, value):
    """Set a dotted path (list indices as integers) in the mutated dict."""

    def mut(d):
        keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value

    return mut


def plain_claim(p) -> dict:
    """A copy of exp1-k8-monotone (a plain ordering claim), found by id so new claims never shift it."""
    return copy.deepcopy(next(c for c in p["claims"] if c.get("id") == "exp1-k8-monotone"))


def add_claim(**changes):
    """Append a copy of exp1-k8-monotone (a plain ordering claim) with ``changes`` to its ``ours``/
    ``check`` (dotted keys), as the last claim."""

    def mut(p):
        c = plain_claim(p)
        c["id"] = "extra-claim"
        for k, v in changes.items():
            setp(k.replace("__", "."), v)(c)
        p["claims"].append(c)

    return mut


def dup_claim_id(p):
    c = plain_claim(p)
    p["claims"].append(c)


def yaml_error(t: str) -> str:
    """Line 4 becomes ``broken: a: b`` (a mapping value where none may start)."""
    lines = t.splitlines()
    lines.insert(3, "broken: a: b")
    return "\n".join(lines) + "\n"


def dup_key_config(t: str) -> str:
    return t + "threads: 2\n"


def dup_experiment(t: str) -> str:
    """A second ``exp1:`` under experiments: (a copy-paste slip PyYAML silently resolves to the last one)."""
    block = t.split("  exp1:\n", 1)[1].split("\n  exp2:\n", 1)[0]
    return t.replace("\n  exp2:\n", "\n  exp1:\n" + block + "\n  exp2:\n", 1)


# (id, mutation, file, key path, fragments of the message)
CASES = [
    # ---- config/config.yaml
    ("config-yaml-syntax-error", text(G, yaml_error), G, "", ["malformed YAML at line 4"]),
    ("config-duplicate-key", text(G, dup_key_config), G, "threads", ["duplicate key 'threads'", "line"]),
    ("config-unknown-scale", glob(setp("scale", "huge")), G, "scale", ["'huge' is not one of"]),
    ("config-unknown-device", glob(setp("device", "gpu")), G, "device", ["'gpu' is not one of"]),
    ("config-papers-missing-paper", glob(setp("papers", ["heads", "nope"])), G, "papers[1]", ["'nope' is not one"]),
    ("config-unknown-key", glob(setp("bogus", 1)), G, "", ["'bogus' was unexpected"]),
    ("config-threads-not-int", glob(setp("threads", "2")), G, "threads", ["expected integer"]),
    ("config-threads-float", glob(setp("threads", 2.0)), G, "threads", ["expected integer"]),
    ("config-threads-beyond-bound", glob(setp("threads", 100_000)), G, "threads", ["maximum"]),
    ("config-poll-nan", glob(setp("submitit.poll_s", NAN)), G, "submitit.poll_s", ["finite"]),
    ("config-mem-inf", glob(setp("resources.default.mem_gb", INF)), G, "resources.default.mem_gb", ["finite"]),
    ("config-results-control-char", glob(setp("results", "res\nults")), G, "results", ["does not match"]),
    ("config-unknown-tracking-key", glob(setp("tracking.bogus", 1)), G, "tracking", ["'bogus' was unexpected"]),
    (
        "config-credentials-in-tracking-uri",
        glob(setp("tracking.uri", "http://ann:s3cret@mlflow.lab:5000")),
        G,
        "tracking.uri",
        ["MLFLOW_TRACKING_PASSWORD", "<user>:***@mlflow.lab"],
    ),  # fmt: skip
    # ---- config/papers/heads.yaml: YAML
    ("paper-yaml-syntax-error", text(P, yaml_error), P, "", ["malformed YAML at line 4"]),
    ("paper-duplicate-experiment-id", text(P, dup_experiment), P, "experiments.exp1", ["duplicate key 'exp1'"]),
    ("paper-duplicate-claim-id", paper(dup_claim_id), P, "claims[{last}].id", ["'exp1-k8-monotone'", f"claims[{K8}]"]),
    # ---- non-finite numbers
    ("lr-nan", paper(setp(f"{E1}.base.train.lr", NAN)), P, f"{E1}.base.train.lr", ["finite number", "nan"]),
    ("lr-inf", paper(setp(f"{E1}.base.train.lr", INF)), P, f"{E1}.base.train.lr", ["finite number", "inf"]),
    ("lr-minus-inf", paper(setp(f"{E1}.base.train.lr", -INF)), P, f"{E1}.base.train.lr", ["finite number"]),
    (
        "weight-decay-nan",
        paper(setp(f"{E1}.base.train.weight_decay", NAN)),
        P,
        f"{E1}.base.train.weight_decay",
        ["finite"],
    ),
    ("grad-clip-inf", paper(setp(f"{E1}.base.train.grad_clip", INF)), P, f"{E1}.base.train.grad_clip", ["finite"]),
    ("betas-nan", paper(setp(f"{E1}.base.train.betas", [0.9, NAN])), P, f"{E1}.base.train.betas[1]", ["finite"]),
    ("task-option-nan", paper(setp(f"{E1}.base.task.rho", NAN)), P, f"{E1}.base.task.rho", ["finite"]),
    ("claim-atol-nan", paper(setp("claims.1.check.atol", NAN)), P, "claims[1].check.atol", ["finite"]),
    ("claim-rtol-inf", paper(setp(f"claims.{K8}.check.rtol", INF)), P, f"claims[{K8}].check.rtol", ["finite"]),
    ("claim-target-nan", paper(setp("claims.1.check.target", NAN)), P, "claims[1].check.target", ["finite"]),
    # ---- sizes, steps, seeds
    ("steps-1e12", paper(setp(f"{E1}.base.train.steps", 10**12)), P, f"{E1}.base.train.steps", ["maximum"]),
    ("steps-float", paper(setp(f"{E1}.base.train.steps", 3000.0)), P, f"{E1}.base.train.steps", ["expected integer"]),
    ("steps-zero", paper(setp(f"{E1}.base.train.steps", 0)), P, f"{E1}.base.train.steps", ["minimum"]),
    ("batch-zero", paper(setp(f"{E1}.base.train.batch", 0)), P, f"{E1}.base.train.batch", ["minimum"]),
    ("batch-beyond-bound", paper(setp(f"{E1}.base.train.batch", 10**9)), P, f"{E1}.base.train.batch", ["maximum"]),
    ("task-size-zero", paper(setp(f"{E1}.base.task.n", 0)), P, f"{E1}.base.task.n", ["minimum"]),
    ("task-size-beyond-bound", paper(setp(f"{E1}.base.task.n", 10**12)), P, f"{E1}.base.task.n", ["maximum"]),
    (
        "mixer-heads-zero",
        paper(setp(f"{E1}.base.model.mixer.heads", 0)),
        P,
        f"{E1}.base.model.mixer.heads",
        ["minimum"],
    ),
    ("cell-size-zero", paper(setp(f"{E1}.scales.tiny.cell_size", 0)), P, f"{E1}.scales.tiny.cell_size", ["minimum"]),
    ("seeds-float", paper(setp(f"{E1}.scales.tiny.seeds", [0, 1.5])), P, f"{E1}.scales.tiny.seeds[1]", ["integer"]),
    (
        "seeds-integral-float",
        paper(setp(f"{E1}.scales.tiny.seeds", [0.0])),
        P,
        f"{E1}.scales.tiny.seeds[0]",
        ["integer"],
    ),
    ("seeds-string", paper(setp(f"{E1}.scales.tiny.seeds", ["0"])), P, f"{E1}.scales.tiny.seeds[0]", ["integer"]),
    (
        "seed-beyond-bound",
        paper(setp(f"{E1}.scales.tiny.seeds", [2**70])),
        P,
        f"{E1}.scales.tiny.seeds[0]",
        ["maximum"],
    ),
    # ---- path components
    ("sweep-value-slash", paper(setp(f"{E1}.sweep.values", [1, "a/b"])), P, f"{E1}.sweep.values[1]", ["path"]),
    ("sweep-value-dotdot", paper(setp(f"{E1}.sweep.values", [".."])), P, f"{E1}.sweep.values[0]", ["path"]),
    ("sweep-value-absolute", paper(setp(f"{E1}.sweep.values", ["/etc"])), P, f"{E1}.sweep.values[0]", ["path"]),
    ("sweep-value-empty", paper(setp(f"{E1}.sweep.values", [""])), P, f"{E1}.sweep.values[0]", ["path"]),
    ("sweep-value-whitespace", paper(setp(f"{E1}.sweep.values", ["a b"])), P, f"{E1}.sweep.values[0]", ["path"]),
    ("sweep-value-control", paper(setp(f"{E1}.sweep.values", ["a\tb"])), P, f"{E1}.sweep.values[0]", ["path"]),
    (
        "sweep-value-traversal-in-scale",
        paper(setp(f"{E1}.scales.tiny.sweep_values", ["/../../x"])),
        P,
        f"{E1}.scales.tiny.sweep_values[0]",
        ["path"],
    ),
    ("sweep-values-collide", paper(setp(f"{E1}.sweep.values", [1, "1"])), P, f"{E1}.sweep.values[1]", ["'H1'"]),
    (
        "sweep-value-wrong-type",
        paper(setp(f"{E1}.sweep.values", [1, "two"])),
        P,
        f"{E1}.sweep.values[1]",
        ["model.mixer.heads", "integer"],
    ),
    (
        "experiment-name-path",
        paper(lambda p: p["experiments"].update({"../x": p["experiments"]["exp2"]})),
        P,
        "experiments",
        ["'../x'", "does not match"],
    ),
    (
        "variant-name-path",
        paper(lambda p: p["experiments"]["exp1"]["variants"].update({"k/9": None})),
        P,
        f"{E1}.variants",
        ["'k/9'"],
    ),
    (
        "artefact-writes-dotdot",
        paper(setp("artefacts.table1.writes", ["table1.md", ".."])),
        P,
        "artefacts.table1.writes[1]",
        ["does not match"],
    ),
    # ---- unknown keys, wrong types, unknown names
    ("paper-unknown-top-key", paper(setp("bogus", 1)), P, "", ["'bogus' was unexpected"]),
    ("train-unknown-key", paper(setp(f"{E1}.base.train.lr_max", 1)), P, f"{E1}.base.train", ["'lr_max'"]),
    ("eval-unknown-key", paper(setp(f"{E1}.base.eval", {"evry": 5})), P, f"{E1}.base.eval", ["'evry'"]),
    ("eval-every-negative", paper(setp(f"{E1}.base.eval", {"every": -1})), P, f"{E1}.base.eval.every", ["minimum"]),
    ("scale-unknown-key", paper(setp(f"{E1}.scales.tiny.step", 1)), P, f"{E1}.scales.tiny", ["'step'"]),
    ("claim-ours-unknown-key", paper(setp(f"claims.{K8}.ours.metrc", "x")), P, f"claims[{K8}].ours", ["'metrc'"]),
    ("lr-wrong-type", paper(setp(f"{E1}.base.train.lr", "fast")), P, f"{E1}.base.train.lr", ["expected number"]),
    ("unknown-task", paper(setp(f"{E1}.base.task.name", "bogus")), P, f"{E1}.base.task.name", ["'bogus'"]),
    (
        "unknown-mixer",
        paper(setp(f"{E1}.base.model.mixer.name", "bogus")),
        P,
        f"{E1}.base.model.mixer.name",
        ["'bogus'"],
    ),
    (
        "claim-unknown-scale",
        paper(setp(f"claims.{K8}.expected_at", ["huge"])),
        P,
        f"claims[{K8}].expected_at[0]",
        ["'huge'"],
    ),
    # ---- claims reading what nothing writes
    (
        "claim-unknown-table",
        paper(add_claim(ours__table="exp9")),
        P,
        "claims[{last}].ours.table",
        ["'exp9'", "exp1, exp2", "theory"],
    ),
    ("claim-table-is-a-figure", paper(add_claim(ours__table="figure1")), P, "claims[{last}].ours.table", ["'figure1'"]),
    (
        "claim-unknown-metric",
        paper(add_claim(ours__metric="accuracy")),
        P,
        "claims[{last}].ours.metric",
        ["'accuracy'", "rotation_teacher", "test_mse"],
    ),
    (
        "claim-metric-of-another-stage",
        paper(add_claim(ours__table="exp2")),
        P,
        "claims[{last}].ours.metric",
        ["'test_mse'", "lag_sensitivity", "diagnose"],
    ),
    ("claim-unknown-over-column", paper(add_claim(ours__over="H")), P, "claims[{last}].ours.over", ["'H'"]),
    ("claim-unknown-where-column", paper(add_claim(ours__where={"k": 8})), P, "claims[{last}].ours.where.k", ["'k'"]),
    (
        "claim-unknown-relative-metric",
        paper(setp(f"claims.{RATE}.check.relative_to.metric", "ln_rh")),
        P,
        f"claims[{RATE}].check.relative_to.metric",
        ["'ln_rh'"],
    ),
    # ---- issue 25: one primary claim per quantity, series name their points, noise models
    (
        "claim-two-primary-readings",
        paper(add_claim()),
        P,
        "claims[{last}].ours",
        ["exp1-k8-monotone", "extra-claim", "same selection", "secondary"],
    ),
    (
        "claim-secondary-of-no-claim",
        paper(add_claim(secondary={"of": "nope", "why": "a second reading"})),
        P,
        "claims[{last}].secondary.of",
        ["'nope' is no primary claim"],
    ),
    (
        "claim-series-without-its-points",
        paper(add_claim(ours__over="seed", check__order=[0, 1])),
        P,
        "claims[{last}].ours.where",
        ["series over 'seed' needs the list of its points"],
    ),
    (
        "claim-ordering-of-other-points",
        paper(add_claim(check__order=[1, 2, 3])),
        P,
        "claims[{last}].check.order",
        ["order [1, 2, 3] is not ours.where.sweep_value"],
    ),
    (
        "claim-noise-of-a-median",
        paper(add_claim(noise="seeds")),
        P,
        "claims[{last}].noise",
        ["set ours.aggregate: mean", "'median'"],
    ),
    (
        "claim-rtol-with-a-noise-model",
        paper(add_claim(ours__aggregate="mean")),
        P,
        "claims[{last}].check.rtol",
        ["each step must clear its interval"],
    ),
    (
        "claim-binomial-without-this-scale",
        paper(add_claim(ours__aggregate="mean", noise={"binomial": {"n": {"paper": 1000}}})),
        P,
        "claims[{last}].noise.binomial.n",
        ["no test-set size for scale"],
    ),
]


@pytest.mark.parametrize("mutation,file,keypath,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_is_rejected_before_any_job(heads_tree, mutation, file, keypath, fragments):
    """Fails on main for the 14+ kinds it accepted (NaN/Inf, path traversal, 1e12 steps, duplicate keys,
    claims on undeclared metrics, ...); each must name the file, the key path and the expectation."""
    tree = heads_tree
    if mutation[0] == "text":
        path = tree / mutation[1]
        path.write_text(mutation[2](path.read_text()))
    else:
        path = tree / (G if mutation[0] == "glob" else P)
        data = yaml.safe_load(path.read_text())
        mutation[1](data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    if "{last}" in keypath:
        keypath = keypath.replace("{last}", str(len(load_yaml(tree / P)["claims"]) - 1))
    with pytest.raises(ConfigError) as info:
        entry_point(tree)
    err = info.value
    assert (err.file, err.keypath) == (str(tree / file), keypath), str(err)
    for frag in fragments:
        assert frag in err.message, (frag, err.message)


def test_at_least_39_distinct_kinds():
    assert len({c[0] for c in CASES}) == len(CASES) >= 39


def test_the_shipped_configs_still_pass(tree):
    entry_point(tree)


def test_snakemake_names_the_line_of_a_yaml_error_in_config_yaml(tmp_path):
    """Snakemake's own `configfile:` loader said only that the file could not be parsed; the Snakefile now
    reads it with seqmix's loader first, which names the file and the line."""
    work = copy_workflow(tmp_path)
    cfg = work / G
    cfg.write_text(yaml_error(cfg.read_text()))
    proc = snakemake_local(work, "-n", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "config/config.yaml: <top>: malformed YAML at line 4" in out, out


def _first_leaf_per_variant(root: Path) -> list:
    from seqmix.config.leaves import expand_leaves

    loaded = load_all(load_yaml(root / G), root=root, config_file=str(root / G))
    out = []
    for paper_id, paper_cfg in loaded["papers"].items():
        seen = set()
        for leaf in expand_leaves(paper_id, paper_cfg, "tiny"):
            if (leaf.experiment, leaf.variant) not in seen:
                seen.add((leaf.experiment, leaf.variant))
                out.append((paper_cfg["experiments"][leaf.experiment], leaf))
    return out


def test_declared_summary_columns_cover_what_the_stages_write(root):
    """The declaration claims are checked against (Task.summary_columns) must cover every column the last
    stage really writes: a column missing from it would refuse a valid claim. Untrained models at the tiny
    scale write the same keys as trained ones."""
    import fnmatch

    import torch

    from seqmix.config.claims import LEAF_COLUMNS
    from seqmix.diagnostics.probes import diagnose
    from seqmix.training.loop import build

    torch.set_num_threads(1)
    for exp, leaf in _first_leaf_per_variant(root):
        stage = (exp.get("stages") or ["train", "evaluate"])[-1]
        if stage == "train":  # a train-only experiment (b2s6 E9): its summary is the runner's train marker
            continue  # (LEAF_COLUMNS["train"]), the task writes no column of it
        task, model = build(leaf.config)
        model.eval()
        if stage == "evaluate":
            columns = set(task.evaluate(model))
        else:
            columns = set().union(*(row.keys() for row in diagnose(task, model, leaf.seed)["rows"]))
        declared = (*LEAF_COLUMNS[stage], *type(task).summary_columns[stage])
        missing = sorted(c for c in columns if not any(fnmatch.fnmatchcase(c, p) for p in declared))
        assert not missing, (leaf.paper, leaf.experiment, missing)
