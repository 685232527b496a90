"""A paper's artefacts as data: the ``artefacts:`` block of ``config/papers/<paper>.yaml``.

Each artefact (a table, a figure, or an analysis that trains nothing) declares what it reads and what it
writes; ``workflow/rules/artefacts.smk`` builds one rule per artefact from this, and the artefact's run
spec holds only what it reads, so editing one artefact's settings re-runs that artefact alone and editing
one claim re-runs only the claims step. Declaration (see workflow/schemas/paper.schema.yaml)::

    artefacts:
      figure4:
        kind: figure                       # table -> tables/, figure -> figures/, analysis -> <name>/
        reads:
          summaries: [exp2]                # <paper>/<exp>/summary.csv
          leaves: {exp1: "k4-*"}           # the final-stage markers of the cells matching the glob
          configs: [exp1]                  # resolved configs only: no wait for any result
          config_keys: [task]              # only these sections of the configs (default: all)
          scale_configs: {paper: [exp1]}   # configs resolved at a named scale (spec resolved_at)
          artefacts: [theory]              # the declared outputs of other artefacts of the paper
        writes: [figure4.png, figure4.pdf]
        report: [figure4.png]              # default: the .csv of tables (shown rendered as HTML,
                                           # <paper>/report/<name>.html), the .png of figures; one file at most
        caption: "..."                     # the shown file's caption, unique in the paper
        paper_values: "Table 2 (claims table2-*)"  # a shown figure: what the paper prints for it, or
                                           # "none: <why>" (config.figure_captions: the report's caption)
        analysis: [figure4]                # keys of `analysis:` (or of `tables:`) it receives
        claims: [exp2-ssm-rho]             # claims whose `reported` values it shows

The run spec a paper's ``ARTEFACTS[name](spec, out)`` receives (``artefact_spec``):
``paper, scale, name, paper_dir, inputs {summaries {exp: path}, leaves {exp: [leaf]}, artefacts {name:
[paths]}}, resolved {exp: {variant: config}} (the variants run at this scale), resolved_at {scale: {exp: {variant:
config}}} (``scale_configs``), analysis {key: settings}, reported {claim_id: value}``, and ``excluded``
([{experiment, variant, reason}], only when some variant of an experiment it reads was dropped as incompatible).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from .. import results as layout
from ..registry import paper_module
from .base import ConfigError, deep_merge, load_yaml, validate
from .credentials import redact_tracking
from .figure_captions import validate_paper_values
from .leaves import leaf_config, leaf_record, scale_variants, sweeps

# what report.html shows by default: a table's CSV (Snakemake renders it as a table; it cannot render .md)
# and a figure's PNG
DEFAULT_REPORT = {"table": ".csv", "figure": ".png", "analysis": None}


def stages_of(paper_cfg: dict, experiment: str) -> list[str]:
    """The stages an experiment's cells run (default ``results.DEFAULT_STAGES``: train -> evaluate)."""
    return list(paper_cfg["experiments"][experiment].get("stages") or layout.DEFAULT_STAGES)


def report_files(decl: dict) -> list[str]:
    """The outputs shown in the HTML report: ``report``, else the .csv of tables / the .png of figures."""
    if "report" in decl:
        return list(decl["report"])
    ext = DEFAULT_REPORT[decl["kind"]]
    return [w for w in decl["writes"] if ext and w.endswith(ext)]


def report_html(results: str | Path, paper: str, paper_cfg: dict, name: str) -> Path | None:
    """Where the artefact's shown CSV is rendered as HTML for report.html (which shows a CSV only as a
    download link); None when it shows an image or nothing."""
    shown = report_files(paper_cfg["artefacts"][name])
    return layout.report_html_path(results, paper, name) if shown and shown[0].endswith(".csv") else None


def outputs(results: str | Path, paper: str, paper_cfg: dict, name: str) -> list[Path]:
    decl = paper_cfg["artefacts"][name]
    d = layout.artefact_dir(results, paper, decl["kind"], name)
    return [d / w for w in decl["writes"]]


