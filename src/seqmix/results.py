"""The one owner of the results layout and the completion markers.

Every run writes under the results root (``config["results"]``), one directory per scale, then one per
paper::

    <results>/
        mlflow.db  .mlflow/                 the MLflow store and its artifacts: shared by every scale
                                            (runs carry a ``scale`` tag; leaf runs are keyed by config hash)
        <scale>/                            one scale's run (``scale_root``): tiny | cpu | paper
            report.md  report.html          the index and Snakemake's report of this scale
            claims_overview.html            every paper's verdict counts per kind (the report's front page)
            .pipeline/                      dispatch settings, logs of the global rules
            <paper>/
                run/<experiment>.<cell>.json        a cell's run config (the train/evaluate/diagnose jobs read it)
                run/artefacts/<name>.json           an artefact's run spec
                run/claims.json                     the claims step's run spec
                <experiment>/cells/<cell>.<stage>.json   a cell's completion marker per stage (the rule's output)
                <experiment>/summary.csv            every leaf of the experiment (collect)
                <experiment>/<variant>/<point>/seed<seed>/   a leaf: checkpoint, history, metrics, markers
                tables/  figures/                   the outputs of `table` and `figure` artefacts
                <name>/                             the outputs of an `analysis` artefact (claims: ``table: <name>``)
                claims.md  claims.csv  claims.html   (the html: the report's claims page)
                report/<name>.html                  a shown CSV table rendered for report.html
                logs/  benchmarks/

The scale comes first, not after the paper, because a scale's run is one self-contained tree: its report,
index and pipeline state describe that scale alone, a ``cpu`` run never touches the ``tiny`` results beside
it, and archiving or deleting a scale is one directory. Below ``<scale>/`` every path function takes that
scale root (``scale_root(results, scale)``) as its ``results`` argument.

A leaf's stage is done when its marker exists and carries the leaf's config hash (``is_done``): a
half-written leaf, or one of another config, has no such marker and is rebuilt.

Summaries, claims.csv files and the stages' markers carry a checksum (``<name>.sha256``, ``seqmix.io``):
a reader verifies it (``verify_summary``, ``verify_claims``, ``verify_cell_marker``) and refuses a
truncated, edited or garbled file, or one whose checksum is gone; the DAG moves such outputs aside
(``discard_corrupt``) before Snakemake looks at them, so it sees them missing and makes them again.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from .io import checksum_path, read_json, recorded_digests, verify_checksum

log = logging.getLogger("seqmix.results")

STAGES = ("train", "evaluate", "diagnose")
DEFAULT_STAGES = ("train", "evaluate")  # an experiment that names no ``stages:``
# the columns that identify a leaf in every stage's summary row (seqmix.pipeline.stages.leaf_key)
LEAF_KEY = ("id", "hash", "variant", "point", "sweep_value", "seed", "model")
# the per-leaf marker each stage writes last
LEAF_MARKERS = {"train": "train.done.json", "evaluate": "metrics.json", "diagnose": "diagnose.json"}
# where the outputs of each artefact kind go, under the paper's directory ({name}: the artefact's name)
KIND_DIRS = {"table": "tables", "figure": "figures", "analysis": "{name}"}
# names an analysis artefact may not take: its directory would collide with these
RESERVED_DIRS = frozenset({"run", "logs", "benchmarks", "tables", "figures", "cells", "report"})
# the scales a run can have (config/config.yaml `scale:`); each is a directory under the results root
SCALES = ("tiny", "cpu", "paper")


def scale_root(results: str | Path, scale: str) -> Path:
    """The directory one scale's run writes into; every other path below takes it as ``results``."""
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r} is not one of {SCALES}")
    return Path(results) / scale


def scale_roots(results: str | Path) -> list[Path]:
    """The scale directories present under the results root, in SCALES order."""
    return [Path(results) / s for s in SCALES if (Path(results) / s).is_dir()]


