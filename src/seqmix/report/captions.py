"""Captions, categories and labels for Snakemake's report (standard library only: the Snakefile imports it
while the DAG is parsed).

The report lists its items per category (one per paper, by a short title) and subcategory (tables, figures,
analyses, claims), each item as a row of its labels (``report_labels``: the artefact's title, the file, the
rule that makes it) instead of its path."""

from __future__ import annotations

import re

# A category name is also a reStructuredText link target: Snakemake appends `.. _<name>: javascript:...` to
# every caption and to the front page, where a colon ends the name, and the front page links `<name>`_,
# where a backquote or '<' would break the link.
_NOT_IN_NAMES = re.compile(r"[:`|<>\\*]")
# Snakemake reads '{x}' in a category or label as its wildcard x (an error where the rule has none)
_NO_WILDCARDS = str.maketrans("{}", "()")
SHORT_TITLE_CHARS = 60  # a category in the report's side bar on one or two lines
ARTEFACT_TITLE_CHARS = 48  # a caption's lead ('Figure 3 left (Exp. I)') longer than this is a sentence
# the category of the scale's overview of every paper's verdict counts (report.smk; workflow.rst skips it
# in its list of papers)
OVERVIEW_CATEGORY = "Every paper"


def rst_text(text: str) -> str:
    """``text`` as literal reStructuredText, for the captions Snakemake's report renders: ``|x|`` would be a
    substitution reference, ``x_`` a link, ``*x*`` emphasis (each an error or a mangled caption)."""
    return re.sub(r"([\\|*`_])", r"\\\1", text)


def _name(text: str) -> str:
    return " ".join(_NOT_IN_NAMES.sub(" ", text.translate(_NO_WILDCARDS)).split()).strip("_ ")


def paper_category(paper: str, title: str) -> str:
    """A paper's category in the report: its ``title`` up to a subtitle (before ': ', or through a '?' that
    a subtitle follows), cut at a word after SHORT_TITLE_CHARS, then the paper's id in parentheses unless the
    title names it; e.g. 'How Many Heads Make an SSM? (heads)', 'Sessa'."""
    short = re.split(r":\s|(?<=\?)\s", title.strip(), maxsplit=1)[0]
    if len(short) > SHORT_TITLE_CHARS:
        short = short[:SHORT_TITLE_CHARS].rsplit(" ", 1)[0] + " ..."
    short = _name(short)
    return short if paper.lower() in short.lower() else _name(f"{short} ({paper})")


def paper_categories(titles: dict[str, str]) -> dict[str, str]:
    """{paper: category} of ``titles`` ({paper: title}); a ValueError where two papers (or a paper and the
    overview) would share one, compared ignoring case as reStructuredText link targets are."""
    found = {paper: paper_category(paper, title) for paper, title in titles.items()}
    by_name: dict[str, list[str]] = {OVERVIEW_CATEGORY.lower(): ["(the overview)"]}
    for paper, name in found.items():
        by_name.setdefault(name.lower(), []).append(paper)
    shared = {name: papers for name, papers in by_name.items() if len(papers) > 1}
    if shared:
        raise ValueError(f"papers whose titles give the same report category (change a title): {shared}")
    return found


def artefact_title(name: str, decl: dict) -> str:
    """An artefact's title as the report lists it: the lead of its caption (the text before the first ': ',
    e.g. 'Figure 3 left (Exp. I)') when it is a title's length, else its config name in words ('table1' ->
    'Table 1', 'theory_checks' -> 'Theory checks')."""
    lead = decl["caption"].split(": ", 1)[0].strip() if ": " in decl["caption"] else ""
    if lead and len(lead) <= ARTEFACT_TITLE_CHARS:
        return lead
    words = re.sub(r"^(table|figure)(\d)", r"\1 \2", name).replace("_", " ")
    return words[:1].upper() + words[1:]


def report_labels(title: str, file: str, rule: str) -> dict[str, str]:
    """The labels of one report item: the columns of its row in its subcategory's list.

    Three labels, two of which differ between any two items of a subcategory: with two labels, a subcategory
    of exactly two items would show its second label as a two-valued toggle (Snakemake's report does so for a
    label with two values that each label half the items) and one of the two rows would open nothing; it
    offers a toggle only when exactly one label qualifies. Braces become parentheses (not wildcards)."""
    return {k: v.translate(_NO_WILDCARDS) for k, v in {"artefact": title, "file": file, "rule": rule}.items()}
