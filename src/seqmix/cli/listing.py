"""``seqmix list [papers|experiments|mixers|tasks|models]``: what a config can name, as markdown tables;
``seqmix validate``: the configs checked as the Snakefile checks them.

- papers: the paper configs (``config/papers/<paper>.yaml``) with their title, experiments, artefacts, claims;
- experiments: per paper, each experiment's stages, variants, leaves and cells (jobs) at the scale given
  (default: ``scale`` of ``config/config.yaml``);
- matrix: the axes of the cross-paper matrix at the scale: per task, the mixers run, those excluded (with why),
  the learning rates and seeds;
- mixers, tasks, models: every registered name (seqmix's own and other packages' entry points) with its
  options, read from the schema generated from the constructor (``seqmix.options``): type, bounds, default.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..options import INT_OPTION_MAX
from ..results import SCALES
from .common import user_command

WHAT = ("papers", "experiments", "matrix", "mixers", "tasks", "models")


def register(sub: argparse._SubParsersAction) -> None:
    sp = user_command(
        sub,
        "list",
        cmd_list,
        "list papers, experiments (with cells per scale), the matrix's axes, mixers, tasks or models",
        [
            ("", "the papers: id, title, and how many experiments, artefacts and claims each has"),
            ("experiments --paper heads --scale cpu", "heads' experiments: stages, variants, leaves and cells"),
            ("matrix --scale cpu", "the cross-paper matrix per task: mixers run, those excluded (why), lrs, seeds"),
            ("mixers", "every registered mixer with its option names (required ones starred)"),
            ("tasks --long", "every registered task with each option's type, bounds and default"),
            ("papers --root ../seqmix-clone --config config/config.yaml", "the papers of another checkout"),
        ],
    )
    sp.add_argument(
        "what",
        nargs="?",
        choices=WHAT,
        default="papers",
        help="what to list (default: papers): papers, experiments and matrix read the configs, mixers, tasks "
        "and models the registry, e.g. list mixers",
    )
    sp.add_argument(
        "--root", default=".", help="the repository root whose config/ is read (default: .), e.g. --root ~/seqmix"
    )
    sp.add_argument(
        "--config",
        default="config/config.yaml",
        help="the global config, relative to --root; its scale: is the default of --scale "
        "(default: config/config.yaml), e.g. --config config/config.yaml",
    )
    sp.add_argument(
        "--scale",
        choices=SCALES,
        help="papers, experiments, matrix: read the configs at this scale (experiments count their leaves and "
        "cells at it; default: --config's scale:), e.g. --scale cpu",
    )
    sp.add_argument("--paper", help="papers, experiments: this paper only, e.g. --paper heads")
    sp.add_argument(
        "--long", action="store_true", help="mixers, tasks, models: every option with type, bounds, default"
    )
    sp = user_command(
        sub,
        "validate",
        cmd_validate,
        "validate the configs (what the Snakefile does before any job)",
        [
            ("", "config/config.yaml and the paper configs it selects, at its scale"),
            ("--scale paper", "the same at the paper scale"),
            ("--config ../run/config.yaml --root ../run", "another checkout's configs"),
        ],
    )
    sp.add_argument(
        "--config",
        default="config/config.yaml",
        help="the global config, relative to the current directory (default: config/config.yaml), "
        "e.g. --config ../run/config.yaml",
    )
    sp.add_argument(
        "--root",
        default=".",
        help="the repository root whose config/papers/<paper>.yaml are validated (default: .), e.g. --root ../run",
    )
    sp.add_argument(
        "--scale", choices=SCALES, help="validate at this scale instead of --config's scale:, e.g. --scale paper"
    )


# which of list's options each table reads (--root and --config: every table that reads a config)
APPLIES = {"paper": ("papers", "experiments"), "scale": ("papers", "experiments", "matrix")}
APPLIES["long"] = ("mixers", "tasks", "models")


def cmd_list(args) -> None:
    from ..config.base import ConfigError

    for option, tables in APPLIES.items():  # an option a table does not read would be silently ignored
        if getattr(args, option) not in (None, False) and args.what not in tables:
            raise SystemExit(f"list {args.what}: --{option} applies to {', '.join(tables)} only")
    try:
        table = TABLES[args.what](args)
    except ConfigError as e:
        raise SystemExit(f"config error: {e}") from None
    print(markdown(table))


def cmd_validate(args):
    """Validate config/config.yaml and the papers' configs (what the Snakefile does before any job)."""
    from ..config.base import ConfigError, load_yaml
    from ..config.loading import load_all

    try:
        cfg = load_yaml(args.config)
    except ConfigError as e:  # a missing or malformed file, named
        raise SystemExit(f"config error: {e}") from None
    if args.scale:
        cfg["scale"] = args.scale
    try:
        load_all(cfg, args.root, args.config)
    except ConfigError as e:
        raise SystemExit(f"config error: {e}") from None
    print("config ok")


def markdown(rows: list[dict]) -> str:
    """A markdown table (pandas + tabulate); a ``|`` inside a cell (``||dy/dx||``) is escaped."""
    import pandas as pd

    if not rows:
        return "(none)"
    escaped = [{k: v.replace("|", "\\|") if isinstance(v, str) else v for k, v in r.items()} for r in rows]
    return pd.DataFrame(escaped).to_markdown(index=False, disable_numparse=True)


def _scale(args) -> str:
    from ..config.base import load_yaml

    return args.scale or load_yaml(Path(args.root) / args.config)["scale"]


