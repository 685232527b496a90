"""The HTML pages report.html shows for CSV table artefacts: Snakemake's report renders
HTML inline but a CSV or Markdown file only as a download link."""

from __future__ import annotations

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
    assert "nan" not in page.lower()  # an empty cell stays empty


def test_no_index_column():
    import pandas as pd

    page = table_html(pd.DataFrame({"a": ["x"]}), "t")
    assert "<th>a</th>" in page and "<th></th>" not in page
