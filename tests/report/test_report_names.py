"""How report.html names what it lists (issue 26): categories were the papers' ids and every item was listed
by its file name. Now a paper's category is its short title, which Snakemake also makes a reStructuredText
link target of every caption and of the front page; items are rows of labels (artefact title, file, rule)."""

from __future__ import annotations

import io
from collections import defaultdict
from urllib.parse import quote

import pytest
from docutils.core import publish_doctree
from docutils.nodes import problematic, reference, system_message

from seqmix import results as layout
from seqmix.config.artefacts import report_files
from seqmix.config.loading import discover_papers, load_paper
from seqmix.report.captions import (
    OVERVIEW_CATEGORY,
    artefact_title,
    paper_categories,
    paper_category,
    report_labels,
)
from tests.conftest import ROOT

CONFIGS = {paper: load_paper(ROOT / "config" / "papers" / f"{paper}.yaml", "tiny") for paper in discover_papers(ROOT)}
CATEGORIES = paper_categories({paper: cfg["title"] for paper, cfg in CONFIGS.items()})


def _front_page(names: list[str]):
    """A list of links to ``names`` under Snakemake's link targets of categories, as its report renders the
    front page (`.. _<name>: javascript:app.showCategory('<name|urlencode>')`, appended to the text)."""
    links = "\n".join(f"- `{n}`_" for n in names)
    targets = "\n".join(f".. _{n}: javascript:app.showCategory('{quote(n)}')" for n in names)
    return publish_doctree(
        f"{links}\n\n{targets}\n",
        settings_overrides={"report_level": 1, "halt_level": 5, "warning_stream": io.StringIO()},
    )


def test_shipped_papers_are_named_by_their_short_titles():
    assert CATEGORIES["heads"] == "How Many Heads Make an SSM?"  # the title names the id: no suffix
    assert CATEGORIES["sessa"] == "Sessa"  # 'Sessa: Selective State Space Attention'
    assert CATEGORIES["rotations"] == "Why Do Accumulated Transformations Extrapolate? (rotations)"
    assert CATEGORIES["b2s6"] == "Block-Biased Mamba for Long-Range Sequence Processing (b2s6)"
    assert CATEGORIES["matrix"] == "Beyond the papers (matrix)"
    assert len({c.lower() for c in [*CATEGORIES.values(), OVERVIEW_CATEGORY]}) == len(CATEGORIES) + 1


def test_two_papers_in_one_category_are_refused():
    """One category would list both papers' items, and their claims pages under one 'claims'."""
    with pytest.raises(ValueError, match=r"'sessa': \['sessa', 'sess'\]"):  # both titles name their ids
        paper_categories({"sessa": "Sessa: Selective State Space Attention", "sess": "SESSA: another"})
    with pytest.raises(ValueError, match="the overview"):
        paper_categories({"every": f"{OVERVIEW_CATEGORY}: a paper"})


@pytest.mark.parametrize(
    "paper,title,name",
    [
        ("x", "A: b: c", "A (x)"),
        ("x", "Why {w}? A `subtitle`", "Why (w)? (x)"),  # braces: Snakemake wildcards; a backquote ends a link
        ("x", "a|b <c> *d*", "a b c d (x)"),
        ("x", "word " * 20, "word word word word word word word word word word word word ... (x)"),
    ],
)
def test_titles_become_names_that_are_link_targets(paper, title, name):
    assert paper_category(paper, title) == name


def test_every_category_is_a_working_link_on_the_front_page():
    """With a colon in a name (the full titles have one) docutils ends the target name there and the link
    points nowhere; each category must come out as one link to its own category."""
    names = [*CATEGORIES.values(), OVERVIEW_CATEGORY, paper_category("x", "A: b"), paper_category("y", "Q? A: b")]
    tree = _front_page(names)
    problems = [m for m in tree.findall(system_message) if m["level"] >= 2] + list(tree.findall(problematic))
    assert not problems, [p.astext() for p in problems]
    refs = {r.astext(): r.get("refuri") for r in tree.findall(reference)}
    assert refs == {n: f"javascript:app.showCategory('{quote(n)}')" for n in names}
    assert _front_page(["Sessa: Selective State Space Attention"]).findall(problematic)  # a raw title breaks


@pytest.mark.parametrize(
    "name,caption,title",
    [
        ("figure3_left", "Figure 3 left (Exp. I): test MSE of H-head students.", "Figure 3 left (Exp. I)"),
        ("table1", "Table 1 of the heads paper (representative architectures under the framework): x", "Table 1"),
        ("theory_checks", "The measured quantities of the theory checks T1-T6.", "Theory checks"),
        ("figure_e6", "E6 (ours, rotations spec §2.5): the loss.", "E6 (ours, rotations spec §2.5)"),
    ],
)  # fmt: skip
def test_artefact_title_is_the_lead_of_its_caption_or_its_name_in_words(name, caption, title):
    assert artefact_title(name, {"caption": caption}) == title


def _toggles(items: list[dict]) -> list[str]:
    """The labels Snakemake's report (abstract_results.js getData) shows as a toggle in a list of ``items``:
    beyond the first, a label with exactly two values, each on half of the items; none when more than one."""
    names = list(dict.fromkeys(k for item in items for k in item))
    found = []
    for label in names[1:]:
        values = [item[label] for item in items if label in item]
        unique = set(values)
        if len(unique) == 2 and all(values.count(v) * 2 == len(items) for v in unique):
            found.append(label)
    return found if len(found) == 1 else []


def test_a_two_item_list_gets_no_toggle():
    """A second label that differs between two items would be a toggle, and one row would open nothing."""
    two = [report_labels("Table 1", "tables/table1.csv", "p_table1"), report_labels("Table 2", "tables/t2.csv", "p_t2")]
    assert _toggles(two) == []
    assert _toggles([{k: v for k, v in item.items() if k != "rule"} for item in two]) == ["file"]  # two labels


def _report_items(paper: str, cfg: dict) -> dict[str, list[dict]]:
    """The labels of the paper's report items per subcategory, as workflow/rules/*.smk declares them."""
    plural = {"table": "tables", "figure": "figures", "analysis": "analyses"}
    items = defaultdict(list)
    for name, decl in (cfg.get("artefacts") or {}).items():
        if report_files(decl):
            kind_dir = layout.artefact_dir("r", paper, decl["kind"], name).relative_to(layout.paper_dir("r", paper))
            data = (kind_dir / report_files(decl)[0]).as_posix()
            items[plural[decl["kind"]]].append(report_labels(artefact_title(name, decl), data, f"{paper}_{name}"))
    items["claims"].append(report_labels("Claims", "claims.csv", "claims"))
    return items


@pytest.mark.parametrize("paper", sorted(CONFIGS))
def test_every_list_of_the_report_is_one_row_per_item_without_toggles(paper):
    for subcategory, items in _report_items(paper, CONFIGS[paper]).items():
        assert _toggles(items) == [], (paper, subcategory)
        rows = [tuple(item.values()) for item in items]  # the report keys a row by its labels
        assert len(set(rows)) == len(rows), (paper, subcategory)


def test_labels_keep_no_braces():
    """Snakemake fills '{x}' in a label from the job's wildcards (an error for an unknown one)."""
    assert report_labels("dy_{T-1}", "a", "b")["artefact"] == "dy_(T-1)"
