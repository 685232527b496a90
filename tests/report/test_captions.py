"""Every artefact caption of every paper renders in Snakemake's report as the text it is: no docutils error
(``|x|`` was read as a substitution, six captions showed errors), no markup eaten. The caption checked is
the one the report shows at tiny scale (``shown_caption``: a figure's adds what the paper prints for it, the
seeds and the paper's data line)."""

from __future__ import annotations

import pytest
from docutils.core import publish_doctree
from docutils.nodes import problematic, system_message

from seqmix.config.figure_captions import shown_caption
from seqmix.config.loading import discover_papers, load_paper
from seqmix.report.captions import rst_text
from tests.conftest import ROOT

CONFIGS = {paper: load_paper(ROOT / "config" / "papers" / f"{paper}.yaml", "tiny") for paper in discover_papers(ROOT)}
CAPTIONS = [
    (paper, name, shown_caption(cfg, name, "tiny"))
    for paper, cfg in CONFIGS.items()
    for name in cfg.get("artefacts") or {}
]


def _render(text: str):
    import io

    return publish_doctree(
        text, settings_overrides={"report_level": 1, "halt_level": 5, "warning_stream": io.StringIO()}
    )


def _problems(tree) -> list:
    # warnings and errors, and the text docutils could not parse (|x| with no substitution of that name)
    return [m for m in tree.findall(system_message) if m["level"] >= 2] + list(tree.findall(problematic))


@pytest.mark.parametrize("paper,name,caption", CAPTIONS, ids=[f"{p}-{n}" for p, n, _ in CAPTIONS])
def test_caption_renders_as_written(paper, name, caption):
    tree = _render(rst_text(caption))
    assert not _problems(tree), f"{paper}/{name}: docutils errors"
    assert " ".join(tree.astext().split()) == " ".join(caption.split())


def test_markup_characters_are_kept_literally():
    text = "||dy/dx_0|| for *all* x_ in `T` \\ done"
    assert _render(rst_text(text)).astext() == text
    assert _problems(_render("the |x| of a"))  # unescaped, docutils does complain
