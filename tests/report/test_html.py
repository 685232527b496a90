"""The HTML pages report.html shows for CSV table artefacts: Snakemake's report renders
HTML inline but a CSV or Markdown file only as a download link."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from seqmix.report.html import table_html, write_table_html


def test_every_row_and_cell_as_written_and_escaped(tmp_path):
    csv = tmp_path / "claims.csv"
    csv.write_text('id,paper_value,verdict\nc1,0.910,holds\nc2,,"a <b> & ""c"""\n')
    out = tmp_path / "report" / "claims.html"
    write_table_html(csv, out, "heads: claims <tiny>")
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h3>heads: claims &lt;tiny&gt;</h3>" in page
    assert page.count("</tr>") == 3  # header + two rows
    assert "<td>0.910</td>" in page  # display strings stay as written (not parsed as 0.91)
    assert 'a &lt;b&gt; &amp; "c"' in page and "<b>" not in page
    assert "nan" not in page.split("<script>")[0].lower()  # an empty cell stays empty (the script has isNaN)


def test_no_index_column():
    import pandas as pd

    page = table_html(pd.DataFrame({"a": ["x"]}), "t")
    assert "<th>a</th>" in page and "<th></th>" not in page


def test_the_table_sorts_with_the_script_of_the_claims_pages():
    """Guards (issue 26): the artefact tables did not sort while the claims pages did; one script serves both."""
    import pandas as pd

    from seqmix.report import sortable
    from seqmix.report.claims_page import claims_page

    page = table_html(pd.DataFrame({"a": ["x"]}), "t")
    assert '<table class="dataframe sortable">' in page and "<thead>" in page and "<tbody>" in page
    claims = claims_page(pd.DataFrame({"id": ["c1"], "kind": ["derived"], "verdict": ["holds"]}), "p")
    for text in (page, claims):
        assert text.count("<script>") == 1 and sortable.script_tag() in text and sortable.STYLE in text


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium to run the script")
def test_clicking_a_header_sorts_the_rows_numbers_before_words(tmp_path):
    import pandas as pd

    df = pd.DataFrame({"model": ["b", "a", "c", "d"], "acc": ["0.9 ± 0.1", "10", "n/a", "2"]})
    probe = (  # click 'acc' once (ascending), record the models in row order
        '<script>var t=document.querySelector("table.sortable");t.querySelectorAll("thead th")[1].click();'
        'document.body.setAttribute("data-order",Array.prototype.map.call(t.tBodies[0].rows,function(r)'
        "{return r.cells[0].textContent}).join(','));</script></body>"
    )
    path = tmp_path / "probe.html"
    path.write_text(table_html(df, "t").replace("</body>", probe))
    r = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert 'data-order="b,d,a,c"' in r.stdout, r.stdout[-500:] + r.stderr[-500:]
