"""Variant sets and capability exclusion (config.loading.resolve_variant_sets, config.compatibility), on the
cross-paper matrix's own config."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqmix.config.base import ConfigError
from seqmix.config.catalogue import Component
from seqmix.config.compatibility import incompatibility
from seqmix.config.loading import load_paper

MATRIX = Path(__file__).resolve().parents[2] / "config" / "papers" / "matrix.yaml"


def _copy(tmp_path, edit=lambda s: s) -> Path:
    p = tmp_path / "matrix.yaml"
    p.write_text(edit(MATRIX.read_text()))
    return p


def test_every_task_gets_the_whole_variant_set_at_cpu_and_incompatible_pairs_are_listed():
    cfg = load_paper(MATRIX, "cpu")
    n = len(cfg["variant_sets"]["mixers"])
    excluded = {(e["experiment"], e["variant"]) for e in cfg["excluded"]}
    # the fixed-length factorized attention cannot be tested on longer rows (MQAR) or longer contexts (stream)
    assert excluded == {("mqar", "factorized"), ("stream", "factorized")}
    for exp, spec in cfg["experiments"].items():
        assert len(spec["variants"]) == n - sum(1 for e, _ in excluded if e == exp)
    assert all("fixed_length" in e["reason"] for e in cfg["excluded"])


def test_an_incompatible_pair_is_an_error_unless_the_experiment_skips_it(tmp_path):
    one = lambda s: s.replace("    incompatible: skip\n", "", 2)  # symbolsoup and mqar lose the skip
    with pytest.raises(ConfigError, match="evaluates beyond the training length") as e:
        load_paper(_copy(tmp_path, one), "cpu")
    assert "experiments.mqar.variants.factorized" in str(e.value)


def test_an_unknown_variant_set_is_an_error(tmp_path):
    bad = lambda s: s.replace("variant_set: mixers", "variant_set: mixer", 1)
    with pytest.raises(ConfigError, match="no variant set 'mixer'"):
        load_paper(_copy(tmp_path, bad), "tiny")


def test_the_rules_read_declared_capabilities_not_names():
    task = Component("task", "t", {}, capabilities={"evaluates_longer": True})
    lm = Component("model", "lm", {}, capabilities={"requires_causal_mixer": True})
    clf = Component("model", "clf", {}, capabilities={"requires_causal_mixer": False})
    fixed = Component("mixer", "m", {}, capabilities={"causal": True, "fixed_length": True})
    bidir = Component("mixer", "b", {}, capabilities={"causal": False, "fixed_length": False})
    assert "fixed_length" in incompatibility(task, clf, fixed)
    assert incompatibility(None, clf, fixed) is None
    assert "causal" in incompatibility(None, lm, bidir)
    assert incompatibility(None, clf, bidir) is None
