"""Click-to-sort for the HTML pages report.html shows (a table artefact's page, a paper's claims page, the
scale's overview): one script and its header style, inlined into each page because the report is read
offline (Snakemake embeds every page as a data URI; nothing may be fetched). A page opts a table in with
``class="sortable"`` and a ``<thead>``/``<tbody>``."""

from __future__ import annotations

SORTABLE_CLASS = "sortable"

# the header shows it can be clicked, and the arrow the order it sorts by
STYLE = (
    "table.sortable th{cursor:pointer}"
    "table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}"
    "table.sortable th[aria-sort=descending]::after{content:' \\25BC'}"
)

# Sorts a table's body rows by the clicked column: a cell's data-sort, else its text; numbers (a leading
# number, e.g. of '0.63 ± 0.01') numerically and before words; a second click reverses.
SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var key = function (tr) {
        var td = tr.children[col], s = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
        var n = parseFloat(s);
        return isNaN(n) ? [1, 0, s.trim()] : [0, n, s.trim()];
      };
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = x[0] - y[0] || x[1] - y[1] || x[2].localeCompare(y[2], undefined, {numeric: true});
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def script_tag() -> str:
    """The script as the last element of a page's body (it runs once the tables above it exist)."""
    return f"<script>{SCRIPT}</script>"