def all_outputs(results: str | Path, paper: str, paper_cfg: dict) -> list[Path]:
    return [p for name in paper_cfg.get("artefacts") or {} for p in outputs(results, paper, paper_cfg, name)]


def all_report_html(results: str | Path, paper: str, paper_cfg: dict) -> list[Path]:
    """The HTML renderings of every shown CSV of the paper (``report_html``)."""
    names = paper_cfg.get("artefacts") or {}
    return [h for h in (report_html(results, paper, paper_cfg, n) for n in names) if h is not None]


def selected_cells(cells: dict, experiment: str, pattern: str) -> list[str]:
    """The cell ids of ``experiment`` whose id matches the glob ``pattern`` (e.g. 'k4-*')."""
    return [c for (e, c) in cells if e == experiment and fnmatch.fnmatchcase(c, pattern)]


def input_files(results: str | Path, paper: str, paper_cfg: dict, cells: dict, name: str) -> dict[str, list[str]]:
    """The files the artefact's rule waits for: {summaries, leaves, artefacts: [paths]}."""
    reads = paper_cfg["artefacts"][name].get("reads") or {}
    leaves = []
    for exp, pattern in (reads.get("leaves") or {}).items():
        stage = stages_of(paper_cfg, exp)[-1]
        leaves += [str(layout.cell_marker(results, paper, exp, c, stage)) for c in selected_cells(cells, exp, pattern)]
    return {
        "summaries": [str(layout.summary_path(results, paper, e)) for e in reads.get("summaries") or []],
        "leaves": leaves,
        "artefacts": [str(p) for a in reads.get("artefacts") or [] for p in outputs(results, paper, paper_cfg, a)],
    }


def resolve_analysis(value: Any, scale: str) -> Any:
    """An analysis entry as the artefact sees it: verbatim, except that a mapping with a ``scales`` key
    gets ``scales[scale]`` merged over its other keys (and ``scales`` dropped)."""
    if not isinstance(value, dict) or "scales" not in value:
        return value
    base = {k: v for k, v in value.items() if k != "scales"}
    return deep_merge(base, (value["scales"] or {}).get(scale) or {})


def analysis_slice(paper_cfg: dict, keys: list[str], scale: str) -> dict:
    """{key: settings} from the paper's ``analysis:`` block, or a static table of its ``tables:`` block."""
    blocks = (paper_cfg.get("analysis") or {}, paper_cfg.get("tables") or {})
    return {k: resolve_analysis(blocks[0][k] if k in blocks[0] else blocks[1][k], scale) for k in keys}


def _resolved(exp: dict, scale: str, keys: list[str] | None = None) -> dict:
    """{variant: its config at ``scale``} for the variants that scale runs; with ``keys``, only those sections."""
    out = {v: leaf_config(exp, v, scale) for v in scale_variants(exp, scale)}
    return out if keys is None else {v: {k: cfg[k] for k in keys if k in cfg} for v, cfg in out.items()}