def paper_dir(results: str | Path, paper: str) -> Path:
    """A paper's directory under a scale root."""
    return Path(results) / paper


def summary_path(results: str | Path, paper: str, experiment: str) -> Path:
    """The experiment's summary: one row per leaf (per diagnostic row for diagnose-only experiments)."""
    return paper_dir(results, paper) / experiment / "summary.csv"


def cell_marker(results: str | Path, paper: str, experiment: str, cell: str, stage: str) -> Path:
    """The marker a cell's stage writes last (the train/evaluate/diagnose rule's output)."""
    return paper_dir(results, paper) / experiment / "cells" / f"{cell}.{stage}.json"


def cell_run_path(results: str | Path, paper: str, experiment: str, cell: str) -> Path:
    return paper_dir(results, paper) / "run" / f"{experiment}.{cell}.json"


def cell_run_paths(results: str | Path, paper: str, experiment: str | None = None) -> list[Path]:
    """The run configs the DAG has written for a paper (or one experiment), sorted."""
    return sorted((paper_dir(results, paper) / "run").glob(f"{experiment or '*'}.*.json"))


def artefact_run_path(results: str | Path, paper: str, name: str) -> Path:
    return paper_dir(results, paper) / "run" / "artefacts" / f"{name}.json"


def claims_run_path(results: str | Path, paper: str) -> Path:
    return paper_dir(results, paper) / "run" / "claims.json"


def claims_paths(results: str | Path, paper: str) -> tuple[Path, Path]:
    """(claims.md, claims.csv)."""
    d = paper_dir(results, paper)
    return d / "claims.md", d / "claims.csv"


def claims_html_path(results: str | Path, paper: str) -> Path:
    """The claims page as the HTML report shows it (it renders HTML, not Markdown or CSV; report.claims_page)."""
    return paper_dir(results, paper) / "claims.html"


def report_html_path(results: str | Path, paper: str, name: str) -> Path:
    """The HTML rendering of artefact ``name``'s shown CSV, for the HTML report."""
    return paper_dir(results, paper) / "report" / f"{name}.html"


def leaf_dir(results: str | Path, paper: str, experiment: str, variant: str, point: str, seed: int) -> Path:
    return paper_dir(results, paper) / experiment / variant / point / f"seed{seed}"


def leaf_marker(leaf_out: str | Path, stage: str) -> Path:
    """The marker a stage writes last in a leaf's directory."""
    return Path(leaf_out) / LEAF_MARKERS[stage]


def artefact_dir(results: str | Path, paper: str, kind: str, name: str) -> Path:
    """The directory an artefact writes into (its ``writes`` are relative to it)."""
    return paper_dir(results, paper) / KIND_DIRS[kind].format(name=name)


def is_done(marker: str | Path, leaf_hash: str) -> bool:
    """True when ``marker`` exists, is readable and carries ``leaf_hash``."""
    marker = Path(marker)
    if not marker.exists():
        return False
    try:
        return read_json(marker).get("hash") == leaf_hash
    except (ValueError, OSError, AttributeError):
        return False


class CorruptResult(ValueError):
    """A result file that fails its checksum (or does not parse); the message names it and how to remake it."""


# outputs always written with a checksum: one without (its sidecar deleted, or written before checksums) is
# not trusted; a reader refuses it and the DAG makes it again (``discard_corrupt``), as for a failed checksum
CHECKSUMMED_NAMES = ("summary.csv", "claims.csv")


def needs_checksum(path: str | Path) -> bool:
    """Whether ``path`` is an output written with a checksum by every writer: a summary (an experiment's, or
    an analysis's that claims read), a claims.csv, a cell marker (``<experiment>/cells/<cell>.<stage>.json``)."""
    path = Path(path)
    return path.name in CHECKSUMMED_NAMES or (path.parent.name == "cells" and path.suffix == ".json")


