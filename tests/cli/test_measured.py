"""``seqmix archive|claims-export``: a misspelt paper is named with the known ones and the closest, and a
results root that is not one scale's is refused before anything is written."""

from __future__ import annotations

import pytest

from seqmix.cli.main import main
from tests.conftest import ROOT


def test_archive_names_an_unknown_paper_with_a_suggestion(tmp_path):
    """Before: 'config/papers/hed.yaml: no such paper config (papers: config/papers/*.yaml)'."""
    (tmp_path / "cpu").mkdir()
    with pytest.raises(SystemExit, match=r"unknown paper 'haeds': no .*haeds\.yaml \(papers: b2s6, heads, .*did you"):
        main(["archive", "--results", str(tmp_path / "cpu"), "--paper", "haeds", "--root", str(ROOT)])
    assert not (ROOT / "docs" / "measured" / "haeds").exists()


def test_archive_refuses_a_results_root_that_is_no_scale(tmp_path):
    """The scale is the directory's name: `--results results` archived as scale 'results' before."""
    out = tmp_path / "archive"
    with pytest.raises(SystemExit, match=r"--results .*results: not one scale's results \(results/<scale>"):
        main(
            [
                "archive",
                "--results",
                str(tmp_path / "results"),
                "--paper",
                "heads",
                "--root",
                str(ROOT),
                "--out",
                str(out),
            ]
        )
    assert not out.exists()


def test_claims_export_names_a_directory_that_is_no_archive(tmp_path):
    with pytest.raises(SystemExit, match=r"archive\.json: not an archive \(make one with `python -m seqmix archive`\)"):
        main(["claims-export", "--archive", str(tmp_path), "--root", str(ROOT)])
