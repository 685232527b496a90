"""The claims engine on broken inputs: each case here passed as "holds" (or gave a number) on the engine
before issue 12, and must now be "invalid" or "not run" with the reason named.

- a NaN or Inf among the rows a check reads -> "invalid", the offending rows named;
- a member listed in ``where`` (a list of wanted values) with no rows -> "not run: missing <names>";
- fewer seeds than the claim needs (``seeds:``; by default every seed of the table) -> "not run: k of n seeds",
  and the row shows how many it had ("2/3");
- geomean of non-positive values, log of non-positive values, a zero denominator -> "invalid", not a number.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from seqmix.claims import engine as C
from seqmix.claims.checks import HOLDS, INVALID, NOT_RUN, ClaimResult
from seqmix.claims.render import write_claims
from seqmix.io import write_text


def write_table(results: Path, rows: list[dict], table: str = "exp1") -> None:
    path = results / table / "summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, pd.DataFrame(rows).to_csv(index=False), checksum=True)  # as collect writes it


def claim(ours: dict, check: dict, **extra) -> dict:
    return {
        "id": "c1",
        "source": "paper",
        "artefact": "Figure 1",
        "statement": "s",
        "reported": None,
        "ours": {"table": "exp1", "metric": "m", **ours},
        "check": check,
        "expected_at": ["cpu"],
        **extra,
    }


def rows(variant: str, x, values, seeds=None) -> list[dict]:
    seeds = list(range(len(values))) if seeds is None else seeds
    return [dict(variant=variant, T=x, seed=s, m=v) for s, v in zip(seeds, values)]


def verdict(tmp_path: Path, c: dict) -> ClaimResult:
    return C.evaluate_claim(c, tmp_path, "cpu")


# ----------------------------------------------------------------------------- NaN / Inf -> invalid

ORDERING = {"kind": "ordering", "order": [1, 2, 3], "direction": "decreasing"}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_ordering_with_a_non_finite_point_is_invalid(tmp_path, bad):
    """Guards: NaN comparisons are False, so an ordering with NaN 'held' (breaks were never found)."""
    write_table(tmp_path, rows("a", 1, [3.0, 3.0]) + rows("a", 2, [bad, 2.0]) + rows("a", 3, [1.0, 1.0]))
    res = verdict(
        tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}, "aggregate": "mean"}, ORDERING)
    )
    assert res.verdict == INVALID, res
    assert "T=2" in res.detail and "seed=0" in res.detail  # the offending row, named
    assert "non-finite" in res.detail


def test_all_nan_ordering_is_invalid(tmp_path):
    """Guards: an all-NaN series 'held' as monotone."""
    write_table(tmp_path, [dict(variant="a", T=x, seed=0, m=math.nan) for x in (1, 2, 3)])
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}, ORDERING))
    assert res.verdict == INVALID and all(f"T={x}" in res.detail for x in (1, 2, 3)), res.detail


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "within", "lo": 0, "hi": 10},
        {"kind": "threshold", "op": "<", "value": 10},
        {"kind": "threshold", "op": ">", "value": -10},
    ],
)
def test_scalar_with_a_nan_row_is_invalid_even_when_the_median_is_finite(tmp_path, check):
    """Guards: the median of [1, NaN, 2] skipped or hid the NaN seed; a NaN row is a broken run, not data."""
    write_table(tmp_path, rows("a", 1, [1.0, math.nan, 2.0]))
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, check))
    assert res.verdict == INVALID and "seed=1" in res.detail, res


def test_slope_with_an_inf_point_is_invalid(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [math.inf]) + rows("a", 3, [3.0]))
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}, {"kind": "slope", "lo": 0}))
    assert res.verdict == INVALID and "T=2" in res.detail, res


def test_ratio_denominator_with_nan_is_invalid(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("b", 1, [math.nan]))
    sel = {"where": {"variant": "a"}, "ratio_to": {"variant": "b"}}
    res = verdict(tmp_path, claim(sel, {"kind": "threshold", "op": "<", "value": 10}))
    assert res.verdict == INVALID and "variant=b" in res.detail, res


def test_slope_relative_to_a_nan_reference_is_invalid(tmp_path):
    write_table(tmp_path, [dict(variant="a", T=x, seed=0, m=float(x), rate=math.nan) for x in (1, 2, 3)])
    check = {"kind": "slope", "relative_to": {"metric": "rate"}, "lo": 0}
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}, check))
    assert res.verdict == INVALID and "rate" in res.detail, res


# ----------------------------------------------------------------------------- listed members missing -> not run


def test_slope_over_a_listed_member_with_no_rows_is_not_run(tmp_path):
    """Guards: a slope over T in [1, 2, 3] with T = 3 missing was fitted through the 2 remaining points."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [2.0]))
    sel = {"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}
    res = verdict(tmp_path, claim(sel, {"kind": "slope", "lo": 0.5, "hi": 1.5}))
    assert res.verdict == NOT_RUN and res.detail == "missing T=3", res


def test_aggregate_over_listed_variants_with_one_missing_is_not_run(tmp_path):
    """Guards: `aggregate: max` over variants [a, b, c] ran over whichever existed."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("b", 1, [2.0]))
    sel = {"where": {"variant": ["a", "b", "c"]}, "aggregate": "max"}
    res = verdict(tmp_path, claim(sel, {"kind": "threshold", "op": "<", "value": 10}))
    assert res.verdict == NOT_RUN and res.detail == "missing variant=c", res


def test_listed_member_missing_at_one_point_of_a_series_is_not_run(tmp_path):
    """A max over variants [a, b] at every T: b lacking at T = 2 is missing there, not a max over a alone."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("b", 1, [2.0]) + rows("a", 2, [1.0]))
    sel = {"over": "T", "where": {"variant": ["a", "b"], "T": [1, 2]}, "aggregate": "max"}
    res = verdict(tmp_path, claim(sel, {"kind": "slope"}))
    assert res.verdict == NOT_RUN and res.detail == "missing variant=b at T=2", res


def test_listed_members_all_present_still_hold(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [2.0]) + rows("a", 3, [3.0]) + rows("a", 4, [9.0]))
    sel = {"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}
    res = verdict(tmp_path, claim(sel, {"kind": "slope", "lo": 0.99, "hi": 1.01}))
    assert res.verdict == HOLDS, res


# ----------------------------------------------------------------------------- seeds


def test_default_needs_every_seed_of_the_table(tmp_path):
    """Guards: the mean over seeds was taken over whichever seeds existed (here 2 of the table's 3)."""
    write_table(tmp_path, rows("a", 1, [1.0, 1.0, 1.0]) + rows("b", 1, [1.0, 1.0]))
    res = verdict(tmp_path, claim({"where": {"variant": "b"}, "aggregate": "mean"}, {"kind": "within", "lo": 0}))
    assert res.verdict == NOT_RUN and res.detail == "2 of 3 seeds (missing seed 2)", res
    assert res.seeds == "2/3"
    res = verdict(tmp_path, claim({"where": {"variant": "a"}, "aggregate": "mean"}, {"kind": "within", "lo": 0}))
    assert res.verdict == HOLDS and res.seeds == "3/3"


def test_declared_seed_count(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0, 1.0]))
    check = {"kind": "within", "lo": 0}
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, check, seeds=3))
    assert res.verdict == NOT_RUN and res.detail == "2 of 3 seeds" and res.seeds == "2/3", res
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, check, seeds=2))
    assert res.verdict == HOLDS and res.seeds == "2/2", res


