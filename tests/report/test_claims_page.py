"""The claims page report.html shows per paper (issue 26): it was a flat dump of claims.csv's 19 columns (the
commit in every row, the verdict off-screen, no counts, consistency rows first). Now: header once, counts per
kind, claims grouped by kind then artefact, verdict / our value / paper value / seeds / claim first, the rest
folded into <details>, sortable tables; and the scale's overview of every paper's counts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from seqmix.claims.checks import DIFFERS, HOLDS, KIND_OF_SOURCE, NOT_EXPECTED, NOT_RUN, WITHIN_NOISE, ClaimResult
from seqmix.claims.render import COUNT_COLUMNS, count_table, write_claims
from seqmix.cli.main import main as cli_main
from seqmix.report.claims_page import COLUMNS, STATEMENT_CHARS, write_claims_page, write_overview
from seqmix.results import CorruptResult, claims_paths

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LONG = "the ratio of the two gradient norms grows as c cubed " * 5  # > STATEMENT_CHARS
EVIL = "<script>alert(1)</script> the norm |x| of <b>x</b> & 'y'"


class Node:
    def __init__(self, tag: str, attrs: dict):
        self.tag, self.attrs, self.children = tag, attrs, []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str, cls: str | None = None) -> list[Node]:
        found = []
        for c in self.children:
            if isinstance(c, Node):
                if c.tag == tag and (cls is None or cls in c.attrs.get("class", "").split()):
                    found.append(c)
                found += c.all(tag, cls)
        return found

    def kids(self, tag: str) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node) and c.tag == tag]


class Tree(HTMLParser):
    VOID = {"meta", "br", "hr", "img", "link", "input"}

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {})
        self.stack = [self.root]
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def _claim(cid, source, artefact, verdict=HOLDS, **kw):
    base = {"statement": f"statement of {cid}", "reported": 0.5, "ours": 0.52, "check": "within(target=0.5)"}
    base.update(kw)
    base.setdefault("kind", KIND_OF_SOURCE[source])  # as the engine sets it (claims.checks.claim_kind)
    return ClaimResult(cid, source, artefact, base.pop("statement"), base.pop("reported"), base.pop("ours"),
                       base.pop("check"), verdict, ["tiny"], **base)  # fmt: skip


# the csv's order: consistency first, artefacts interleaved and not alphabetical, as a paper config may list them
CLAIMS = [
    _claim("id-1", "closed-form", "Thm 1", by_construction="zero row sums", detail="max |err| 0"),
    _claim("r-b1", "paper", "Table 1", verdict=NOT_RUN, detail="exp9/summary.csv does not exist"),
    _claim(
        "r-a1",
        "paper",
        "Figure 3",
        noise="seeds",
        interval="[0.51, 0.53]",
        seeds="3/3",
        seeds_used="0, 1, 2",
        detail="0.52 within 0.03 of 0.5",
    ),  # fmt: skip
    _claim("d-1", "spec-derived", "Thm 2", verdict=DIFFERS, law="sqrt(L) growth (Thm 2)", statement=LONG),
    _claim("r-a2", "paper", "Figure 3", verdict=WITHIN_NOISE, statement=EVIL, check="threshold(op=> value=|x|)"),
    _claim("r-a3", "paper", "Figure 3", secondary="of r-a1: Table 3's rounding of the same number"),
    _claim("r-b2", "paper", "Table 1", verdict=NOT_EXPECTED),
]


def _csv(results: Path, paper: str = "alpha", claims=CLAIMS) -> Path:
    md, csv = claims_paths(results, paper)
    md.parent.mkdir(parents=True, exist_ok=True)
    write_claims(claims, md, csv, paper, "tiny", COMMIT, data="generated probes", device="cpu")
    return csv


@pytest.fixture
def page(tmp_path) -> tuple[str, Node, Path]:
    csv = _csv(tmp_path / "tiny")
    out = tmp_path / "claims.html"
    write_claims_page(csv, out, "alpha", data="generated probes <4x4>", device="cpu")
    text = out.read_text()
    return text, Tree(text).root, csv


def _rows(table: Node) -> list[Node]:
    return table.kids("tbody")[0].kids("tr")


def test_header_states_paper_scale_commit_data_and_device_once(page):
    text, root, _ = page
    assert root.all("h1")[0].text() == "Claims of alpha at scale tiny"
    assert text.count(COMMIT) == 1 and "12345678" not in text.replace(COMMIT, "")  # once, not per row
    meta = " ".join(p.text() for p in root.all("p", "meta"))
    assert "Data at tiny: generated probes <4x4>. Device: cpu." in meta
    assert "1 secondary readings shown, not counted" in meta


def test_counts_table_is_count_table(page):
    _, root, csv = page
    table = root.all("table", "counts")[0]
    header = [th.text() for th in table.all("th")]
    assert header == ["kind", "source", *COUNT_COLUMNS, "total"]
    got = [[td.text() for td in tr.kids("td")] for tr in _rows(table)]
    want = count_table(pd.read_csv(csv, keep_default_na=False))
    assert got == [[str(v) for v in row] for row in want.itertuples(index=False)]
    assert [r[0] for r in got] == ["reproduction", "derived", "consistency"]  # reproduction first
    repro = dict(zip(header, got[0]))
    assert repro["holds"] == "1" and repro["total"] == "4"  # r-a3 is secondary: shown, not counted


def test_claims_grouped_by_kind_then_artefact_in_order(page):
    _, root, _ = page
    body = root.all("body")[0]
    order = [(n.tag, n.text()) for n in body.children if isinstance(n, Node) and n.tag in ("h2", "h3")]
    assert order == [
        ("h2", "Reproduction"), ("h3", "Table 1"), ("h3", "Figure 3"),
        ("h2", "Derived"), ("h3", "Thm 2"),
        ("h2", "Consistency"), ("h3", "Thm 1"),
    ]  # fmt: skip
    tables = root.all("table", "claims")
    ids = [[tr.attrs["id"] for tr in _rows(t)] for t in tables]
    assert ids == [["r-b1", "r-b2"], ["r-a1", "r-a2", "r-a3"], ["d-1"], ["id-1"]]


def test_first_columns_verdict_value_paper_seeds_claim(page):
    _, root, _ = page
    tables = root.all("table", "claims")
    assert all([th.text() for th in t.all("th")] == list(COLUMNS) for t in tables)
    assert list(COLUMNS) == ["verdict", "our value ± interval", "paper value", "seeds", "claim"]
    a1 = _rows(tables[1])[0].kids("td")
    assert a1[0].all("span", "badge")[0].attrs["class"] == "badge holds" and a1[0].text() == "holds"
    assert a1[1].text() == "0.52" + "95%: [0.51, 0.53]" and a1[2].text() == "0.5" and a1[3].text() == "3/3"
    assert a1[4].all("code")[0].text() == "r-a1"
    d1 = _rows(tables[2])[0].kids("td")
    assert d1[0].text() == "differs" and d1[2].text() == "0.5" + "law: sqrt(L) growth (Thm 2)"
    badges = [_rows(tables[0])[i].kids("td")[0].text() for i in (0, 1)]
    assert badges == ["not run", "not expected"]
    id1 = _rows(tables[3])[0].kids("td")[0].all("span", "badge")[0]
    assert id1.text() == "holds by construction" and "by-construction" in id1.attrs["class"]
    assert id1.attrs["title"] == "zero row sums"


def test_details_hold_everything_else(page):
    _, root, _ = page
    rows = {tr.attrs["id"]: tr for t in root.all("table", "claims") for tr in _rows(t)}
    details = rows["r-a1"].all("details")[0]
    pairs = dict(zip([dt.text() for dt in details.all("dt")], [dd.text() for dd in details.all("dd")]))
    assert pairs["check"] == "within(target=0.5)" and pairs["detail"] == "0.52 within 0.03 of 0.5"
    assert pairs["noise model"] == "seeds" and pairs["source"] == "paper (reproduction)"
    assert pairs["seeds used"] == "0, 1, 2" and pairs["95% interval"] == "[0.51, 0.53]"
    assert "check" not in "".join(td.text() for td in rows["r-a1"].kids("td")[:4])  # not in a column
    b1 = rows["r-b1"].all("details")[0].text()
    assert "exp9/summary.csv does not exist" in b1


def test_long_statement_one_line_full_text_in_details(page):
    _, root, _ = page
    row = next(tr for t in root.all("table", "claims") for tr in _rows(t) if tr.attrs["id"] == "d-1")
    shown = row.all("span", "statement")[0].text()
    assert len(shown) <= STATEMENT_CHARS and shown.endswith("…") and "\n" not in shown
    assert " ".join(LONG.split()) in row.all("details")[0].text()


def test_secondary_reading_marked_not_counted(page):
    _, root, _ = page
    rows = {tr.attrs["id"]: tr for t in root.all("table", "claims") for tr in _rows(t)}
    sec = rows["r-a3"]
    assert sec.attrs.get("class") == "secondary" and sec.all("span", "not-counted")[0].text() == "not counted"
    assert "of r-a1: Table 3's rounding of the same number (shown, not counted)" in sec.all("details")[0].text()
    assert not rows["r-a1"].all("span", "not-counted") and "class" not in rows["r-a1"].attrs


def test_text_is_escaped(page):
    text, root, _ = page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; the norm |x| of &lt;b&gt;x&lt;/b&gt; &amp; &#x27;y&#x27;" in text
    assert "<b>x</b>" not in text and text.count("<script>") == 1  # ours, the sort script
    assert "Data at tiny: generated probes &lt;4x4&gt;" in text
    row = next(tr for t in root.all("table", "claims") for tr in _rows(t) if tr.attrs["id"] == "r-a2")
    assert row.all("details")[0].text().count(EVIL) == 1 and "threshold(op=> value=|x|)" in row.text()


def test_tables_are_sortable_offline(page):
    text, root, _ = page
    tables = root.all("table", "claims")
    assert tables and all("sortable" in t.attrs["class"].split() for t in tables)
    script = root.all("script")[-1].text()
    assert 'querySelectorAll("table.sortable")' in script and 'addEventListener("click"' in script
    assert "http" not in text.replace("http-equiv", "") and "src=" not in text  # nothing fetched


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium to run the script")
def test_clicking_a_header_sorts_its_rows(page, tmp_path):
    text, _, _ = page
    probe = (  # click 'verdict' of Figure 3's table twice (descending), record the ids
        '<script>var t=document.querySelectorAll("table.claims")[1],th=t.querySelector("thead th");'
        "th.click();th.click();"
        'document.body.setAttribute("data-ids",Array.prototype.map.call(t.tBodies[0].rows,function(r)'
        '{return r.id}).join(","));</script></body>'
    )
    path = tmp_path / "probe.html"
    path.write_text(text.replace("</body>", probe))
    r = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # verdict rank: holds (r-a1, r-a3) < within noise (r-a2); descending puts r-a2 first
    assert 'data-ids="r-a2,' in r.stdout, r.stdout[-500:] + r.stderr[-500:]


def test_a_truncated_claims_csv_is_refused(tmp_path):
    csv = _csv(tmp_path / "tiny")
    csv.write_text("".join(csv.read_text().splitlines(keepends=True)[:3]))
    with pytest.raises(CorruptResult, match="claims.csv"):
        write_claims_page(csv, tmp_path / "x.html", "alpha")
    assert not (tmp_path / "x.html").exists()


def test_claims_command_writes_the_page(tmp_path, monkeypatch):
    """`seqmix claims --out-html` (the DAG's claims rule) writes this page, with the run spec's data line."""
    from seqmix.cli import papers

    paper_dir = tmp_path / "tiny" / "alpha"
    paper_dir.mkdir(parents=True)
    spec = {"claims": [], "paper_dir": str(paper_dir), "scale": "tiny", "paper": "alpha", "data": "digits 4x4",
            "inputs": {"summaries": {}, "artefacts": {}}}  # fmt: skip
    (tmp_path / "claims.json").write_text(json.dumps(spec))
    monkeypatch.setattr("seqmix.claims.engine.evaluate_claims", lambda *a: list(CLAIMS))
    monkeypatch.setattr(papers, "_log_paper_artefacts", lambda *a: None)  # MLflow: not this test's
    md, csv, out = paper_dir / "claims.md", paper_dir / "claims.csv", paper_dir / "claims.html"
    cli_main(["claims", "--run", str(tmp_path / "claims.json"), "--out-md", str(md), "--out-csv", str(csv),
              "--out-html", str(out)])  # fmt: skip
    root = Tree(out.read_text()).root
    assert root.all("h1")[0].text() == "Claims of alpha at scale tiny"
    assert "Data at tiny: digits 4x4." in out.read_text() and len(root.all("table", "claims")) == 4


def test_claims_page_command_renders_a_committed_archive(root, tmp_path):
    """An archive's claims.csv (no checksum: tests/claims/test_archive.py checks it against the engine) gets
    its page with the archive's paper, data and device."""
    archive = root / "docs" / "measured" / "b2s6" / "cpu"
    meta = json.loads((archive / "archive.json").read_text())
    out = tmp_path / "b2s6.html"
    r = subprocess.run(
        [sys.executable, "-m", "seqmix", "claims-page", "--csv", str(archive / "claims.csv"), "--out", str(out)],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    tree = Tree(out.read_text()).root
    assert tree.all("h1")[0].text() == "Claims of b2s6 at scale cpu"
    assert f"Device: {meta['device']}." in " ".join(p.text() for p in tree.all("p", "meta"))
    df = pd.read_csv(archive / "claims.csv", keep_default_na=False)
    assert sum(len(_rows(t)) for t in tree.all("table", "claims")) == len(df)


def test_claims_page_command_refuses_a_results_csv_without_checksum(tmp_path):
    csv = _csv(tmp_path / "tiny")
    csv.with_name("claims.csv.sha256").unlink()
    with pytest.raises(SystemExit, match="claims.csv: .*--forcerun claims"):
        cli_main(["claims-page", "--csv", str(csv), "--out", str(tmp_path / "x.html")])


# ----------------------------------------------------------------------------- the scale's overview


def test_overview_counts_match_the_csvs_and_keep_other_papers(tmp_path):
    results = tmp_path / "tiny"
    csvs = {"alpha": _csv(results), "beta": _csv(results, "beta", CLAIMS[:2])}
    out = results / "claims_overview.html"
    cli_main(["report-index", "--results", str(results), "--papers", "alpha", "--scale", "tiny",
              "--out", str(results / "report.md"), "--html", str(out)])  # fmt: skip
    root = Tree(out.read_text()).root
    table = root.all("table", "sortable")[0]
    header = [th.text() for th in table.all("th")]
    assert header == ["paper", "kind", *COUNT_COLUMNS, "total"]
    got = [[td.text() for td in tr.kids("td")] for tr in _rows(table)]
    want = []
    for paper, csv in csvs.items():  # beta came from an earlier run: a papers=[alpha] run keeps it
        counts = count_table(pd.read_csv(csv, keep_default_na=False))
        for kind, part in counts.groupby("kind", sort=False):
            want.append([paper, kind, *(str(int(part[c].sum())) for c in [*COUNT_COLUMNS, "total"])])
    assert got == want
    assert [r[1] for r in got if r[0] == "alpha"] == ["reproduction", "derived", "consistency"]
    assert "http" not in out.read_text() and "<a " not in out.read_text()  # nothing links out


def test_overview_refuses_a_damaged_claims_csv(tmp_path):
    csv = _csv(tmp_path / "tiny")
    csv.write_bytes(csv.read_bytes()[:-20])
    with pytest.raises(CorruptResult):
        write_overview(tmp_path / "tiny", ["alpha"], "tiny", tmp_path / "o.html")
