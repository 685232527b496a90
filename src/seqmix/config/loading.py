"""Loading and validating the whole config: config/config.yaml and every config/papers/<paper>.yaml.

Every error names the file, the key path and what was expected, and is raised before any job runs. The
foundation (ConfigError, YAML, schemas) is ``seqmix.config.base`` and leaves and cells are
``seqmix.config.leaves``; the workflow and the CLI import those names from there.
"""

from __future__ import annotations

import json
from pathlib import Path

from .base import (
    ConfigError,
    load_schema,
    load_yaml,
    reject_non_finite,
    validate,
)

SCALES = ("tiny", "cpu", "paper")


# ----------------------------------------------------------------------------- the whole config


def load_paper(path: str | Path, scale: str, schema_dir: Path | None = None, data_limit=None) -> dict:
    """A paper's config, validated, with its claim families expanded and the claim defaults applied
    (``cfg["claims"]`` is the flat list the claims engine checks). ``data_limit``: the ``memory.Limit`` every
    leaf's data must fit (None: not checked; ``load_all`` passes the global config's)."""
    from .claims import (
        at_claim_origin,
        check_claim_columns,
        check_readings,
        expand_paper_claims,
        fill_series_points,
        in_member,
        validate_claim,
        validate_noise,
        validate_series,
    )
    from .components import validate_component_blocks

    path = Path(path)
    cfg = load_yaml(path)
    reject_non_finite(cfg, path)  # before the claims expand: the key path is the file's own
    resolve_variant_sets(cfg, path)
    schema = load_schema("paper", schema_dir)
    origins = expand_paper_claims(cfg, path, schema)
    try:
        validate(cfg, schema, path)
    except ConfigError as e:
        raise at_claim_origin(e, origins) from None
    if cfg["paper"] != path.stem:
        raise ConfigError(
            path, "paper", f"expected {path.stem!r}, got {cfg['paper']!r} (the paper id is the file's name)"
        )
    for exp_name, exp in cfg.get("experiments", {}).items():
        if scale not in exp["scales"]:
            raise ConfigError(
                path,
                f"experiments.{exp_name}.scales",
                f"no settings for scale {scale!r} (has: {', '.join(exp['scales'])})",
            )
        if exp.get("sweep") is None and any("sweep_values" in s for s in exp["scales"].values()):
            raise ConfigError(
                path, f"experiments.{exp_name}.scales", "sweep_values given but the experiment has no sweep"
            )
        for s_name, sc in exp["scales"].items():
            unknown = [v for v in sc.get("variants") or [] if v not in exp["variants"]]
            if unknown:
                raise ConfigError(
                    path,
                    f"experiments.{exp_name}.scales.{s_name}.variants",
                    f"no variant {', '.join(map(repr, unknown))} (has: {', '.join(exp['variants'])})",
                )
        validate_component_blocks(path, exp_name, exp)
    from .leaf_check import skip_incompatible, validate_leaves

    skip_incompatible(path, cfg, scale)  # experiments with `incompatible: skip` drop (and list) those variants
    validate_leaves(path, cfg, scale, data_limit)  # the merged leaves: what each job is given
    fill_series_points(cfg, scale)
    from .claim_kinds import table_origins, validate_kind

    tables = table_origins(cfg)
    for claim, (where, params) in zip(cfg.get("claims", []), origins):
        try:
            validate_claim(path, where, claim)
            check_claim_columns(path, where, claim, cfg)
            validate_kind(path, where, claim, tables)  # after: the table is one a job writes
            validate_series(path, where, claim)
            validate_noise(path, where, claim, scale)
        except ConfigError as e:
            raise in_member(e, params) from None
    check_readings(path, cfg.get("claims", []), origins)
    from .artefacts import validate_artefacts  # here: artefacts imports this module

    validate_artefacts(path, cfg, schema_dir)
    return cfg


