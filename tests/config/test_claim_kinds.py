"""The kind policy (seqmix.config.claim_kinds, CONTRIBUTING 'Which kind'): where a claim's value comes from
decides the kinds it may have, and a mislabel planted in a shipped paper config stops the load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.claim_kinds import CODE, MEASURED, table_origins
from seqmix.config.loading import load_paper


def test_table_origins_of_a_shipped_paper(root):
    """heads: its experiments (one trains, one diagnoses models at initialisation as the paper's Figure 4
    does) are measured; the theory artefacts read only resolved configs (code evaluations); the spectrum reads
    the trained exp1 leaves."""
    origins = table_origins(load_yaml(root / "config" / "papers" / "heads.yaml"))
    assert origins["exp1"] == origins["exp2"] == MEASURED
    assert origins["theory"] == origins["theory_checks"] == CODE
    assert origins["spectrum"] == MEASURED and origins["figure3_left"] == MEASURED


def test_table_origins_follow_artefacts_transitively():
    cfg = {
        "experiments": {"e1": {}},
        "artefacts": {
            "collect": {"reads": {"summaries": ["e1"]}},
            "table": {"reads": {"artefacts": ["collect"], "configs": ["e1"]}},
            "theory": {"reads": {"configs": ["e1"]}},
            "figure": {"reads": {"artefacts": ["theory"]}},
            "loop_a": {"reads": {"artefacts": ["loop_b"]}},
            "loop_b": {"reads": {"artefacts": ["loop_a"]}},
        },
    }
    origins = table_origins(cfg)
    assert origins["collect"] == origins["table"] == MEASURED
    assert origins["theory"] == origins["figure"] == CODE
    assert origins["loop_a"] == origins["loop_b"] == CODE


def _plant(root: Path, tmp_path: Path, paper: str, cid: str, mutate) -> Path:
    """A copy of config/papers/<paper>.yaml with the entry ``cid`` (as written, family placeholders and all)
    mutated."""
    cfg = load_yaml(root / "config" / "papers" / f"{paper}.yaml")
    (entry,) = [c for c in cfg["claims"] if c["id"] == cid]
    mutate(entry)
    out = tmp_path / "config" / "papers" / f"{paper}.yaml"
    out.parent.mkdir(parents=True)
    out.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return out


MISLABELS = [
    # the spec's evaluation of the formula our code implements, relabelled derived (the default of spec-derived)
    ("sessa", "theory-T4-y-g{gamma}-tau{tau}-l{lag}", lambda c: c.pop("kind"), "law", "names the independent law"),
    # untrained code against the paper's theorem, counted as a reproduction (b2s6 did, issue 25)
    (
        "b2s6",
        "check-T3-s6-before-vanishes",
        lambda c: (c.pop("law"), c.update(kind="reproduction")),
        "kind",
        "needs a measured value",
    ),  # fmt: skip
    # a simulation against the spec's own draws, its law dropped
    ("rotations", "rot-E6-{transport}-lam{lam}-L512", lambda c: c.pop("law"), "law", "names the independent law"),
    # a claim that holds by construction given a law, as if it were evidence against one
    (
        "superposition",
        "slot0-table2-c0",
        lambda c: c.update(law="the paper's Table 2"),
        "law",
        "this claim is kind 'consistency'",
    ),  # fmt: skip
    # a reproduction's law is the paper's number: law: is refused there
    ("sessa", "table1-e1-{model}", lambda c: c.update(law="Table 1"), "law", "this claim is kind 'reproduction'"),
]


@pytest.mark.parametrize("paper,cid,mutate,key,fragment", MISLABELS, ids=[f"{m[0]}:{m[1]}" for m in MISLABELS])
def test_a_planted_mislabel_stops_the_load(root, tmp_path, paper, cid, mutate, key, fragment):
    path = _plant(root, tmp_path, paper, cid, mutate)
    with pytest.raises(ConfigError) as info:
        load_paper(path, "tiny")
    assert info.value.keypath.endswith(f".{key}"), info.value
    assert fragment in info.value.message, info.value.message


def test_the_shipped_labels_load_and_a_law_is_required_only_of_code_evaluations(root, tmp_path):
    """The unplanted copy loads; a derived claim on a measured table needs no law (its comparison value is the
    spec's expectation of a measurement, never the formula the code implements)."""
    path = _plant(root, tmp_path, "rotations", "rot-spec-m2-still-degrades", lambda c: None)
    cfg = load_paper(path, "tiny")
    claim = next(c for c in cfg["claims"] if c["id"] == "rot-spec-m2-still-degrades")
    assert claim["source"] == "spec-derived" and "kind" not in claim and "law" not in claim


def test_law_is_no_claim_default(root, tmp_path):
    """A default law would label every claim of a source at once: the schema refuses it."""
    cfg = load_yaml(root / "config" / "papers" / "heads.yaml")
    cfg["claim_defaults"]["spec-derived"]["law"] = "the spec"
    out = tmp_path / "heads.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    with pytest.raises(ConfigError) as info:
        load_paper(out, "tiny")
    assert info.value.keypath.startswith("claim_defaults.spec-derived"), info.value