def test_declared_seed_list_restricts_and_requires(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0, 5.0, 100.0], seeds=[42, 43, 44]))
    sel = {"where": {"variant": "a"}, "aggregate": "max"}
    res = verdict(tmp_path, claim(sel, {"kind": "within", "hi": 10}, seeds=[42, 43]))
    assert res.verdict == HOLDS and res.ours == 5.0 and res.seeds == "2/2", res  # seed 44 is not read
    res = verdict(tmp_path, claim(sel, {"kind": "within", "hi": 10}, seeds=[42, 45]))
    assert res.verdict == NOT_RUN and res.detail == "1 of 2 seeds (missing seed 45)", res


def test_seed_count_per_point_of_a_series_shows_the_worst_point(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0, 1.0, 1.0]) + rows("a", 2, [2.0, 2.0]) + rows("a", 3, [3.0, 3.0, 3.0]))
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}, {"kind": "slope"}))
    assert res.verdict == NOT_RUN and res.detail == "2 of 3 seeds at T=2 (missing seed 2)" and res.seeds == "2/3"


def test_seedless_tables_and_pinned_seeds(tmp_path):
    """No seed column: no requirement ('—'). A `where` that pins the seed needs that seed only."""
    write_table(tmp_path, [{"quantity": "q", "value": 1.0}], table="theory")
    c = claim({}, {"kind": "within", "lo": 0})
    c["ours"] = {"table": "theory", "metric": "value", "where": {"quantity": "q"}}
    res = verdict(tmp_path, c)
    assert res.verdict == HOLDS and res.seeds == "—"
    write_table(tmp_path, rows("a", 1, [1.0, 1.0, 1.0]))
    res = verdict(tmp_path, claim({"where": {"variant": "a", "seed": 0}}, {"kind": "within", "lo": 0}))
    assert res.verdict == HOLDS and res.seeds == "1/1", res
    c = claim({}, {"kind": "within", "lo": 0}, seeds=2)
    c["ours"] = {"table": "theory", "metric": "value"}
    res = verdict(tmp_path, c)
    assert res.verdict == NOT_RUN and "no seed column" in res.detail


