"""The job-log scan the tiny-DAG tests use (``tests.papers.conftest.warnings_of_ours``) finds what it must."""

from __future__ import annotations

from tests.papers.conftest import warnings_of_ours


def test_the_scan_finds_our_warnings_and_flagged_figures_only(tmp_path):
    logs = tmp_path / "logs" / "artefacts"
    logs.mkdir(parents=True)
    (logs / "fig.log").write_text(
        "2026-11-27 11:47:55,016 seqmix.pipeline.stages INFO artefact figure1 done\n"
        "/x/src/seqmix/papers/b2s6/theory/closed_forms.py:119: UserWarning: The given NumPy array is not writable\n"
        "/x/site-packages/torch/nn/modules/module.py:12: UserWarning: a library's own warning\n"
        "2026-11-27 11:47:56,001 seqmix.report.plots WARNING figure figure5: legend over data\n"
    )
    (tmp_path / "logs" / "train").mkdir()
    (tmp_path / "logs" / "train" / "e1.c.log").write_text("/y/seqmix/training/loop.py:3: FutureWarning: soon\n")
    found = warnings_of_ours(tmp_path)
    assert len(found) == 3, found
    assert found[0].startswith("logs/artefacts/fig.log: /x/src/seqmix/papers/b2s6/theory/closed_forms.py:119")
    assert "figure figure5" in found[1] and "FutureWarning" in found[2]


def test_a_clean_log_gives_nothing(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("seqmix.pipeline.stages INFO trained\nWARNING about something else\n")
    assert warnings_of_ours(tmp_path) == []
