"""Every spec section cited in code or config resolves to a heading (or an underspecified-point row) of a
page under docs/specs/.

A citation is ``spec §N`` (also ``§N, §M`` lists and ``spec E3`` / ``spec U-II-1`` ids). In a paper's own
files (config/papers/<paper>.yaml, src/seqmix/papers/<paper>/, tests named after the paper) it refers to that
paper's spec; anywhere else it must name the paper: ``<paper> spec §N``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "docs" / "specs"
PAPERS = sorted(p.stem for p in SPECS.glob("*.md"))
CITE = re.compile(
    r"(?:\b(?P<paper>[a-z0-9]+) )?spec (?P<ids>(?:§ ?[0-9][0-9.]*[0-9]|§ ?[0-9]|E[0-9]+|U-[A-Z0-9-]+)"
    r"(?:, ?(?:§ ?[0-9][0-9.]*[0-9]|§ ?[0-9]|E[0-9]+|U-[A-Z0-9-]+))*)"
)
ONE_ID = re.compile(r"§ ?([0-9][0-9.]*[0-9]|[0-9])|(E[0-9]+)|(U-[A-Z0-9-]+)")
SCANNED = ("src", "config", "workflow", "tests", "benchmarks", "Snakefile", "README.md", "CONTRIBUTING.md")


def anchors(paper: str) -> set[str]:
    """Section numbers (``2.3.1``), experiment ids (``E3``) and underspecified-point ids of a spec page."""
    out: set[str] = set()
    for line in (SPECS / f"{paper}.md").read_text().splitlines():
        if m := re.match(r"#+\s+(?:§\s*)?([0-9]+(?:\.[0-9]+)*)[.\s]", line):
            out.add(m.group(1))
        if m := re.match(r"#+\s+(E[0-9]+)\b", line):
            out.add(m.group(1))
        if m := re.match(r"\|\s*(U-[A-Z0-9-]+)\s*\|", line):
            out.add(m.group(1))
    return out


def paper_of(path: Path) -> str | None:
    """The paper whose spec an unqualified citation in this file refers to."""
    rel = path.relative_to(ROOT).as_posix()
    for p in PAPERS:
        if rel in (f"config/papers/{p}.yaml",) or rel.startswith(f"src/seqmix/papers/{p}"):
            return p
        if rel.startswith("tests/") and re.search(rf"[_/]{p}[_./]", rel):
            return p
    return None


def citations() -> list[tuple[str, int, str, str | None]]:
    files: list[Path] = []
    for name in SCANNED:
        p = ROOT / name
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files += [f for f in p.rglob("*") if f.suffix in (".py", ".yaml", ".smk", ".md", ".rst")]
    out = []
    for f in files:
        if f == Path(__file__).resolve():
            continue
        for lineno, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for m in CITE.finditer(line):
                paper = m.group("paper") if m.group("paper") in PAPERS else paper_of(f)
                for one in ONE_ID.finditer(m.group("ids")):
                    out.append((f"{f.relative_to(ROOT)}:{lineno}", lineno, next(g for g in one.groups() if g), paper))
    return out


def test_specs_present():
    assert {"heads", "superposition", "sessa", "b2s6", "rotations"} <= set(PAPERS)
    assert "4.3" in anchors("heads") and "E10" in anchors("superposition") and "U-II-1" in anchors("heads")


def test_every_citation_resolves():
    found = citations()
    assert found, "no spec citations found: the pattern is broken"
    cache = {p: anchors(p) for p in PAPERS}
    bad = []
    for where, _, ident, paper in found:
        if paper is None:
            bad.append(f"{where}: 'spec {ident}' names no paper (write '<paper> spec ...' outside a paper's files)")
        elif ident not in cache[paper]:
            bad.append(f"{where}: {paper} spec has no section {ident} (docs/specs/{paper}.md)")
    assert not bad, "unresolved spec citations:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "text,expected",
    [("see spec §4.3 and", ["4.3"]), ("(heads spec §2.3.1, §4.2)", ["2.3.1", "4.2"]), ("spec E10, §4", ["E10", "4"])],
)
def test_pattern(text, expected):
    m = CITE.search(text)
    assert m and [next(g for g in o.groups() if g) for o in ONE_ID.finditer(m.group("ids"))] == expected