def blame_command_line(error: ConfigError, config: dict, config_file: str | Path = "config/config.yaml") -> str:
    """The message of ``error`` with its origin: a key of the global config whose value is not the file's came
    from Snakemake's ``--config`` (or a profile), so the message names that, not the file. The value is shown
    with any URI password hidden (Snakemake writes the message to its log)."""
    from .credentials import redact

    top = (error.keypath or "").split(".")[0].split("[")[0]
    if error.file != str(config_file) or not top or top not in config:
        return str(error)
    try:
        in_file = load_yaml(config_file)
    except (ConfigError, OSError):
        return str(error)
    if isinstance(in_file, dict) and in_file.get(top) == config[top]:
        return str(error)
    value = config[top]
    shown = value if isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True)
    return redact(f"--config {top}={shown} (command line, over {config_file}): {error.keypath}: {error.message}")


def resolve_variant_sets(cfg: dict, path: Path) -> None:
    """Give each experiment with ``variant_set: <name>`` the variants of ``variant_sets.<name>`` (copied; its own
    ``variants`` win), so that adding a mixer to every task of the matrix is one line."""
    import copy

    sets = cfg.get("variant_sets") or {}
    for exp_name, exp in (cfg.get("experiments") or {}).items():
        if not isinstance(exp, dict) or "variant_set" not in exp:
            continue
        name = exp["variant_set"]
        if name not in sets:
            known = ", ".join(sets) or "none"
            raise ConfigError(
                path, f"experiments.{exp_name}.variant_set", f"no variant set {name!r} (variant_sets: {known})"
            )
        exp["variants"] = {**copy.deepcopy(sets[name]), **(exp.get("variants") or {})}


def _reject_credentials(uri: str, config_file: str) -> None:
    """A password in ``tracking.uri`` would be written in clear to every run config, Snakemake's metadata and
    the logs; MLflow reads credentials from the environment instead."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            config_file,
            "tracking.uri",
            f"credentials in the URI ({parts.scheme}://<user>:***@{parts.hostname}...) would be written in clear to "
            "run configs and logs; give the bare URI and set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
            "(or MLFLOW_TRACKING_TOKEN) in the environment",
        )


def load_all(
    config: dict, root: str | Path = ".", config_file: str = "config/config.yaml", schema_dir: Path | None = None
) -> dict:
    """Validate the global config (as Snakemake merged it) and load each paper's config.

    Returns {"globals": config, "papers": {paper: paper_cfg}}.
    """
    root = Path(root)
    reject_non_finite(config, config_file)
    validate(config, load_schema("config", schema_dir), config_file)
    if (
        config["dispatch"] == "submitit"
        and str(config["tracking"]["uri"]).startswith("sqlite")
        and not config["tracking"].get("results_on_local_disk", False)
    ):
        raise ConfigError(
            config_file,
            "tracking.uri",
            "SQLite tracking with SLURM dispatch is unsafe on a network filesystem; use an "
            "http(s) MLflow server, or set tracking.results_on_local_disk: true on a one-node cluster",
        )
    _reject_credentials(str(config["tracking"]["uri"]), config_file)
    if config.get("device") == "cuda":  # imports torch only then: the Snakefile's start-up stays light
        from ..devices import cuda_missing

        why = cuda_missing("cuda") if config.get("dispatch", "local") == "local" else None
        if why:  # with submitit the nodes may have a GPU the head node lacks: the job checks then
            raise ConfigError(config_file, "device", why)
    from .memory import limit_of

    data_limit = limit_of(config, config_file)
    papers = {}
    for p in selected_papers(config, root, config_file):
        path = root / "config" / "papers" / f"{p}.yaml"
        papers[p] = load_paper(path, config["scale"], schema_dir, data_limit)
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
            raise ConfigError(
                config_file,
                f"papers[{i}]",
                f"{p!r} is not one of the paper files config/papers/*.yaml: {', '.join(map(repr, found)) or 'none'}",
            )
    if not chosen:
        raise ConfigError(config_file, "papers", "no paper configs under config/papers/")
    return chosen