def verify_summary(path: str | Path) -> None:
    """Raise ``CorruptResult`` when ``path`` does not match its checksum or has none."""
    _verify(path, "the next DAG run moves it aside and makes it again (seqmix.results.discard_corrupt)")


def verify_cell_marker(path: str | Path) -> None:
    """Raise ``CorruptResult`` when a cell marker (collect's input) does not match its checksum or has none."""
    _verify(
        path, "the next DAG run moves it aside and runs its stage of that cell again (seqmix.results.discard_corrupt)"
    )


def verify_claims(path: str | Path) -> None:
    """Raise ``CorruptResult`` when a claims.csv does not match its checksum or has none (a truncated one
    would be read as if the paper had fewer claims); the message gives the command that remakes it."""
    _verify(path, f"remake it with the paper's claims step: {claims_remake_command(path)} (a snakemake run of "
                  "the default target also moves it aside and makes it again)")  # fmt: skip


def claims_remake_command(path: str | Path) -> str:
    """The snakemake command that makes ``<results>/<scale>/<paper>/claims.csv`` again."""
    path = Path(path)
    scale, root = path.parent.parent.name, path.parent.parent.parent
    config = f" --config scale={scale} results={root}" if scale in SCALES else ""
    return f".venv/bin/snakemake --workflow-profile profiles/local{config} --forcerun claims -- {path}"


def read_leaf_output(path: str | Path, stage: str = "train") -> dict:
    """A leaf's JSON output (its ``stage`` marker, or ``history.json``) that an artefact builds a table from,
    after verifying its checksum: an edited or unchecksummed one would enter the artefact's summary under a
    fresh checksum. ``CorruptResult`` says how the stage makes it again."""
    path = Path(path)
    marker = leaf_marker(path.parent, stage)
    up = path.parent.parents  # <root>/<scale>/<paper>/<experiment>/<variant>/<point>/seed<k>/
    scale = up[4] if len(up) > 4 else Path()
    config = f" --config scale={scale.name} results={scale.parent}" if scale.name in SCALES else ""
    redo = f".venv/bin/snakemake --workflow-profile profiles/local{config} --forcerun {stage}"
    _verify(path, f"the {stage} stage makes it again when it redoes the leaf: delete {marker} and run {redo}")
    return read_json(path)


def _verify(path: str | Path, remake: str) -> None:
    why = verify_checksum(path)
    if why:
        raise CorruptResult(f"{path}: {why}. {remake[0].upper()}{remake[1:]}; or delete it and rerun snakemake")


def discard_corrupt(paths) -> list[Path]:
    """Move aside (to ``<name>.corrupt``) each existing file of ``paths`` that fails its checksum, lacks the
    checksum it is always written with (``needs_checksum``) or, for another ``.json`` with no checksum (a run
    config), does not parse; returns the files moved. Run before the DAG is built: Snakemake then sees them
    missing and reruns the rules that make them."""
    moved = []
    for path, why in find_corrupt(paths):
        log.warning("%s: %s; moved aside to %s.corrupt so the DAG makes it again", path, why, path.name)
        os.replace(path, path.with_name(path.name + ".corrupt"))
        if checksum_path(path).exists():
            os.replace(checksum_path(path), path.with_name(path.name + ".corrupt.sha256"))
        moved.append(path)
    return moved


def find_corrupt(paths) -> list[tuple[Path, str]]:
    """(path, why) for each existing file of ``paths`` that discard_corrupt would move aside; moves nothing
    (a dry run names them)."""
    found = []
    for path in map(Path, paths):
        why = _corruption(path)
        if why is not None:
            found.append((path, why))
    return found


def _corruption(path: Path) -> str | None:
    """Why ``path`` is unusable, or None (also when it does not exist, or has nothing to check it against)."""
    if not path.is_file():
        return None
    if recorded_digests(path) or needs_checksum(path):
        return verify_checksum(path)
    if path.suffix == ".json":
        try:
            json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as e:
            return f"not valid JSON ({e})"
    return None