def _papers(args) -> dict[str, dict]:
    from ..config.loading import discover_papers, load_paper

    known = discover_papers(args.root)
    if getattr(args, "paper", None) and args.paper not in known:
        from .common import near_miss

        raise SystemExit(f"unknown paper {args.paper!r} (papers: {', '.join(known)}){near_miss(args.paper, known)}")
    chosen = [args.paper] if getattr(args, "paper", None) else known
    return {p: load_paper(Path(args.root) / "config" / "papers" / f"{p}.yaml", _scale(args)) for p in chosen}


def papers_table(args) -> list[dict]:
    return [
        {
            "paper": p,
            "title": cfg.get("title", ""),
            "experiments": len(cfg.get("experiments", {})),
            "artefacts": len(cfg.get("artefacts", {})),
            "claims": len(cfg.get("claims", [])),
        }
        for p, cfg in _papers(args).items()
    ]


def experiments_table(args) -> list[dict]:
    from ..config.artefacts import stages_of
    from ..config.leaves import expand_cells, scale_variants

    scale, rows = _scale(args), []
    for p, cfg in _papers(args).items():
        cells = expand_cells(p, cfg, scale)
        for name, exp in cfg.get("experiments", {}).items():
            mine = [leaves for (e, _), leaves in cells.items() if e == name]
            rows.append(
                {
                    "paper": p,
                    "experiment": name,
                    "stages": " -> ".join(stages_of(cfg, name)),
                    "variants": len(scale_variants(exp, scale)),
                    f"leaves ({scale})": sum(len(leaves) for leaves in mine),
                    f"cells ({scale})": len(mine),
                    "description": " ".join(str(exp.get("description", "")).split()),
                }
            )
    return rows


SHORT_OPTIONS = 70  # characters of option names a short row shows (a terminal's width with the other columns)


def components_table(kind: str, long: bool = False) -> list[dict]:
    """One row per registered ``kind``: its name, module and options. Short rows name the options (required
    ones starred) and cut the list at SHORT_OPTIONS characters; ``long`` gives each with type, bounds, default."""
    from .. import registry
    from ..options import component_options, options_schema

    rows = []
    for name in registry.names(kind):
        cls = registry.get(kind, name)
        schema, inner = options_schema(cls), component_options(cls)
        required = set(schema.get("required", []))
        preset_of = cls.__mro__[1] if "fixed_options" in cls.__dict__ else cls  # mixers.base.register_preset
        if long:
            options = [describe_option(o, s, o in required, inner.get(o)) for o, s in schema["properties"].items()]
            rows.append({kind: name, "from": preset_of.__module__, "options": "; ".join(options) or "(none)"})
            continue
        names = [f"{o}*" if o in required else o for o in schema["properties"]]
        text, shown = "", 0
        for n in names:
            if len(text) + len(n) + 2 > SHORT_OPTIONS:
                break
            text, shown = (f"{text}, {n}" if text else n), shown + 1
        if shown < len(names):
            text += f", ... ({len(names) - shown} more: --long)"
        module = preset_of.__module__.removeprefix("seqmix.")
        rows.append({kind: name, "from": module, "options (* required)": text or "(none)"})
    return rows


def describe_option(name: str, schema: dict, required: bool, component: str | None = None) -> str:
    """``heads: integer >= 1 = 4`` from one property of a generated options schema; an option whose value
    names a registered component (a model's ``mixer``) reads ``mixer: a mixer {name, options}``."""
    kind = f"a {component} {{name, options}}" if component else _type_of(schema)
    bounds = [
        f"{op} {schema[key]}"
        for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
        if key in schema and not (key == "maximum" and schema[key] == INT_OPTION_MAX)  # the generic sanity cap
    ]
    text = f"{name}: {' '.join([kind] + bounds)}"
    if required:
        return text + " (required)"
    return text + (f" = {schema['default']}" if "default" in schema else "")


def _type_of(schema: dict) -> str:
    if "enum" in schema:
        return "{" + ", ".join(map(str, schema["enum"])) + "}"
    if "anyOf" in schema:
        return " or ".join(_type_of(s) for s in schema["anyOf"])
    t = schema.get("type", "any")
    return " or ".join(t) if isinstance(t, list) else t


def matrix_table(args) -> list[dict]:
    """One row per task of ``config/papers/matrix.yaml`` at the scale: its mixers, exclusions, lrs and seeds."""
    from ..config.loading import load_paper

    scale = _scale(args)
    cfg = load_paper(Path(args.root) / "config" / "papers" / "matrix.yaml", scale)
    rows = []
    for name, exp in cfg["experiments"].items():
        sc = exp["scales"][scale]
        sweep = exp.get("sweep") or {}
        excluded = [f"{e['variant']} ({e['reason']})" for e in cfg.get("excluded", []) if e["experiment"] == name]
        rows.append(
            {
                "task": f"{name} ({exp['base']['task']['name']})",
                "mixers": ", ".join(sc.get("variants") or exp["variants"]),
                "excluded": "; ".join(excluded) or "none",
                "lrs": ", ".join(str(v) for v in sc.get("sweep_values", sweep.get("values", []))),
                "seeds": ", ".join(str(s) for s in sc["seeds"]),
            }
        )
    return rows


TABLES = {
    "papers": papers_table,
    "experiments": experiments_table,
    "matrix": matrix_table,
    "mixers": lambda args: components_table("mixer", args.long),
    "tasks": lambda args: components_table("task", args.long),
    "models": lambda args: components_table("model", args.long),
}