def test_seeds_column_in_claims_csv(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0, 1.0]))
    res = [verdict(tmp_path, claim({"where": {"variant": "a"}}, {"kind": "within", "lo": 0}, seeds=3))]
    write_claims(res, tmp_path / "c.md", tmp_path / "c.csv", "p", "cpu")
    df = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert df["seeds"].tolist() == ["2/3"] and df["verdict"].tolist() == [NOT_RUN]
    assert "**not run**: 2 of 3 seeds" in (tmp_path / "c.md").read_text()


# ----------------------------------------------------------------------------- invalid aggregations


def test_geomean_of_non_positive_values_is_invalid(tmp_path):
    """Guards: geomean clipped values <= 0 to 1e-300, so a zero became a tiny positive number."""
    write_table(tmp_path, rows("a", 1, [4.0, 0.0, 1.0]))
    res = verdict(tmp_path, claim({"where": {"variant": "a"}, "aggregate": "geomean"}, {"kind": "within", "lo": 0}))
    assert res.verdict == INVALID and res.detail.startswith("geomean of non-positive values"), res
    assert "seed=1" in res.detail


def test_log_of_non_positive_values_in_a_slope_is_invalid(tmp_path):
    """Guards: logy clipped a zero to 1e-300 (log10 = -300), giving a slope of -300 that could hold."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [0.0]))
    res = verdict(
        tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2]}}, {"kind": "slope", "logy": True})
    )
    assert res.verdict == INVALID and "log of non-positive" in res.detail and "T=2" in res.detail, res


def test_ratio_to_zero_denominator_is_invalid(tmp_path):
    """Guards: a zero denominator gave inf, which passes any '>' threshold."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("b", 1, [0.0]))
    sel = {"where": {"variant": "a"}, "ratio_to": {"variant": "b"}}
    res = verdict(tmp_path, claim(sel, {"kind": "threshold", "op": ">", "value": 1}))
    assert res.verdict == INVALID and res.detail.startswith("division by zero"), res


def test_ratio_to_zero_denominator_in_a_series_names_the_point(tmp_path):
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [1.0]) + rows("b", 1, [2.0]) + rows("b", 2, [0.0]))
    sel = {"over": "T", "where": {"variant": "a", "T": [1, 2]}, "ratio_to": {"variant": "b"}, "reduce": "max"}
    res = verdict(tmp_path, claim(sel, {"kind": "threshold", "op": ">", "value": 1}))
    assert res.verdict == INVALID and res.detail == "division by zero at T=2", res


def test_slope_relative_to_zero_is_invalid(tmp_path):
    write_table(tmp_path, [dict(variant="a", T=x, seed=0, m=float(x), rate=0.0) for x in (1, 2, 3)])
    check = {"kind": "slope", "relative_to": {"metric": "rate"}, "lo": 0}
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2, 3]}}, check))
    assert res.verdict == INVALID and "division by zero" in res.detail, res


def test_invalid_wins_over_not_expected(tmp_path):
    """A broken input is reported whatever the scale: 'not expected' must not hide it."""
    write_table(tmp_path, rows("a", 1, [math.nan]))
    res = C.evaluate_claim(claim({"where": {"variant": "a"}}, {"kind": "within", "lo": 0}), tmp_path, "tiny")
    assert res.verdict == INVALID


# ----------------------------------------------------------------------------- corrupt summaries


def test_truncated_summary_with_a_checksum_stops_the_claims_step(tmp_path):
    """A summary.csv that no longer matches its sha256 sidecar (cut mid-row by a full disk or a kill) is refused
    with its path, never read as if it held fewer rows (before, a truncated summary was used silently)."""
    from seqmix.io import write_text
    from seqmix.results import CorruptResult

    path = tmp_path / "exp1" / "summary.csv"
    path.parent.mkdir(parents=True)
    write_text(path, pd.DataFrame(rows("a", 1, [1.0, 2.0, 3.0])).to_csv(index=False), checksum=True)
    path.write_text(path.read_text()[:-9])
    with pytest.raises(CorruptResult, match="summary.csv"):
        verdict(tmp_path, claim({"where": {"variant": "a"}}, {"kind": "threshold", "op": ">", "value": 0}))


# ----------------------------------------------------------------------------- issue 25: engine holes


def test_a_text_cell_is_invalid_not_a_crash(tmp_path):
    """Guards: a text cell in the metric raised ValueError and stopped the whole claims step."""
    write_table(tmp_path, rows("a", 1, [1.0, 2.0]) + [dict(variant="a", T=1, seed=2, m="oops")])
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, {"kind": "within", "lo": 0}))
    assert res.verdict == INVALID and "non-numeric m at" in res.detail and "'oops'" in res.detail, res


