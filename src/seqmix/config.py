"""Loading, validating and expanding configs into leaves and cells.

Vocabulary (DESIGN.md):
- a **leaf** is one (paper, experiment, variant, sweep point, seed); it owns one output directory,
  one canonical config (sorted JSON) with its hash, and one MLflow run;
- a **cell** is the group of leaves one job runs; its size is a per-scale config value, so the rules,
  wildcards and file layout are the same at every scale.

Every error names the file, the key path and what was expected, and is raised before any job runs.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from .io import config_hash
from .results import leaf_dir

SCALES = ("tiny", "cpu", "paper")
RUNTIME_KEYS = ("device", "dtype", "amp", "compile", "kernels")  # global keys a job's Runtime is built from
SCHEMA_DIR_DEFAULT = Path(__file__).resolve().parents[2] / "workflow" / "schemas"


class ConfigError(ValueError):
    """A config problem, reported as '<file>: <key.path>: <what was expected>'."""

    def __init__(self, file: str | Path, keypath: str, message: str):
        self.file, self.keypath, self.message = str(file), keypath, message
        super().__init__(f"{file}: {keypath or '<top>'}: {message}")


# ----------------------------------------------------------------------------- YAML + schema

def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ConfigError(path, "", "file does not exist")
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ConfigError(path, "", f"malformed YAML at {where}: {getattr(e, 'problem', e)}") from None


def _keypath(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def validate(instance: Any, schema: dict, file: str | Path, prefix: str = "") -> None:
    """Validate against a JSON schema; raise ConfigError for the most relevant error."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(list(e.absolute_path)), str(e.message)))
    if not errors:
        return
    err = _pick_alternative(jsonschema.exceptions.best_match(errors))
    parts = list(err.absolute_path)
    expected = err.message
    disc = _discriminator(err) if err.validator == "oneOf" else None
    if disc is not None:
        # e.g. a claim check whose `kind` names no known alternative
        key, values = disc
        got = err.instance.get(key) if isinstance(err.instance, dict) else err.instance
        parts.append(key)
        expected = f"expected one of {', '.join(map(repr, values))}, got {got!r}"
    path = _keypath(parts)
    if prefix:
        path = f"{prefix}.{path}" if path else prefix
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        expected = f"{err.message}; allowed keys: {', '.join(allowed)}"
    elif err.validator == "type":
        expected = f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"
    raise ConfigError(file, path, expected)


def _discriminator(err: Any) -> tuple[str, list] | None:
    """The key whose ``const`` tells a oneOf's alternatives apart (a claim check's ``kind``), and its values."""
    consts = []
    for alt in err.validator_value:
        props = alt.get("properties", {}) if isinstance(alt, dict) else {}
        consts.append(next(((k, p["const"]) for k, p in props.items() if isinstance(p, dict) and "const" in p), None))
    if not consts or None in consts or len({k for k, _ in consts}) != 1:
        return None
    return consts[0][0], [v for _, v in consts]


def _pick_alternative(err: Any) -> Any:
    """A oneOf error is opaque ('... is not valid under any of the given schemas'); when the alternatives
    are told apart by a const key and the instance names one, report that alternative's own error."""
    import jsonschema

    while err.validator == "oneOf" and isinstance(err.instance, dict) and err.context:
        disc = _discriminator(err)
        if disc is None or err.instance.get(disc[0]) not in disc[1]:
            break
        idx = disc[1].index(err.instance[disc[0]])
        sub = [e for e in err.context if e.relative_schema_path and e.relative_schema_path[0] == idx]
        if not sub:
            break
        err = jsonschema.exceptions.best_match(sub)
    return err


def load_schema(name: str, schema_dir: Path | None = None) -> dict:
    return load_yaml((schema_dir or SCHEMA_DIR_DEFAULT) / f"{name}.schema.yaml")


# ----------------------------------------------------------------------------- merging