def artefact_spec(paper: str, paper_cfg: dict, name: str, scale: str, results: str | Path, cells: dict) -> dict:
    """What ``ARTEFACTS[name]`` reads, and nothing else (see the module docstring)."""
    decl = paper_cfg["artefacts"][name]
    reads = decl.get("reads") or {}
    leaves = {}
    for exp, pattern in (reads.get("leaves") or {}).items():
        leaves[exp] = [
            leaf_record(leaf, results) for c in selected_cells(cells, exp, pattern) for leaf in cells[(exp, c)]
        ]
    experiments = [*(reads.get("summaries") or []), *(reads.get("leaves") or {}), *(reads.get("configs") or [])]
    exps = paper_cfg["experiments"]
    keys = reads.get("config_keys")  # only these sections: what the artefact reads is all its spec holds
    resolved = {e: _resolved(exps[e], scale, keys) for e in dict.fromkeys(experiments)}
    resolved_at = {
        s: {e: _resolved(exps[e], s, keys) for e in es} for s, es in (reads.get("scale_configs") or {}).items()
    }
    claims = {c["id"]: c.get("reported") for c in paper_cfg.get("claims") or []}
    # the variants of the experiments it reads that were dropped as incompatible (config.compatibility)
    excluded = [e for e in paper_cfg.get("excluded") or [] if e["experiment"] in resolved]
    return {
        "paper": paper,
        "scale": scale,
        "name": name,
        "paper_dir": str(layout.paper_dir(results, paper)),
        "inputs": {
            "summaries": {e: str(layout.summary_path(results, paper, e)) for e in reads.get("summaries") or []},
            "leaves": leaves,
            "artefacts": {
                a: [str(p) for p in outputs(results, paper, paper_cfg, a)] for a in reads.get("artefacts") or []
            },
        },
        "resolved": resolved,
        **({"resolved_at": resolved_at} if resolved_at else {}),
        "analysis": analysis_slice(paper_cfg, decl.get("analysis") or [], scale),
        "reported": {c: claims[c] for c in decl.get("claims") or []},
        **({"excluded": excluded} if excluded else {}),
    }


def analysis_tables(paper_cfg: dict) -> list[str]:
    """The analysis artefacts that write ``summary.csv``: the tables a claim may read besides the experiments'.
    Their columns are declared nowhere (an experiment's are its tasks' ``summary_columns``)."""
    arts = paper_cfg.get("artefacts") or {}
    return sorted(a for a, d in arts.items() if d["kind"] == "analysis" and "summary.csv" in d["writes"])


def claims_spec(paper: str, paper_cfg: dict, scale: str, results: str | Path, tracking: dict) -> dict:
    """What the claims step reads: the claims, the experiments' summaries and the artefacts' outputs, and which
    of those are analysis tables (the results root and tracking settings: the step logs the paper's artefacts
    to one MLflow run).

    Unlike the other functions here, ``results`` is the results root, not a scale's root: the MLflow store
    and its lock are shared by the scales, the paper's files live under ``scale_root(results, scale)``."""
    root = layout.scale_root(results, scale)
    return {
        "paper": paper,
        "scale": scale,
        "paper_dir": str(layout.paper_dir(root, paper)),
        "results": str(results),
        "tracking": redact_tracking(tracking),  # a run config: a URI password never written
        "claims": paper_cfg.get("claims") or [],
        "analysis_tables": analysis_tables(paper_cfg),  # a column they lack makes a claim invalid (claims.engine)
        "data": (paper_cfg.get("data") or {}).get(scale, ""),  # the data law the scale ran on (claims.md header)
        "sweeps": sweeps(paper_cfg, scale),  # one MLflow parent run per (experiment, variant) series
        "inputs": {
            "summaries": {e: str(layout.summary_path(root, paper, e)) for e in paper_cfg["experiments"]},
            "artefacts": {
                a: [str(p) for p in outputs(root, paper, paper_cfg, a)] for a in paper_cfg.get("artefacts") or {}
            },
        },
    }


# ----------------------------------------------------------------------------- validation


def _validate_report(path: Path, where: str, decl: dict, captions: dict[str, str]) -> None:
    """What report.html shows of an artefact: files it writes, at most one (the rule has one caption, so a
    second figure would be shown under the first one's caption), and a caption no other artefact shows."""
    shown = report_files(decl)
    for r in shown:
        if r not in decl["writes"]:
            raise ConfigError(path, f"{where}.report", f"{r!r} is not among its writes")
    if len(shown) > 1:
        raise ConfigError(
            path,
            f"{where}.report",
            f"shows {len(shown)} files ({', '.join(shown)}) under one caption: show one, or split the "
            "artefact so that each shown figure or table has its own caption",
        )
    if shown and decl["caption"] in captions:
        raise ConfigError(path, f"{where}.caption", f"the same caption as artefact {captions[decl['caption']]!r}")
    if shown:
        captions[decl["caption"]] = where.split(".", 1)[1]


