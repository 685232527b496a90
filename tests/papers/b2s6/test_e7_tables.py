"""b2s6 E7 (Tables 2-3) and E8 (Table 4) on hand-built specs and on the real config.

Guards: the printed constants (a typo in a literature row), the column order of the printed rows (the run
spec is stored key-sorted, so a mapping would reorder them), the "mini-LRA (substitute data)" label on every
table and row of ours built on substitute data, the footnotes (LRU column shift, S7's average), and Table 4
rendered from e7's paper-scale configs: equal to the paper's print, and changed when the config changes."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest

from seqmix.config.artefacts import artefact_spec
from seqmix.config.base import ConfigError
from seqmix.config.leaves import expand_leaves
from seqmix.config.loading import load_paper
from seqmix.papers.b2s6 import e7_lra, e7_tables, e8_table4

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "papers" / "b2s6.yaml"


@pytest.fixture(scope="module")
def paper():
    return load_paper(CONFIG, "cpu")


def _printed(lit: dict) -> pd.DataFrame:
    return pd.DataFrame(e7_lra.printed_rows(lit))


def test_printed_constants_are_the_papers(paper):
    """Spot values of spec E7's Tables 2-3, each at its column."""
    lit = paper["analysis"]["lra_literature"]
    rows = _printed(lit)
    acc = rows[rows["quantity"] == "accuracy"].set_index(["model", "task"])["value"]
    assert lit["tasks"] == ["ListOps", "Text", "Retrieval", "Image", "Pathfinder", "Path-X"]
    b2s6 = [acc[("B2S6 (ours)", t)] for t in [*lit["tasks"], "Avg."]]
    assert b2s6 == [63.85, 88.32, 91.44, 88.81, 95.93, 97.90, 87.71]
    assert acc[("S6 (Mamba)", "ListOps")] == 38.02 and acc[("S5", "Path-X")] == 98.58
    assert acc[("LRU", "ListOps")] == 89.00  # as printed (column-shifted)
    assert ("S4++", "Path-X") not in acc.index and ("Spectral SSM", "Image") not in acc.index
    assert lit["b2s6_std"] == [0.45, 0.50, 0.36, 0.22, 0.38, 0.17]
    assert len(lit["rows"]) == 16 and lit["table2"] == ["S4", "S4D", "S5", "S6 (Mamba)", "S7", "B2S6 (ours)"]


def test_recomputed_averages_flag_s7_only(paper):
    rows = _printed(paper["analysis"]["lra_literature"])
    gap = rows[rows["quantity"] == "avg_gap"].set_index("model")["value"]
    mean = rows[rows["quantity"] == "avg_recomputed"].set_index("model")["value"]
    assert round(mean["S7"], 2) == 71.84
    assert set(gap[gap > e7_tables.AVG_TOLERANCE].index) == {"S7"}


def _summary(path: Path, variants: list[str], seeds=(0, 1)) -> Path:
    rows = []
    for v in variants:
        for unit, base in (("s4d", 0.7), ("s6", 0.5), ("b2s6", 0.72)):
            for s in seeds:
                rows.append({"variant": v, "sweep_value": unit, "seed": s, "accuracy": base + 0.01 * s})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _spec(tmp_path: Path, paper: dict, scale: str) -> dict:
    """The table2/table3 spec of the real config at ``scale``, with a hand-made e7 summary (two seeds)."""
    spec = artefact_spec("b2s6", paper, "table2", scale, tmp_path, {})
    variants = list(spec["resolved"]["e7"])
    spec["inputs"]["summaries"] = {"e7": str(_summary(tmp_path / "e7.csv", variants))}
    (tmp_path / "lra").mkdir()
    e7_lra.lra_results(spec, tmp_path / "lra")
    spec["inputs"]["artefacts"] = {"lra_results": [str(tmp_path / "lra" / "summary.csv")]}
    return spec


def test_ours_rows_mean_std_seeds_and_gaps(tmp_path, paper):
    spec = _spec(tmp_path, paper, "cpu")
    rows = pd.read_csv(tmp_path / "lra" / "summary.csv")
    ours = rows[(rows["source"] == "ours") & (rows["quantity"] == "accuracy")].set_index(["model", "task"])
    assert ours.loc[("B2S6", "Image"), "value"] == pytest.approx(72.5)
    assert ours.loc[("B2S6", "Image"), "std"] == pytest.approx(0.7071068, rel=1e-6)  # ddof 1 over 72, 73
    assert ours.loc[("S6", "Avg."), "seeds"] == 2 and ours.loc[("S6", "Avg."), "data"] == "5 tasks"
    assert ("B2S6", "Path-X") not in ours.index  # cpu runs no Path-X
    assert "digits" in ours.loc[("S4D", "Image"), "data"]
    gaps = rows[rows["quantity"] == "abs_gap_b2s6_s4d"].set_index("task")["value"]
    assert set(gaps.index) == {"Image", "Pathfinder"} and gaps["Image"] == pytest.approx(2.0)
    assert spec["scale"] == "cpu"