def deep_merge(base: dict, over: dict | None) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def set_path(d: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


def get_path(d: dict, dotted: str, default: Any = None) -> Any:
    for k in dotted.split("."):
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


# ----------------------------------------------------------------------------- leaves and cells

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


def expand_leaves(paper: str, paper_cfg: dict, scale: str) -> list[Leaf]:
    leaves = []
    for exp_name, exp in paper_cfg.get("experiments", {}).items():
        sc = exp["scales"][scale]
        sweep = exp.get("sweep")
        for variant in exp["variants"]:
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
                    cfg.update(paper=paper, experiment=exp_name, variant=variant, point=point, seed=seed,
                               sweep_value=value)
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
            cells[(exp_name, f"{variant}-{i // size}")] = leaves[i:i + size]
    return cells


def cell_run_config(paper: str, experiment: str, cell: str, leaves: list[Leaf], scale: str, globals_: dict) -> dict:
    """The run-config file a cell's jobs read: every leaf's canonical config and hash."""
    return {
        "paper": paper,
        "experiment": experiment,
        "cell": cell,
        "scale": scale,
        "results": globals_["results"],
        "tracking": globals_["tracking"],
        "runtime": {k: globals_[k] for k in RUNTIME_KEYS if k in globals_},  # resolved in the job (training.runtime)
        "leaves": [leaf_record(leaf, globals_["results"]) for leaf in leaves],
    }


# ----------------------------------------------------------------------------- the whole config

def load_paper(path: str | Path, scale: str, schema_dir: Path | None = None) -> dict:
    """A paper's config, validated, with its claim families expanded and the claim defaults applied
    (``cfg["claims"]`` is the flat list the claims engine checks)."""
    from .config_claims import at_claim_origin, expand_paper_claims, in_member, validate_claim
    from .config_components import validate_component_blocks

    path = Path(path)
    cfg = load_yaml(path)
    schema = load_schema("paper", schema_dir)
    origins = expand_paper_claims(cfg, path, schema)
    try:
        validate(cfg, schema, path)
    except ConfigError as e:
        raise at_claim_origin(e, origins) from None
    if cfg["paper"] != path.stem:
        raise ConfigError(path, "paper", f"expected {path.stem!r}, got {cfg['paper']!r} (the paper id is the file's name)")
    for exp_name, exp in cfg.get("experiments", {}).items():
        if scale not in exp["scales"]:
            raise ConfigError(path, f"experiments.{exp_name}.scales",
                              f"no settings for scale {scale!r} (has: {', '.join(exp['scales'])})")
        if exp.get("sweep") is None and any("sweep_values" in s for s in exp["scales"].values()):
            raise ConfigError(path, f"experiments.{exp_name}.scales", "sweep_values given but the experiment has no sweep")
        validate_component_blocks(path, exp_name, exp)
    for claim, (where, params) in zip(cfg.get("claims", []), origins):
        try:
            validate_claim(path, where, claim)
        except ConfigError as e:
            raise in_member(e, params) from None
    from .artefacts import validate_artefacts  # here: artefacts imports this module

    validate_artefacts(path, cfg, schema_dir)
    return cfg


def load_all(config: dict, root: str | Path = ".", config_file: str = "config/config.yaml",
             schema_dir: Path | None = None) -> dict:
    """Validate the global config (as Snakemake merged it) and load each paper's config.

    Returns {"globals": config, "papers": {paper: paper_cfg}}.
    """
    root = Path(root)
    validate(config, load_schema("config", schema_dir), config_file)
    if config["dispatch"] == "submitit" and str(config["tracking"]["uri"]).startswith("sqlite") \
            and not config["tracking"].get("results_on_local_disk", False):
        raise ConfigError(config_file, "tracking.uri",
                          "SQLite tracking with SLURM dispatch is unsafe on a network filesystem; use an "
                          "http(s) MLflow server, or set tracking.results_on_local_disk: true on a one-node cluster")
    if config.get("device") == "cuda":  # imports torch only then: the Snakefile's start-up stays light
        from .training.runtime import check_settings

        check_settings(config, config_file)
    papers = {}
    for p in selected_papers(config, root, config_file):
        path = root / "config" / "papers" / f"{p}.yaml"
        papers[p] = load_paper(path, config["scale"], schema_dir)
    return {"globals": config, "papers": papers}


def discover_papers(root: str | Path = ".") -> list[str]:
    """The paper ids: the files config/papers/<paper>.yaml, sorted."""
    return sorted(p.stem for p in (Path(root) / "config" / "papers").glob("*.yaml"))


def selected_papers(config: dict, root: str | Path = ".", config_file: str = "config/config.yaml") -> list[str]:
    """The papers in the DAG: the ``papers`` selection of the config, or every paper file when it is empty."""
    found = discover_papers(root)
    chosen = list(config.get("papers") or found)
    for i, p in enumerate(chosen):
        if p not in found:
            raise ConfigError(config_file, f"papers[{i}]", f"{p!r} is not one of the paper files config/papers/*.yaml: "
                              f"{', '.join(map(repr, found)) or 'none'}")
    if not chosen:
        raise ConfigError(config_file, "papers", "no paper configs under config/papers/")
    return chosen
