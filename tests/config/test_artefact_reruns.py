"""A learning-rate edit reruns no closed-form artefact (issue 26 item 4).

An artefact's rule reruns when its run spec (``config.artefacts.artefact_spec``, written as canonical JSON by
the Snakefile's ``artefact_run_spec``), its input files (``input_files``) or its params (the shown caption)
change. An artefact that reads no results (no summaries, no leaves, no artefact that reads them) computes from
its settings and, where it reads configs, from the sections its ``config_keys`` name: sessa's ``parameters``
read whole experiment configs, so a learning-rate edit reran it (and heads' theory artefacts before it). Here
every learning rate of every shipped paper is doubled and the three rerun triggers compared, at every scale,
with the code the rules use; no DAG runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seqmix.config import artefacts as A
from seqmix.config.figure_captions import shown_caption
from seqmix.config.leaves import expand_cells
from seqmix.config.loading import SCALES, load_paper
from seqmix.io import canonical_json

RESULTS = "results/tiny"


def _papers(root: Path) -> list[Path]:
    return sorted((root / "config" / "papers").glob("*.yaml"))


def results_free(paper_cfg: dict, name: str) -> bool:
    """The artefact reads no experiment's results, directly or through the artefacts it reads."""
    reads = paper_cfg["artefacts"][name].get("reads") or {}
    if reads.get("summaries") or reads.get("leaves"):
        return False
    return all(results_free(paper_cfg, a) for a in reads.get("artefacts") or [])


def triggers(paper: str, cfg: dict, scale: str) -> tuple[dict, dict]:
    """({artefact: (run spec, input files, caption)} for the results-free artefacts, {leaf id: hash})."""
    cells = expand_cells(paper, cfg, scale)
    out = {}
    for name in cfg.get("artefacts") or {}:
        if results_free(cfg, name):
            spec = canonical_json(A.artefact_spec(paper, cfg, name, scale, RESULTS, cells))
            out[name] = (spec, A.input_files(RESULTS, paper, cfg, cells, name), shown_caption(cfg, name, scale))
    return out, {leaf.id: leaf.hash for leaves in cells.values() for leaf in leaves}


def double_learning_rates(node):
    """Every learning rate a paper config sets (train blocks, lr_stages, a sweep over train.lr), doubled."""
    if isinstance(node, list):
        return [double_learning_rates(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: double_learning_rates(v) for k, v in node.items()}
    if isinstance(out.get("lr"), (int, float)):
        out["lr"] = 2 * out["lr"]
    if out.get("path") == "train.lr" and isinstance(out.get("values"), list):
        out["values"] = [2 * v for v in out["values"]]
    return out


def test_every_results_free_artefact_reading_configs_names_its_sections(root):
    """Without config_keys such an artefact's spec holds whole configs: any edit reruns it."""
    for file in _papers(root):
        cfg = load_paper(file, "tiny")
        for name, decl in (cfg.get("artefacts") or {}).items():
            reads = decl.get("reads") or {}
            if results_free(cfg, name) and (reads.get("configs") or reads.get("scale_configs")):
                assert reads.get("config_keys"), f"{file.name}: artefacts.{name} reads configs without config_keys"


@pytest.mark.parametrize("scale", SCALES)
def test_a_learning_rate_edit_reruns_no_closed_form_artefact(tmp_path, root, scale):
    kept, reran, leaves_changed = [], [], 0
    for file in _papers(root):
        raw = yaml.safe_load(file.read_text())
        raw["experiments"] = double_learning_rates(raw["experiments"])
        edited = tmp_path / file.name
        edited.write_text(yaml.safe_dump(raw, sort_keys=False))
        paper = raw["paper"]
        before, hashes = triggers(paper, load_paper(file, scale), scale)
        after, new_hashes = triggers(paper, load_paper(edited, scale), scale)
        leaves_changed += sum(hashes[k] != new_hashes.get(k) for k in hashes)
        for name, decl in raw["artefacts"].items():
            if name not in before:
                continue
            if "train" in ((decl.get("reads") or {}).get("config_keys") or []):
                reran.append(f"{paper}.{name}")
                assert after[name][0] != before[name][0], f"{paper}.{name} renders the training settings"
            else:
                kept.append(f"{paper}.{name}")
                assert after[name] == before[name], f"a learning-rate edit reruns {paper}.{name}"
    assert leaves_changed, "the edit reaches the leaves (they retrain)"
    for closed_form in ("heads.theory", "heads.theory_checks", "sessa.parameters", "superposition.theory"):
        assert closed_form in kept
    assert sorted(reran) == ["b2s6.table4_configs", "rotations.table4"]  # tables of the training settings