def test_substitute_tables_are_labelled_and_footnoted(tmp_path, paper):
    spec = _spec(tmp_path, paper, "cpu")
    for fn, stem in ((e7_tables.table2, "table2"), (e7_tables.table3, "table3")):
        fn(spec, tmp_path)
        md = (tmp_path / f"{stem}.md").read_text()
        assert md.startswith("mini-LRA (substitute data): ")
        df = pd.read_csv(tmp_path / f"{stem}.csv", keep_default_na=False)
        ours = df[~df["rows from"].str.startswith("paper")]
        assert len(ours) == 4 and (ours["rows from"] == "ours, mini-LRA (substitute data)").all()
        data = ours[ours["model"] == "data source"].iloc[0]
        assert "ListOps generator" in data["ListOps"] and "Pathfinder generator" in data["Pathfinder"]
        assert data["Path-X"] == "not run"
        assert ours[ours["model"] == "B2S6"].iloc[0]["Image"] == "72.50 ± 0.71 (n = 2)"
        notes = df.set_index("model")["note"]
        assert "71.84" in notes["S7"] and "Spiking SSM" not in set(notes[notes != ""].index)
        assert stem == "table2" or "column-shifted" in notes["LRU"]
    t2 = pd.read_csv(tmp_path / "table2.csv", keep_default_na=False).set_index("model")
    assert t2.loc["B2S6 (ours)", "ListOps"] == "**63.85**" and t2.loc["S7", "ListOps"] == "_63.77_"
    assert t2.loc["B2S6 (ours) std", "Path-X"] == "±0.17"
    t3 = pd.read_csv(tmp_path / "table3.csv", keep_default_na=False).set_index("model")
    assert t3.loc["S4++", "Path-X"] == "—" and t3.loc["S7", "Avg. (recomputed)"] == "71.84"


def test_real_data_tables_carry_no_substitute_label(tmp_path, paper):
    spec = _spec(tmp_path, paper, "paper")
    e7_tables.table2(spec, tmp_path)
    assert "substitute" not in (tmp_path / "table2.md").read_text()
    df = pd.read_csv(tmp_path / "table2.csv", keep_default_na=False).set_index("model")
    assert df.loc["data source", "Path-X"] == "LRA Pathfinder 128x128"
    assert df.loc["data source", "Text"] == "IMDb bytes"


def _table4(tmp_path: Path, paper: dict, scale: str = "tiny") -> pd.DataFrame:
    spec = artefact_spec("b2s6", paper, "table4_configs", scale, tmp_path, {})
    e8_table4.table4_configs(spec, tmp_path)
    spec["inputs"]["artefacts"] = {"table4_configs": [str(tmp_path / "summary.csv")]}
    e8_table4.table4(spec, tmp_path)
    return pd.read_csv(tmp_path / "table4.csv", keep_default_na=False, dtype=str)


def test_table4_from_the_paper_configs_equals_the_print(tmp_path, paper):
    """At any scale, the table renders the paper-scale configs, and every cell matches the printed Table 4."""
    table = _table4(tmp_path, paper, "tiny")
    assert list(table["Task"]) == ["ListOps", "Text", "Retrieval", "Image", "Pathfinder", "Path-X"]
    row = table.set_index("Task").loc["ListOps"]
    assert (row["Depth"], row["#Features"], row["Norm"], row["Prenorm"]) == ("8", "128", "BN", "False")
    assert (row["LR"], row["BS"], row["Epochs"], row["WD"], row["h"]) == ("0.008", "32", "120", "0.03", "8")
    assert table.set_index("Task").loc["Image", "p (= #Features / h)"] == "64"
    assert (table["as printed in the paper"] == "yes").all()
    checks = pd.read_csv(tmp_path / "summary.csv")
    assert len(checks) == 6 * len(e8_table4.FIELDS) and (checks["match"] == 1).all()


def test_table4_follows_a_config_change(tmp_path, paper):
    """Changing e7's paper-scale lr and depth of ListOps changes Table 4 and fails the print comparison."""
    changed = copy.deepcopy(paper)
    listops = changed["experiments"]["e7"]["variants"]["listops"]
    listops["train"]["lr"] = 0.005
    listops["model"]["n_layers"] = 4
    table = _table4(tmp_path, changed).set_index("Task")
    assert table.loc["ListOps", "LR"] == "0.005" and table.loc["ListOps", "Depth"] == "4"
    assert table.loc["ListOps", "as printed in the paper"] == "no: Depth 4 (paper 8); LR 0.005 (paper 0.008)"
    assert table.loc["Text", "as printed in the paper"] == "yes"
    checks = pd.read_csv(tmp_path / "summary.csv")
    assert checks["match"].sum() == len(checks) - 2


def test_table4_refuses_a_missing_explicit_setting(tmp_path, paper):
    changed = copy.deepcopy(paper)
    del changed["experiments"]["e7"]["variants"]["text"]["model"]["prenorm"]
    changed["experiments"]["e7"]["base"]["model"].pop("prenorm")
    with pytest.raises(ValueError, match="variant 'text'.*model.prenorm"):
        _table4(tmp_path, changed)


def test_scale_variants_select_the_leaves(paper):
    """cpu runs five tasks (no Path-X), paper all six; tiny two."""
    for scale, want in (("tiny", 2), ("cpu", 5), ("paper", 6)):
        leaves = [leaf for leaf in expand_leaves("b2s6", load_paper(CONFIG, scale), scale) if leaf.experiment == "e7"]
        assert len({leaf.variant for leaf in leaves}) == want
    assert not any(leaf.variant == "pathx" for leaf in expand_leaves("b2s6", paper, "cpu"))


def test_scale_variants_must_name_variants(tmp_path):
    text = CONFIG.read_text().replace(
        "variants: [listops, text, retrieval, image, pathfinder]", "variants: [listops, textt]"
    )
    bad = tmp_path / "b2s6.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=r"experiments\.e7\.scales\.cpu\.variants.*'textt'"):
        load_paper(bad, "cpu")


def test_scale_configs_must_name_experiments(tmp_path):
    bad = tmp_path / "b2s6.yaml"
    bad.write_text(CONFIG.read_text().replace("scale_configs: {paper: [e7]}", "scale_configs: {paper: [e77]}"))
    with pytest.raises(ConfigError, match=r"artefacts\.table4_configs\.reads\.scale_configs\.paper.*'e77'"):
        load_paper(bad, "tiny")