def validate_artefacts(path: Path, cfg: dict, schema_dir: Path | None = None) -> None:
    """What the schema cannot say: every name an artefact refers to exists, outputs are unique, the
    artefacts do not read each other in a circle, and the ``analysis:`` block matches its paper's schema."""
    _validate_analysis(path, cfg)
    arts = cfg.get("artefacts") or {}
    exps, claim_ids = set(cfg["experiments"]), {c["id"] for c in cfg.get("claims") or []}
    analysis, tables = set(cfg.get("analysis") or {}), set(cfg.get("tables") or {})
    seen: dict[str, str] = {}
    captions: dict[str, str] = {}
    for name, decl in arts.items():
        where = f"artefacts.{name}"
        if decl["kind"] == "analysis" and (name in layout.RESERVED_DIRS or name in exps):
            raise ConfigError(
                path,
                where,
                f"an analysis artefact writes into <paper>/{name}/, which is taken "
                "(an experiment or a reserved directory): choose another name",
            )
        reads = decl.get("reads") or {}
        named = [(key, reads.get(key) or []) for key in ("summaries", "configs", "leaves")]
        named += [(f"scale_configs.{s}", es) for s, es in (reads.get("scale_configs") or {}).items()]
        for key, names in named:
            for e in names:
                if e not in exps:
                    raise ConfigError(
                        path, f"{where}.reads.{key}", f"no experiment {e!r} (has: {', '.join(sorted(exps))})"
                    )
        for a in reads.get("artefacts") or []:
            if a not in arts or a == name:
                raise ConfigError(path, f"{where}.reads.artefacts", f"no other artefact {a!r} in this paper")
        for k in decl.get("analysis") or []:
            if (k in analysis) == (k in tables):
                raise ConfigError(
                    path,
                    f"{where}.analysis",
                    f"{k!r} must name exactly one key of `analysis:` or "
                    f"`tables:` (analysis: {', '.join(sorted(analysis)) or '-'}; tables: "
                    f"{', '.join(sorted(tables)) or '-'})",
                )
        for c in decl.get("claims") or []:
            if c not in claim_ids:
                raise ConfigError(path, f"{where}.claims", f"no claim with id {c!r}")
        _validate_report(path, where, decl, captions)
        for w in decl["writes"]:
            key = f"{layout.KIND_DIRS[decl['kind']].format(name=name)}/{w}"
            if key in seen:
                raise ConfigError(path, f"{where}.writes", f"{key} is also written by artefact {seen[key]!r}")
            seen[key] = name
    _check_acyclic(path, arts)
    validate_paper_values(path, cfg)


def _check_acyclic(path: Path, arts: dict) -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ConfigError(
                path,
                f"artefacts.{name}.reads.artefacts",
                "artefacts read each other in a circle: " + " -> ".join(trail + [name]),
            )
        state[name] = 1
        for a in (arts[name].get("reads") or {}).get("artefacts") or []:
            visit(a, trail + [name])
        state[name] = 2

    for name in arts:
        visit(name, [])


def analysis_schema_file(paper: str) -> Path | None:
    """The schema of a paper's ``analysis:`` block: ``analysis.schema.yaml`` in the paper's package (found
    without importing it, so a paper kept out of tree ships the types of its settings with its code)."""
    from ..registry import paper_dir

    d = paper_dir(paper)
    return d / "analysis.schema.yaml" if d and (d / "analysis.schema.yaml").exists() else None


def _validate_analysis(path: Path, cfg: dict) -> None:
    """The ``analysis:`` block against its paper's schema (typed per paper): a typo in a key is a config
    error naming the file and the key path."""
    if not cfg.get("analysis"):
        return
    schema_file = analysis_schema_file(cfg["paper"])
    if schema_file is None:
        raise ConfigError(
            path,
            "analysis",
            f"no schema for this paper's analysis block (analysis.schema.yaml in the paper's package, "
            f"{paper_module(cfg['paper'])})",
        )
    validate(cfg["analysis"], load_yaml(schema_file), path, "analysis")
