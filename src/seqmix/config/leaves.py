"""Leaves and cells: a paper's experiments expanded at one scale (DESIGN.md vocabulary).

- a **leaf** is one (paper, experiment, variant, sweep point, seed); it owns one output directory,
  one canonical config (sorted JSON) with its hash, and one MLflow run;
- a **cell** is the group of leaves one job runs; its size is a per-scale config value, so the rules,
  wildcards and file layout are the same at every scale.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from ..io import config_hash
from ..results import leaf_dir, scale_root
from .base import deep_merge, set_path
from .credentials import redact_tracking

RUNTIME_KEYS = ("device", "dtype", "amp", "compile", "kernels")  # global keys a job's Runtime is built from


@dataclass(frozen=True)
class Leaf:
    paper: str
    experiment: str
    variant: str
    point: str  # e.g. "H3" (sweep name + value) or "-" when the experiment has no sweep
    seed: int
    config: dict  # the full canonical config of this leaf

    @property
    def id(self) -> str:
        return f"{self.variant}/{self.point}/seed{self.seed}"

    @property
    def hash(self) -> str:
        return config_hash(self.config)

    def out_dir(self, results: str | Path) -> Path:
        return leaf_dir(results, self.paper, self.experiment, self.variant, self.point, self.seed)


def leaf_record(leaf: Leaf, results: str | Path) -> dict:
    """A leaf as the jobs and artefacts read it: id, config hash, output directory and canonical config."""
    return {"id": leaf.id, "hash": leaf.hash, "out_dir": str(leaf.out_dir(results)), "config": leaf.config}


def leaf_config(exp: dict, variant: str, scale: str) -> dict:
    """The experiment's base, then the variant, then the scale's and the variant's per-scale overrides."""
    base = {k: exp.get("base", {}).get(k, {}) for k in ("task", "model", "train", "eval")}
    vspec = exp["variants"][variant] or {}
    cfg = deep_merge(base, {k: v for k, v in vspec.items() if k != "scales"})
    cfg = deep_merge(cfg, exp["scales"][scale].get("set", {}))
    cfg = deep_merge(cfg, (vspec.get("scales") or {}).get(scale, {}))
    return cfg


def scale_variants(exp: dict, scale: str) -> list[str]:
    """The variants an experiment runs at ``scale``: the scale's ``variants`` list, else all of them (e.g. a
    task that only a GPU can train, declared for the paper scale alone)."""
    return list(exp["scales"][scale].get("variants") or exp["variants"])


def sweeps(paper_cfg: dict, scale: str) -> dict[str, dict]:
    """{experiment: {name, path, values, variants}} for each experiment that declares a ``sweep``: the values and
    variants it runs at ``scale`` (what MLflow's sweep parent runs describe, tracking.runs)."""
    out = {}
    for exp_name, exp in paper_cfg.get("experiments", {}).items():
        if sweep := exp.get("sweep"):
            out[exp_name] = {
                "name": sweep["name"],
                "path": sweep["path"],
                "values": list(exp["scales"][scale].get("sweep_values", sweep["values"])),
                "variants": scale_variants(exp, scale),
            }
    return out


def expand_leaves(paper: str, paper_cfg: dict, scale: str) -> list[Leaf]:
    leaves = []
    for exp_name, exp in paper_cfg.get("experiments", {}).items():
        sc = exp["scales"][scale]
        sweep = exp.get("sweep")
        for variant in scale_variants(exp, scale):
            vcfg = leaf_config(exp, variant, scale)
            points = [("-", None)]
            if sweep:
                values = sc.get("sweep_values", sweep["values"])
                points = [(f"{sweep['name']}{v}", v) for v in values]
            for point, value in points:
                for seed in sc["seeds"]:
                    cfg = copy.deepcopy(vcfg)
                    if sweep:
                        set_path(cfg, sweep["path"], value)
                    cfg.update(
                        paper=paper, experiment=exp_name, variant=variant, point=point, seed=seed, sweep_value=value
                    )
                    leaves.append(Leaf(paper, exp_name, variant, point, seed, cfg))
    return leaves


def expand_cells(paper: str, paper_cfg: dict, scale: str) -> dict[tuple[str, str], list[Leaf]]:
    """{(experiment, cell_id): [leaves]}; cells never mix variants; cell ids look like 'k4-0'."""
    cells: dict[tuple[str, str], list[Leaf]] = {}
    by_variant: dict[tuple[str, str], list[Leaf]] = {}
    for leaf in expand_leaves(paper, paper_cfg, scale):
        by_variant.setdefault((leaf.experiment, leaf.variant), []).append(leaf)
    for (exp_name, variant), leaves in by_variant.items():
        size = paper_cfg["experiments"][exp_name]["scales"][scale]["cell_size"]
        for i in range(0, len(leaves), size):
            cells[(exp_name, f"{variant}-{i // size}")] = leaves[i : i + size]
    return cells


def cell_run_config(paper: str, experiment: str, cell: str, leaves: list[Leaf], scale: str, globals_: dict) -> dict:
    """The run-config file a cell's jobs read: every leaf's canonical config and hash. ``results`` stays the
    results root (MLflow's store and lock live there, shared by the scales); the leaves' directories are
    under the scale's root. Its tracking URI carries no password (the file is kept beside the results)."""
    return {
        "paper": paper,
        "experiment": experiment,
        "cell": cell,
        "scale": scale,
        "results": globals_["results"],
        "tracking": redact_tracking(globals_["tracking"]),
        "runtime": {k: globals_[k] for k in RUNTIME_KEYS if k in globals_},  # resolved in the job (training.runtime)
        "leaves": [leaf_record(leaf, scale_root(globals_["results"], scale)) for leaf in leaves],
    }
