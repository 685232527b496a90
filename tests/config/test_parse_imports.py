"""The DAG parse imports no torch, pandas, matplotlib or mlflow (issue 24 item 9: importing torch cost every
`snakemake` call about 1.2 s). What the Snakefile and workflow/rules/common.smk run at parse is run here in a
fresh interpreter: the config loader with the component catalogue (seqmix.config.catalogue), the cells, the
artefact specs and the resources table. The first process builds the catalogue (torch imported there), the
second reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PARSE = """
import json, sys
from seqmix import results as layout
from seqmix.config import artefacts as A
from seqmix.config.base import load_yaml
from seqmix.config.leaves import cell_run_config, expand_cells
from seqmix.config.loading import discover_papers, load_all
from seqmix.config.resources import resolve
from seqmix.io import canonical_json
from seqmix.training.allocator import apply_to_environ

cfg = load_yaml("config/config.yaml")
seqmix = load_all(cfg, ".")
scale = cfg["scale"]
discover_papers(".")
resolve(cfg.get("resources"), scale)
for paper, pcfg in seqmix["papers"].items():
    cells = expand_cells(paper, pcfg, scale)
    for (exp, cell), leaf in list(cells.items())[:3]:
        canonical_json(cell_run_config(paper, exp, cell, leaf, scale, cfg))
    for name in pcfg.get("artefacts") or {}:
        canonical_json(A.artefact_spec(paper, pcfg, name, scale, "results/" + scale, cells))
        A.outputs("results/" + scale, paper, pcfg, name)
print(json.dumps(sorted(m for m in ("torch", "pandas", "matplotlib", "mlflow", "scipy") if m in sys.modules)))
"""


def _parse(cache: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SEQMIX_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", PARSE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dag_parse_imports_no_heavy_module_once_the_catalogue_is_built(tmp_path):
    _parse(tmp_path)  # builds the catalogue of this source version
    assert list(tmp_path.glob("components-*.json"))
    assert _parse(tmp_path) == []