def test_an_empty_summary_is_invalid_not_a_crash(tmp_path):
    """Guards: a 0-byte summary.csv raised pandas' EmptyDataError and stopped the claims step."""
    path = tmp_path / "exp1" / "summary.csv"
    path.parent.mkdir()
    path.write_text("")
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, {"kind": "within", "lo": 0}))
    assert res.verdict == INVALID and "is empty (0 bytes)" in res.detail, res


def test_duplicate_rows_for_one_member_and_seed_are_invalid(tmp_path):
    """Guards: two rows for (variant a, seed 0) were pooled: the same table held with the mean, differed with
    the median."""
    write_table(tmp_path, rows("a", 1, [1.0, 1.0, 1.0]) + rows("a", 1, [10.0], seeds=[0]))
    for how in ("mean", "median"):
        res = verdict(tmp_path, claim({"where": {"variant": "a"}, "aggregate": how}, {"kind": "within", "hi": 2}))
        assert res.verdict == INVALID and "variant=a, T=1, seed=0" in res.detail, (how, res)


def test_rows_told_apart_by_another_key_are_pooled_not_duplicates(tmp_path):
    """A layer (or a draw, a length) column names what the claim pools: not a duplicate."""
    write_table(tmp_path, [dict(variant="a", seed=s, layer=l, m=1.0) for s in (0, 1) for l in (0, 1)])
    res = verdict(tmp_path, claim({"where": {"variant": "a"}}, {"kind": "within", "lo": 0}))
    assert res.verdict == HOLDS, res


def test_a_blank_seed_counts_as_missing(tmp_path):
    """Guards: a member whose rows had no seed bypassed the seed count (it needed none)."""
    write_table(tmp_path, rows("a", 1, [1.0, 1.0]) + [dict(variant="b", T=1, seed=None, m=1.0)])
    res = verdict(tmp_path, claim({"where": {"variant": "b"}}, {"kind": "within", "lo": 0}))
    assert res.verdict == NOT_RUN and res.detail.startswith("rows without a seed at variant=b"), res
    # a deterministic member (a teacher) is read by naming its seedless rows: seed: null
    res = verdict(tmp_path, claim({"where": {"variant": "b", "seed": None}}, {"kind": "within", "lo": 0}))
    assert res.verdict == HOLDS and res.seeds == "—", res


def test_every_member_of_a_scalar_aggregate_needs_its_seeds(tmp_path):
    """Guards: a max over variants [a, b] counted the seeds of the union, so b with 1 of 3 seeds passed."""
    write_table(tmp_path, rows("a", 1, [1.0, 1.0, 1.0]) + rows("b", 1, [2.0]))
    sel = {"where": {"variant": ["a", "b"]}, "aggregate": "max"}
    res = verdict(tmp_path, claim(sel, {"kind": "threshold", "op": "<", "value": 10}))
    assert res.verdict == NOT_RUN and res.detail == "1 of 3 seeds at variant=b (missing seed 1, 2)", res
    assert res.seeds == "1/3"


def test_a_where_value_is_typed_against_its_column(tmp_path):
    """Guards: where T: "1" (a string, e.g. from a family placeholder inside text) against an int column read
    'not run: no rows'."""
    write_table(tmp_path, rows("a", 1, [1.0, 1.0]) + rows("a", 2, [5.0, 5.0]))
    res = verdict(tmp_path, claim({"where": {"variant": "a", "T": "1"}}, {"kind": "within", "hi": 2}))
    assert res.verdict == HOLDS and res.ours == 1.0, res
    res = verdict(tmp_path, claim({"where": {"variant": "a", "T": "one"}}, {"kind": "within", "hi": 2}))
    assert res.verdict == INVALID and "column 'T' holds numbers" in res.detail, res


def test_a_series_without_its_points_in_where_is_not_run(tmp_path):
    """Guards: a series over T with no list of points fitted whatever points existed (a missing T, or an extra
    one, passed unseen); the points found are named."""
    write_table(tmp_path, rows("a", 1, [1.0]) + rows("a", 2, [2.0]) + rows("a", 4, [4.0]))
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a"}}, {"kind": "slope", "lo": 0.9, "hi": 1.1}))
    assert res.verdict == NOT_RUN and res.detail.endswith("no list of its points in where (found T = 1, 2, 4)")
    res = verdict(tmp_path, claim({"over": "T", "where": {"variant": "a", "T": [1, 2]}}, {"kind": "slope", "lo": 0.9}))
    assert res.verdict == HOLDS, res  # the listed points only: T = 4 is not read
