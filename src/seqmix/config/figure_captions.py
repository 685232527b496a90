"""The caption a shown figure carries in the report: the artefact's own ``caption``, then what the paper
prints for it (``paper_values``), then where its numbers come from at the scale run (the seeds of every
experiment it reads, directly or through other artefacts, and the paper's ``data`` line for that scale).

Every artefact whose report shows a PNG declares ``paper_values`` (``validate_paper_values``): either where
the paper prints the values the figure draws beside ours, labelled "paper" (``seqmix.report.plots
.paper_values``), or ``none`` with the reason (``"none: a schematic"``). The Snakefile builds the captions
while the DAG is parsed (``workflow/rules/artefacts.smk``).
"""

from __future__ import annotations

from pathlib import Path

from .base import ConfigError

NONE = "none"


def shows_figure(decl: dict) -> bool:
    """Whether the report shows a PNG of the artefact (its ``report`` file, else a figure's PNG)."""
    shown = decl["report"] if "report" in decl else [w for w in decl["writes"] if decl["kind"] == "figure"]
    return any(str(f).endswith(".png") for f in shown)


def experiments_read(arts: dict, name: str) -> list[str]:
    """The experiments whose results (summaries or leaves) the artefact reads, itself or through the
    artefacts it reads, in order of first mention."""
    found: dict[str, None] = {}
    seen: set[str] = set()

    def visit(a: str) -> None:
        if a in seen:
            return
        seen.add(a)
        reads = arts[a].get("reads") or {}
        found.update(dict.fromkeys([*(reads.get("summaries") or []), *(reads.get("leaves") or {})]))
        for other in reads.get("artefacts") or []:
            visit(other)

    visit(name)
    return list(found)


def paper_values_sentence(decl: dict) -> str:
    text = str(decl["paper_values"]).strip().rstrip(".")
    if text == NONE or text.startswith(f"{NONE}:"):
        why = text[len(NONE) :].lstrip(": ").strip()
        return "The paper prints no values for this figure" + (f": {why}." if why else ".")
    return f'Paper values, drawn in black and labelled "paper": {text}.'


def provenance_sentence(paper_cfg: dict, name: str, scale: str) -> str:
    """ "Scale tiny; seeds 0, 1, 2; data: ..." for what the artefact reads at ``scale``."""
    exps = experiments_read(paper_cfg["artefacts"], name)
    if not exps:
        return f"Scale {scale}; reads no experiment: nothing trained, no data set."
    groups: dict[str, list[str]] = {}
    for e in exps:
        seeds = paper_cfg["experiments"][e]["scales"][scale]["seeds"]
        groups.setdefault(", ".join(str(s) for s in seeds), []).append(e)
    if len(groups) == 1:
        seeds = f"seeds {next(iter(groups))} ({', '.join(exps)})"
    else:
        seeds = "seeds " + "; ".join(f"{s} ({', '.join(es)})" for s, es in groups.items())
    data = (paper_cfg.get("data") or {}).get(scale)
    return f"Scale {scale}; {seeds}" + (f"; data: {data}." if data else ".")


def shown_caption(paper_cfg: dict, name: str, scale: str) -> str:
    """The caption the report shows under the artefact: its own, and for a figure what the paper prints and
    where our numbers come from (module docstring)."""
    decl = paper_cfg["artefacts"][name]
    caption = decl["caption"].strip()
    if not shows_figure(decl):
        return caption
    return " ".join([caption, paper_values_sentence(decl), provenance_sentence(paper_cfg, name, scale)])


def validate_paper_values(path: Path, cfg: dict) -> None:
    """Every artefact the report shows as a figure says what the paper prints for it."""
    for name, decl in (cfg.get("artefacts") or {}).items():
        if shows_figure(decl) and not str(decl.get("paper_values") or "").strip():
            raise ConfigError(
                path,
                f"artefacts.{name}.paper_values",
                "a figure the report shows must say what the paper prints for it: where its values are "
                "(drawn in black, labelled 'paper') or 'none: <why>' (CONTRIBUTING.md, Add a figure)",
            )
