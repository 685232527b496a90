"""The claims engine fed synthetic summary tables: every verdict for every check kind, exact values.

Each case below is one check kind with a selection, a "good" table (the check holds), a "bad" table (it
differs, usually just past a boundary) and a "missing" table (the results needed are absent, each case
exercising a different way of being absent). Verdicts:
- holds / differs: the current scale is in ``expected_at``;
- not expected at this scale: the same good or bad data at a scale ``expected_at`` omits;
- not run: the results are missing.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seqmix.claims import engine as C
from seqmix.claims import render as R
from seqmix.claims.checks import (
    CONSISTENCY,
    DIFFERS,
    HOLDS,
    INVALID,
    NOT_EXPECTED,
    NOT_RUN,
    ClaimResult,
    InvalidInput,
    MissingResults,
    run_check,
)
from seqmix.claims.select import _aggregate, read_ours
from seqmix.io import write_text

SCALE = "cpu"  # in every case's expected_at
OTHER_SCALE = "tiny"  # in none


def write_table(results: Path, table: str, rows: list[dict]) -> Path:
    path = results / table / "summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, pd.DataFrame(rows).to_csv(index=False), checksum=True)  # as collect writes it
    return path


def make_claim(ours: dict, check: dict, reported=None, expected_at=("cpu", "paper"), cid="c1", **extra) -> dict:
    return {
        **extra,
        "id": cid,
        "source": "paper",
        "artefact": "Figure 3 left",
        "statement": "a statement",
        "reported": reported,
        "ours": ours,
        "check": check,
        "expected_at": list(expected_at),
    }


def seeds(variant, sweep_value, values, metric="m", **extra):
    return [
        dict(variant=variant, sweep_value=sweep_value, seed=s, **{metric: v}, **extra) for s, v in enumerate(values)
    ]


def series(variant, points: dict, metric="m"):
    """points: {x: [values over seeds]} -> rows."""
    rows = []
    for x, vals in points.items():
        rows += seeds(variant, x, vals, metric)
    return rows


# distractor rows that a correct `where` filter must drop (they would change every verdict)
NOISE = seeds("k8", 2, [50.0, 60.0, 70.0]) + seeds("k4", 9, [-5.0, -5.0, -5.0])

# kind -> dict(ours, check, reported, good, bad, missing, good_value, bad_value, missing_value, missing_detail)
# `missing` is a list of rows (written) or None (no summary.csv at all).
CASES = {
    "within_lo_hi": dict(
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4", "sweep_value": 2}},
        check={"kind": "within", "lo": 0.95, "hi": 1.10},
        good=seeds("k4", 2, [0.97, 1.02, 1.30]) + NOISE,  # median 1.02 (the 1.30 seed alone would differ)
        bad=seeds("k4", 2, [0.80, 0.90, 1.05]) + NOISE,  # median 0.90 < 0.95
        good_value=1.02,
        bad_value=0.90,
        missing=NOISE,
        missing_value=None,
        missing_detail="no rows",
        good_detail="1.02 in [0.95, 1.1]",
        bad_detail="0.9 in [0.95, 1.1]",
    ),
    "within_target_rtol_atol": dict(
        # tol = atol + rtol |target| = 0.1 + 0.05 * 10 = 0.6: neither tolerance alone admits 10.55
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4", "sweep_value": 2}},
        check={"kind": "within", "target": 10.0, "rtol": 0.05, "atol": 0.1},
        reported=99.0,  # an explicit target wins over the reported value
        good=seeds("k4", 2, [10.55, 10.55, 10.55]) + NOISE,
        bad=seeds("k4", 2, [10.60, 10.65, 10.70]) + NOISE,
        good_value=10.55,
        bad_value=10.65,
        missing=None,
        missing_value=None,
        missing_detail="summary.csv does not exist",
        good_detail="|10.55 - 10| <= 0.6",
        bad_detail="|10.65 - 10| <= 0.6",
    ),
    "within_reported": dict(
        # no lo/hi/target: the target is the numeric reported value (the mean of [mean, std])
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4", "sweep_value": 2}},
        check={"kind": "within", "rtol": 0.1},
        reported=[2.0, 0.3],
        good=seeds("k4", 2, [2.15, 2.15, 2.15]) + NOISE,  # every seed of the table (NOISE has 3)
        bad=seeds("k4", 2, [2.25, 2.25, 2.25]) + NOISE,
        good_value=2.15,
        bad_value=2.25,
        missing=[{"variant": "k4", "sweep_value": 2, "seed": 0, "other_metric": 2.0}],
        missing_value=None,
        missing_detail="metric 'm' not in exp1/summary.csv",
        good_detail="|2.15 - 2| <= 0.2",
        bad_detail="|2.25 - 2| <= 0.2",
    ),
    "ordering_increasing": dict(
        ours={
            "table": "exp1",
            "metric": "m",
            "over": "sweep_value",
            "where": {"variant": "k8", "sweep_value": [1, 2, 3]},
        },
        check={"kind": "ordering", "order": [1, 2, 3], "direction": "increasing", "rtol": 0.05},
        # a 3% dip (median 0.97 after 1.0) is within the 5% slack; a 6% dip is not
        good=series("k8", {1: [1.0, 1.0, 5.0], 2: [0.97, 0.5, 0.99], 3: [2.0, 1.0, 3.0]}) + seeds("k4", 2, [0.0]),
        bad=series("k8", {1: [1.0], 2: [0.94], 3: [2.0]}) + seeds("k4", 2, [0.0]),
        good_value=[(1, 1.0), (2, 0.97), (3, 2.0)],
        bad_value=[(1, 1.0), (2, 0.94), (3, 2.0)],
        missing=series("k8", {1: [1.0], 2: [1.5]}),
        missing_value=None,
        missing_detail="missing sweep_value=3",
        good_detail="monotone over [1.0, 0.97, 2.0]",
        bad_detail="breaks at [(1, 2)] over [1.0, 0.94, 2.0]",
    ),
    "ordering_decreasing": dict(
        ours={
            "table": "exp1",
            "metric": "m",
            "over": "sweep_value",
            "where": {"variant": "k8", "sweep_value": [1, 2, 3]},
        },
        check={"kind": "ordering", "order": [3, 2, 1], "direction": "decreasing", "rtol": 0.02},
        # the order is given explicitly (3, 2, 1), not the sorted x: values must fall along it
        good=series("k8", {3: [1.0], 2: [1.01], 1: [0.5]}),  # a 1% rise is within the 2% slack
        bad=series("k8", {3: [1.0], 2: [1.03], 1: [0.5]}),  # a 3% rise is not
        good_value=[(1, 0.5), (2, 1.01), (3, 1.0)],
        bad_value=[(1, 0.5), (2, 1.03), (3, 1.0)],
        missing=series("k4", {3: [1.0], 2: [0.5], 1: [0.1]}),
        missing_value=None,
        missing_detail="no rows",
        good_detail="monotone over [1.0, 1.01, 0.5]",
        bad_detail="breaks at [(3, 2)] over [1.0, 1.03, 0.5]",
    ),
    "slope": dict(
        ours={
            "table": "exp1",
            "metric": "m",
            "over": "sweep_value",
            "where": {"variant": "k8", "sweep_value": [1, 2, 3, 4]},
        },
        check={"kind": "slope", "lo": 1.5, "hi": 2.5},
        good=series("k8", {x: [2.0 * x + 1.0] for x in (1, 2, 3, 4)}),  # slope 2
        bad=series("k8", {x: [3.0 * x] for x in (1, 2, 3, 4)}),  # slope 3
        good_value=[(x, 2.0 * x + 1.0) for x in (1, 2, 3, 4)],
        bad_value=[(x, 3.0 * x) for x in (1, 2, 3, 4)],
        missing=series("k8", {1: [1.0, 2.0]}),
        missing_value=None,
        missing_detail="missing sweep_value=2, sweep_value=3, sweep_value=4",
        good_detail="slope 2 in [1.5, 2.5]",
        bad_detail="slope 3 in [1.5, 2.5]",
    ),
    "slope_logy": dict(
        ours={
            "table": "exp1",
            "metric": "m",
            "over": "sweep_value",
            "where": {"variant": "k8", "sweep_value": [1, 2, 3, 4]},
        },
        check={"kind": "slope", "logy": True, "lo": -1.1, "hi": -0.9},
        # log10 slope -1 (the linear slope of these values is about -0.03: it would differ without logy)
        good=series("k8", {x: [10.0**-x] for x in (1, 2, 3, 4)}),
        bad=series("k8", {x: [10.0 ** (-2 * x)] for x in (1, 2, 3, 4)}),  # log10 slope -2
        good_value=[(x, 10.0**-x) for x in (1, 2, 3, 4)],
        bad_value=[(x, 10.0 ** (-2 * x)) for x in (1, 2, 3, 4)],
        missing=None,
        missing_value=None,
        missing_detail="does not exist",
        good_detail="slope -1 in [-1.1, -0.9]",
        bad_detail="slope -2 in [-1.1, -0.9]",
    ),
    "threshold_lt": dict(
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4"}},
        check={"kind": "threshold", "op": "<", "value": 0.5},
        good=seeds("k4", 1, [0.25]),
        bad=seeds("k4", 1, [0.5]),  # strict: equality differs
        good_value=0.25,
        bad_value=0.5,
        missing=[{"seed": 0, "m": 0.25}],
        missing_value=None,
        missing_detail="column 'variant' not in results",
        good_detail="0.25 < 0.5",
        bad_detail="0.5 < 0.5",
    ),
    "threshold_le": dict(
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4"}},
        check={"kind": "threshold", "op": "<=", "value": 0.5},
        good=seeds("k4", 1, [0.5]),
        bad=seeds("k4", 1, [0.75]),  # equality holds
        good_value=0.5,
        bad_value=0.75,
        missing=NOISE[:0] + seeds("k2", 1, [0.0]),
        missing_value=None,
        missing_detail="no rows",
        good_detail="0.5 <= 0.5",
        bad_detail="0.75 <= 0.5",
    ),
    "threshold_gt": dict(
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4"}},
        check={"kind": "threshold", "op": ">", "value": 0.5},
        good=seeds("k4", 1, [0.75]),
        bad=seeds("k4", 1, [0.5]),  # strict: equality differs
        good_value=0.75,
        bad_value=0.5,
        missing=None,
        missing_value=None,
        missing_detail="does not exist",
        good_detail="0.75 > 0.5",
        bad_detail="0.5 > 0.5",
    ),
    "threshold_ge": dict(
        ours={"table": "exp1", "metric": "m", "where": {"variant": "k4"}},
        check={"kind": "threshold", "op": ">=", "value": 0.5},
        good=seeds("k4", 1, [0.5]),
        bad=seeds("k4", 1, [0.25]),  # equality holds
        good_value=0.5,
        bad_value=0.25,
        missing=seeds("k4", 1, [0.5], metric="other"),
        missing_value=None,
        missing_detail="metric 'm' not in",
        good_detail="0.5 >= 0.5",
        bad_detail="0.25 >= 0.5",
    ),
    "ratio_to": dict(
        # MSE(H=4) / MSE(H=3), each the median over seeds
        ours={
            "table": "exp1",
            "metric": "m",
            "where": {"variant": "k4", "sweep_value": 4},
            "ratio_to": {"variant": "k4", "sweep_value": 3},
        },
        check={"kind": "threshold", "op": "<", "value": 1e-3},
        good=seeds("k4", 4, [1e-6, 2e-6, 3e-6]) + seeds("k4", 3, [1.0, 2.0, 4.0]) + NOISE,  # 1e-6
        bad=seeds("k4", 4, [0.01, 0.01, 0.01]) + seeds("k4", 3, [1.0, 2.0, 4.0]) + NOISE,  # 5e-3
        good_value=1e-6,
        bad_value=5e-3,
        missing=seeds("k4", 4, [1e-6, 1e-6, 1e-6]) + NOISE,  # no denominator rows
        missing_value=None,
        missing_detail="no rows",
        good_detail="1e-06 < 0.001",
        bad_detail="0.005 < 0.001",
    ),
}


def decay(variant, xs=(1, 2, 3, 4), scale=1.0, **extra):
    """One row per x with m = scale e^(-x/2) and extra columns (e.g. a reference rate)."""
    return [dict(variant=variant, sweep_value=x, seed=0, m=scale * math.exp(-0.5 * x), **extra) for x in xs]


# the slope options for fits (logx, natural logs, R^2, a reference rate) and series reduced to one value
CASES.update(
    {
        "slope_loglog": dict(
            ours={
                "table": "exp1",
                "metric": "m",
                "over": "sweep_value",
                "where": {"variant": "k8", "sweep_value": [1, 10, 100, 1000]},
            },
            check={"kind": "slope", "logy": True, "logx": True, "lo": -1.1, "hi": -0.9},
            # a power law 3 / x: log-log slope -1 (its semi-log slope would be far from it)
            good=series("k8", {x: [3.0 / x] for x in (1, 10, 100, 1000)}),
            bad=series("k8", {x: [3.0 / x**2] for x in (1, 10, 100, 1000)}),
            good_value=[(x, 3.0 / x) for x in (1, 10, 100, 1000)],
            bad_value=[(x, 3.0 / x**2) for x in (1, 10, 100, 1000)],
            missing=series("k8", {10: [0.3]}),
            missing_value=None,
            missing_detail="missing sweep_value=1, sweep_value=100, sweep_value=1000",
            good_detail="slope -1 in [-1.1, -0.9]",
            bad_detail="slope -2 in [-1.1, -0.9]",
        ),
        "slope_min_r2": dict(
            ours={
                "table": "exp1",
                "metric": "m",
                "over": "sweep_value",
                "where": {"variant": "k8", "sweep_value": [1, 2, 3, 4]},
            },
            check={"kind": "slope", "logy": True, "log_base": "e", "hi": 0, "min_r2": 0.99},
            # an exact exponential e^(-x/2) (R^2 = 1) against a zig-zag whose slope is negative too but whose
            # log-linear fit is poor: only R^2 tells them apart
            good=decay("k8"),
            bad=series("k8", {1: [1.0], 2: [0.1], 3: [1.0], 4: [0.01]}),
            good_value=[(x, math.exp(-0.5 * x)) for x in (1, 2, 3, 4)],
            bad_value=[(1, 1.0), (2, 0.1), (3, 1.0), (4, 0.01)],
            missing=None,
            missing_value=None,
            missing_detail="does not exist",
            good_detail="slope -0.5 in [-inf, 0], R^2 1 >= 0.99",
            bad_detail="slope -1.151 in [-inf, 0], R^2 0.454545 >= 0.99",
        ),
        "slope_relative_to": dict(
            # the fitted rate per step over the mean of a reference column of the same rows (ln rho(A))
            ours={
                "table": "exp1",
                "metric": "m",
                "over": "sweep_value",
                "where": {"variant": "k8", "sweep_value": [1, 2, 3, 4]},
            },
            check={
                "kind": "slope",
                "logy": True,
                "log_base": "e",
                "relative_to": {"metric": "rate", "aggregate": "mean"},
                "lo": 0.95,
                "hi": 1.05,
            },
            good=decay("k8", rate=-0.5) + decay("k4", scale=7.0, rate=-9.0),  # k4 rows must not count
            bad=decay("k8", rate=-0.4) + decay("k4", rate=-0.5),
            good_value=[(x, math.exp(-0.5 * x)) for x in (1, 2, 3, 4)],
            bad_value=[(x, math.exp(-0.5 * x)) for x in (1, 2, 3, 4)],
            missing=decay("k8"),
            missing_value=[(x, math.exp(-0.5 * x)) for x in (1, 2, 3, 4)],
            missing_detail="metric 'rate' not in exp1/summary.csv",
            good_detail="slope -0.5 / -0.5 = 1 in [0.95, 1.05]",
            bad_detail="slope -0.5 / -0.4 = 1.25 in [0.95, 1.05]",
        ),
        "series_ratio_reduce_min": dict(
            # the smallest pointwise ratio of two series (e.g. attention / SSM over T), as one value
            ours={
                "table": "exp1",
                "metric": "m",
                "over": "sweep_value",
                "where": {"variant": "k4", "sweep_value": [1, 2]},
                "ratio_to": {"variant": "k2"},
                "reduce": "min",
            },
            check={"kind": "threshold", "op": ">", "value": 1},
            good=series("k4", {1: [4.0, 4.0, 100.0], 2: [3.0] * 3}) + series("k2", {1: [2.0] * 3, 2: [1.0] * 3}),
            bad=series("k4", {1: [4.0], 2: [1.0]}) + series("k2", {1: [2.0], 2: [2.0]}),  # ratios 2, 0.5
            good_value=2.0,
            bad_value=0.5,
            missing=series("k4", {1: [4.0], 2: [3.0]}) + series("k2", {1: [2.0]}),
            missing_value=None,
            missing_detail="ratio_to: no results for sweep_value = [2]",
            good_detail="2 > 1",
            bad_detail="0.5 > 1",
        ),
    }
)

VERDICT_IDS = {HOLDS: "holds", DIFFERS: "differs", NOT_EXPECTED: "not_expected", NOT_RUN: "not_run"}


def assert_ours(got, want):
    if want is None:
        assert got is None
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for (gx, gv), (wx, wv) in zip(got, want):
            assert gx == wx
            assert gv == pytest.approx(wv, rel=1e-12, abs=0)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=0)


@pytest.mark.parametrize("verdict", list(VERDICT_IDS), ids=list(VERDICT_IDS.values()))
@pytest.mark.parametrize("kind", list(CASES))
def test_every_verdict_for_every_check_kind(tmp_path, kind, verdict):
    case = CASES[kind]
    claim = make_claim(case["ours"], case["check"], case.get("reported"))
    scale = SCALE
    if verdict == HOLDS:
        rows, want_value, want_detail = case["good"], case["good_value"], case["good_detail"]
    elif verdict == DIFFERS:
        rows, want_value, want_detail = case["bad"], case["bad_value"], case["bad_detail"]
    elif verdict == NOT_EXPECTED:
        rows, want_value, want_detail = case["good"], case["good_value"], case["good_detail"] + " (would hold)"
        scale = OTHER_SCALE
    else:
        rows, want_value, want_detail = case["missing"], case["missing_value"], case["missing_detail"]
    if rows is not None:
        write_table(tmp_path, "exp1", rows)

    res = C.evaluate_claim(claim, tmp_path, scale)

    assert res.verdict == verdict
    assert_ours(res.ours, want_value)
    if verdict == NOT_RUN:
        assert want_detail in res.detail
    else:
        assert res.detail == want_detail
    assert res.id == "c1" and res.expected_at == ["cpu", "paper"]


@pytest.mark.parametrize("kind", list(CASES))
def test_not_expected_also_shows_a_differing_value(tmp_path, kind):
    """Outside expected_at the verdict stays 'not expected', and the detail says it would differ."""
    case = CASES[kind]
    write_table(tmp_path, "exp1", case["bad"])
    res = C.evaluate_claim(make_claim(case["ours"], case["check"], case.get("reported")), tmp_path, OTHER_SCALE)
    assert res.verdict == NOT_EXPECTED
    assert res.detail == case["bad_detail"] + " (would differ)"
    assert_ours(res.ours, case["bad_value"])


def test_not_run_wins_over_not_expected(tmp_path):
    """Missing results are 'not run' whatever the scale."""
    res = C.evaluate_claim(
        make_claim({"table": "exp1", "metric": "m"}, {"kind": "within", "lo": 0}), tmp_path, OTHER_SCALE
    )
    assert res.verdict == NOT_RUN and res.ours is None


# ----------------------------------------------------------------------------- run_check directly


def test_within_reported_scalar_and_atol_only():
    assert run_check({"kind": "within", "atol": 0.5}, 3.4, 3) == (True, "|3.4 - 3| <= 0.5")
    assert run_check({"kind": "within", "atol": 0.5}, 3.6, 3)[0] is False
    # rtol and atol default to 0: exact equality is needed
    assert run_check({"kind": "within"}, 2.0, 2.0)[0] is True
    assert run_check({"kind": "within"}, 2.0 + 1e-12, 2.0)[0] is False
    # target 0 with a 0 tolerance (the closed-form claims' 'atol: 0')
    assert run_check({"kind": "within", "target": 0.0, "atol": 0}, 0.0, None)[0] is True


def test_within_one_sided_bounds():
    assert run_check({"kind": "within", "lo": 1.0}, 1.0, None)[0] is True
    assert run_check({"kind": "within", "lo": 1.0}, 0.999, None)[0] is False
    assert run_check({"kind": "within", "hi": 1.0}, 1.0, None)[0] is True
    assert run_check({"kind": "within", "hi": 1.0}, 1.001, None)[0] is False
    # lo/hi take precedence over target and reported
    assert run_check({"kind": "within", "lo": 0, "hi": 1, "target": 5.0}, 0.5, 5.0)[0] is True


def test_within_without_any_target_is_an_error():
    with pytest.raises(ValueError, match="within needs lo/hi"):
        run_check({"kind": "within", "rtol": 0.1}, 1.0, "qualitative")


def test_unknown_check_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown check kind 'bogus'"):
        run_check({"kind": "bogus"}, 1.0, None)


def test_ordering_defaults_to_decreasing_without_slack():
    ours = [(1, 3.0), (2, 2.0), (3, 2.0)]  # ties are monotone
    assert run_check({"kind": "ordering", "order": [1, 2, 3]}, ours, None)[0] is True
    assert run_check({"kind": "ordering", "order": [1, 2, 3]}, [(1, 3.0), (2, 2.0), (3, 2.0000001)], None)[0] is False
    # increasing over the same data differs
    ok, detail = run_check({"kind": "ordering", "order": [1, 2, 3], "direction": "increasing"}, ours, None)
    assert not ok and detail == "breaks at [(1, 2)] over [3.0, 2.0, 2.0]"


def test_ordering_on_a_subset_of_the_series():
    """Only the listed points are ordered; other x values in the series are ignored."""
    ours = [(1, 5.0), (2, 4.0), (3, 100.0), (4, 1.0)]
    assert run_check({"kind": "ordering", "order": [1, 2, 4]}, ours, None)[0] is True
    assert run_check({"kind": "ordering", "order": [1, 2, 3]}, ours, None)[0] is False


def test_slope_without_bounds_and_with_zeros_under_logy():
    ok, detail = run_check({"kind": "slope"}, [(0, 1.0), (1, -2.0)], None)
    assert ok and detail == "slope -3 in [-inf, inf]"
    # a zero under logy is invalid (it was clamped to 1e-300: a slope of -300 that passed 'hi: -100')
    with pytest.raises(InvalidInput, match="log of non-positive values at T=1"):
        run_check({"kind": "slope", "logy": True, "hi": -100}, [(0, 1.0), (1, 0.0)], None, axis="T")


def test_threshold_nan_is_invalid():
    """A NaN value is not judged: it neither holds nor differs (every check kind)."""
    for op in ("<", "<=", ">", ">="):
        with pytest.raises(InvalidInput, match="non-finite"):
            run_check({"kind": "threshold", "op": op, "value": 0.5}, math.nan, None)
    with pytest.raises(InvalidInput, match="non-finite value at T=2"):
        run_check({"kind": "ordering", "order": [1, 2]}, [(1, 1.0), (2, math.nan)], None, axis="T")


def test_ratio_to_zero_denominator_is_invalid(tmp_path):
    write_table(tmp_path, "exp1", seeds("k4", 4, [1.0]) + seeds("k4", 3, [0.0]))
    sel = {"table": "exp1", "metric": "m", "where": {"sweep_value": 4}, "ratio_to": {"sweep_value": 3}}
    with pytest.raises(InvalidInput, match="division by zero"):
        read_ours(sel, tmp_path)
    res = C.evaluate_claim(make_claim(sel, {"kind": "threshold", "op": ">", "value": 1e-3}), tmp_path, SCALE)
    assert res.verdict == INVALID


def test_ratio_to_uses_its_own_filter_not_where(tmp_path):
    """The denominator's rows are selected by ratio_to alone (the where filter does not narrow them)."""
    write_table(tmp_path, "exp1", seeds("k4", 4, [6.0]) + seeds("k2", 3, [3.0]) + seeds("k4", 3, [100.0]))
    sel = {
        "table": "exp1",
        "metric": "m",
        "where": {"variant": "k4", "sweep_value": 4},
        "ratio_to": {"variant": "k2", "sweep_value": 3},
    }
    assert read_ours(sel, tmp_path) == 2.0


# ----------------------------------------------------------------------------- aggregates and where

AGG_VALUES = [1.0, 2.0, 4.0, 8.0, 100.0]
AGG_EXPECTED = {
    "median": 4.0,
    "mean": 23.0,
    "geomean": 6400.0**0.2,  # (1 * 2 * 4 * 8 * 100) ** (1/5)
    "min": 1.0,
    "max": 100.0,
}


@pytest.mark.parametrize("how", list(AGG_EXPECTED))
def test_aggregates(tmp_path, how):
    write_table(tmp_path, "exp1", seeds("k4", 1, AGG_VALUES) + seeds("k8", 1, [1e6, -1e6]))
    sel = {"table": "exp1", "metric": "m", "where": {"variant": "k4"}, "aggregate": how}
    assert read_ours(sel, tmp_path) == pytest.approx(AGG_EXPECTED[how], rel=1e-12)
    # and through a claim: exactly the aggregate, as a within check with a zero-width band around it (noise
    # none: the aggregate itself is under test here; a mean's default noise model is tested in test_noise.py)
    want = AGG_EXPECTED[how]
    exact = dict(noise="none")
    res = C.evaluate_claim(make_claim(sel, {"kind": "within", "target": want, "rtol": 1e-12}, **exact), tmp_path, SCALE)
    assert res.verdict == HOLDS
    check = {"kind": "within", "target": want * 1.01, "rtol": 1e-3}
    res = C.evaluate_claim(make_claim(sel, check, **exact), tmp_path, SCALE)
    assert res.verdict == DIFFERS


def test_default_aggregate_is_median_even_count(tmp_path):
    write_table(tmp_path, "exp1", seeds("k4", 1, [1.0, 2.0, 10.0, 20.0]))
    assert read_ours({"table": "exp1", "metric": "m"}, tmp_path) == 6.0


def test_aggregate_per_point_of_a_series(tmp_path):
    write_table(tmp_path, "exp1", series("k4", {2: [1.0, 9.0, 5.0], 1: [4.0, 2.0, 3.0]}))
    sel = {"table": "exp1", "metric": "m", "over": "sweep_value", "where": {"sweep_value": [1, 2]}, "aggregate": "max"}
    assert read_ours(sel, tmp_path) == [(1, 4.0), (2, 9.0)]
    sel["aggregate"] = "min"
    assert read_ours(sel, tmp_path) == [(1, 2.0), (2, 1.0)]


def test_unknown_aggregate_is_an_error():
    with pytest.raises(ValueError, match="unknown aggregate 'mode'"):
        _aggregate(np.array([1.0]), "mode")


def test_where_with_list_values(tmp_path):
    rows = (
        seeds("k4", 1, [1000.0])
        + seeds("k4", 2, [3.0])
        + seeds("k4", 3, [5.0])
        + seeds("k4", 4, [7.0])
        + seeds("k8", 3, [2000.0])
        + seeds("k2", 3, [11.0])
    )
    write_table(tmp_path, "exp1", rows)
    sel = {"table": "exp1", "metric": "m", "aggregate": "max", "where": {"variant": "k4", "sweep_value": [2, 3]}}
    assert read_ours(sel, tmp_path) == 5.0
    sel["where"] = {"variant": ["k4", "k2"], "sweep_value": [3]}
    assert read_ours(sel, tmp_path) == 11.0
    sel["where"] = {"variant": ["k4", "k2"], "sweep_value": [3, 4]}
    assert read_ours(sel, tmp_path) == 11.0
    sel["aggregate"] = "min"
    assert read_ours(sel, tmp_path) == 5.0
    sel["where"] = {"variant": ["k16"]}
    with pytest.raises(MissingResults, match="no rows"):
        read_ours(sel, tmp_path)


def test_where_on_a_column_with_blanks(tmp_path):
    """The theory table leaves H blank on rank rows, so pandas reads H as float: int filters still match."""
    rows = [
        {"quantity": "interaction_rank", "k": 4, "n": 32, "H": "", "value": 4},
        {"quantity": "mse_opt", "k": 4, "n": 32, "H": 1, "value": 12.0},
        {"quantity": "mse_opt", "k": 4, "n": 32, "H": 2, "value": 7.75},
        {"quantity": "mse_opt", "k": 4, "n": 32, "H": 4, "value": 0.0},
    ]
    write_table(tmp_path, "theory", rows)
    assert read_ours({"table": "theory", "metric": "value", "where": {"quantity": "mse_opt", "H": 2}}, tmp_path) == 7.75
    assert (
        read_ours(
            {"table": "theory", "metric": "value", "aggregate": "max", "where": {"quantity": "mse_opt", "H": [2, 4]}},
            tmp_path,
        )
        == 7.75
    )
    assert (
        read_ours({"table": "theory", "metric": "value", "where": {"quantity": "interaction_rank", "k": 4}}, tmp_path)
        == 4.0
    )


# ----------------------------------------------------------------------------- the shipped claims


def test_shipped_closed_form_claims_hold_against_the_theory_table(tmp_path, root):
    """The heads paper's closed-form and spec-derived theory claims against the theory table that
    seqmix.papers.heads writes: the consistency ones hold at every scale, the others are judged (only
    consistency claims may be required to hold); the Exp. I claims are 'not run'."""
    from seqmix.config.loading import load_paper
    from seqmix.papers.heads.analysis import theory

    paper = load_paper(root / "config" / "papers" / "heads.yaml", "tiny")  # families expanded, defaults applied
    resolved = {"exp1": {f"k{k}": {"task": {"k": k, "n": 16}} for k in (2, 4, 8)}}
    theory({"resolved": resolved, "analysis": {"theory": paper["analysis"]["theory"]}}, tmp_path / "theory")
    for scale in ("tiny", "cpu", "paper"):
        for res in C.evaluate_claims(paper["claims"], tmp_path, scale):
            if res.id.startswith("theory-") and res.kind == CONSISTENCY:
                assert res.verdict == HOLDS, (res.id, res.ours, res.detail)
            elif res.id.startswith("theory-"):
                assert res.verdict in (HOLDS, DIFFERS), (res.id, res.ours, res.detail)
            else:
                assert res.verdict == NOT_RUN, (res.id, res.detail)


# ----------------------------------------------------------------------------- families (expand:) and defaults


def test_expand_zips_the_lists_and_substitutes_everywhere():
    from seqmix.config.claim_families import expand_claims

    fam = {
        "id": "rank-k{k}",
        "expand": {"k": [2, 4, 8], "rep": [2.0, 4.5, 8.25]},
        "source": "closed-form",
        "statement": "k = {k}: span{A^tau} has rank {rep}",
        "reported": "{rep}",
        "ours": {"table": "theory", "metric": "value", "where": {"quantity": "rank_k{k}", "k": "{k}"}},
        "check": {"kind": "within", "target": "{rep}", "atol": 0},
    }
    got, origins = expand_claims([fam])
    assert [c["id"] for c in got] == ["rank-k2", "rank-k4", "rank-k8"]  # zip: i-th value of every list
    c = got[1]
    assert "expand" not in c
    assert c["statement"] == "k = 4: span{A^tau} has rank 4.5"  # other braces are not placeholders
    assert c["reported"] == 4.5 and c["check"]["target"] == 4.5  # a whole-value placeholder keeps the type
    assert c["ours"]["where"] == {"quantity": "rank_k4", "k": 4}
    assert isinstance(c["ours"]["where"]["k"], int)
    assert origins == [("claims[0]", "k=2, rep=2.0"), ("claims[0]", "k=4, rep=4.5"), ("claims[0]", "k=8, rep=8.25")]


def test_expand_a_list_of_mappings_is_their_product_first_slowest():
    from seqmix.config.claim_families import expand_claims

    fam = {
        "id": "t{table}-{loss}-z{z}",
        "expand": [{"loss": ["sup", "node"]}, {"z": [1, 2, 3], "l": [0, 1, 2]}],
        "source": "paper",
        "ours": {"metric": "cos_z{z}_l{l}", "where": {"variant": "{loss}"}},
        "table": 2,
    }
    got, _ = expand_claims([fam])
    assert [c["id"] for c in got] == [
        "t{table}-sup-z1",
        "t{table}-sup-z2",
        "t{table}-sup-z3",
        "t{table}-node-z1",
        "t{table}-node-z2",
        "t{table}-node-z3",
    ]
    assert got[4]["ours"] == {"metric": "cos_z2_l1", "where": {"variant": "node"}}


def test_expand_substitutes_lists_whole_and_keys():
    from seqmix.config.claim_families import expand_claims

    fam = {
        "id": "low-k{k}",
        "expand": {"k": [2, 8], "H": [[2, 3], [8]]},
        "source": "paper",
        "ours": {"where": {"sweep_value": "{H}", "k{k}": True}},
    }
    got, _ = expand_claims([fam])
    assert got[0]["ours"]["where"] == {"sweep_value": [2, 3], "k2": True}
    assert got[1]["ours"]["where"] == {"sweep_value": [8], "k8": True}
    got[0]["ours"]["where"]["sweep_value"].append(4)  # members do not share lists
    assert fam["expand"]["H"][0] == [2, 3]


def test_defaults_by_source_fill_only_missing_keys():
    from seqmix.config.claim_families import expand_claims

    defaults = {"closed-form": {"expected_at": ["tiny", "cpu", "paper"]}, "paper": {"expected_at": ["cpu"]}}
    claims = [
        {"id": "a", "source": "closed-form"},
        {"id": "b", "source": "paper"},
        {"id": "c", "source": "paper", "expected_at": ["paper"]},
        {"id": "d", "source": "spec-derived"},
    ]
    got, _ = expand_claims(claims, defaults)
    assert [c.get("expected_at") for c in got] == [["tiny", "cpu", "paper"], ["cpu"], ["paper"], None]
    got[0]["expected_at"].append("x")  # each claim gets its own copy
    assert defaults["closed-form"]["expected_at"] == ["tiny", "cpu", "paper"]


@pytest.mark.parametrize(
    "entry,keypath,fragment",
    [
        ({"id": "a{k}", "expand": {"k": [1, 2], "j": [1]}}, "claims[0].expand", "need one length"),
        ({"id": "a{k}", "expand": {"k": []}}, "claims[0].expand.k", "non-empty list"),
        ({"id": "a{k}", "expand": {"1k": [1]}}, "claims[0].expand.1k", "identifier"),
        ({"id": "a{k}", "expand": []}, "claims[0].expand", "expected a mapping"),
        ({"id": "a", "expand": {"k": [1, 2]}}, "claims[0].id", "ids must be unique"),
    ],
)
def test_expand_errors_name_the_entry(entry, keypath, fragment):
    from seqmix.config.claim_families import ClaimSpecError, expand_claims

    with pytest.raises(ClaimSpecError) as info:
        expand_claims([dict(entry, source="paper")])
    assert info.value.keypath == keypath and fragment in info.value.message


def test_shipped_claim_files_have_no_anchors_and_use_families(root):
    """The claims YAML is hand-edited: no PyYAML anchors/aliases, families folded, defaults hoisted."""
    import re

    for paper in ("heads", "superposition"):
        text = (root / "config" / "papers" / f"{paper}.yaml").read_text()
        assert not re.search(r"[&*]id\d+", text), paper
        assert "claim_defaults:" in text and "expand:" in text, paper


# ----------------------------------------------------------------------------- write_claims

COLUMNS = list(R.COLUMNS)


def _four_results(tmp_path) -> list[ClaimResult]:
    write_table(tmp_path, "exp1", seeds("k4", 2, [1.0, 1.02, 1.04]) + series("k8", {1: [3.0] * 3, 2: [2.0] * 3}))
    sel = {"table": "exp1", "metric": "m", "where": {"variant": "k4", "sweep_value": 2}}
    claims = [
        dict(
            make_claim(sel, {"kind": "within", "lo": 0.95, "hi": 1.1}, reported="MSE/MSE* in [0.95, 1.10]"),
            id="a-holds",
        ),
        dict(
            make_claim(sel, {"kind": "within", "rtol": 0.01}, reported=[2.0, 0.3]),
            id="b-differs",
            statement="error | pipes are escaped",
            source="spec-derived",
            law="Monte Carlo over 10^5 draws",
        ),
        dict(
            make_claim(
                {
                    "table": "exp1",
                    "metric": "m",
                    "over": "sweep_value",
                    "where": {"variant": "k8", "sweep_value": [1, 2]},
                },
                {"kind": "ordering", "order": [1, 2]},
                reported="qualitative",
                expected_at=["paper"],
            ),
            id="c-not-expected",
            kind="consistency",
            by_construction="zero row sums",
        ),
        dict(
            make_claim({"table": "missing", "metric": "m"}, {"kind": "threshold", "op": "<", "value": 1}),
            id="d-not-run",
            source="closed-form",
        ),
    ]
    return C.evaluate_claims(claims, tmp_path, SCALE)


def test_write_claims_csv(tmp_path):
    results = _four_results(tmp_path)
    md, csv_path = tmp_path / "out" / "claims.md", tmp_path / "out" / "claims.csv"
    R.write_claims(results, md, csv_path, "heads", SCALE, commit="abc123")
    df = pd.read_csv(csv_path, keep_default_na=False)
    assert list(df.columns) == [
        "id", "kind", "source", "by_construction", "secondary", "artefact", "statement", "paper_value", "law",
        "our_value", "interval", "noise", "check", "scale", "seeds", "seeds_used", "verdict", "detail", "commit",
    ]  # fmt: skip
    assert df["id"].tolist() == ["a-holds", "b-differs", "c-not-expected", "d-not-run"]
    assert df["verdict"].tolist() == [HOLDS, DIFFERS, NOT_EXPECTED, NOT_RUN]
    assert df["source"].tolist() == ["paper", "spec-derived", "paper", "closed-form"]
    # kinds default from the source; c overrides its kind
    assert df["kind"].tolist() == ["reproduction", "derived", "consistency", "consistency"]
    assert df["by_construction"].tolist() == ["", "", "zero row sums", ""]
    assert df["seeds"].tolist() == ["3/3", "3/3", "3/3", "—"]
    assert df["seeds_used"].tolist() == ["0, 1, 2", "0, 1, 2", "0, 1, 2", "—"]
    assert df["noise"].tolist() == ["none"] * 4 and df["interval"].tolist() == [""] * 4
    assert df["secondary"].tolist() == [""] * 4
    assert (df["scale"] == SCALE).all() and (df["commit"] == "abc123").all()
    assert df["our_value"].tolist() == ["1.02", "1.02", "1: 3, 2: 2", "—"]
    assert df["paper_value"].tolist() == ["MSE/MSE* in [0.95, 1.10]", "2.0 ± 0.3", "qualitative", "—"]
    assert df["law"].tolist() == ["", "Monte Carlo over 10^5 draws", "", ""]  # a derived claim's independent law
    assert df["check"].tolist() == [
        "within(lo=0.95 hi=1.1)",
        "within(rtol=0.01)",
        "ordering(order=[1, 2])",
        "threshold(op=< value=1)",
    ]
    assert df["detail"].tolist()[:3] == [
        "1.02 in [0.95, 1.1]",
        "|1.02 - 2| <= 0.02",
        "monotone over [3.0, 2.0] (would hold)",
    ]
    assert "does not exist" in df["detail"].tolist()[3]


def test_write_claims_markdown(tmp_path):
    """claims.md leads with the counts per kind and source (reproduction first), then one section per kind;
    a by-construction claim says so, a 'not run' says why in its verdict cell."""
    results = _four_results(tmp_path)
    md, csv_path = tmp_path / "claims.md", tmp_path / "claims.csv"
    R.write_claims(results, md, csv_path, "heads", SCALE, data="synthetic stream: 8 topics, first order", device="cpu")
    text = md.read_text()
    lines = text.splitlines()
    assert lines[0] == "# Claims of `heads` at scale `cpu`"
    assert "Data at `cpu`: synthetic stream: 8 topics, first order. Device: cpu." in lines  # what the scale ran on
    assert (
        "Verdicts: holds: 1, differs: 1, within noise: 0, invalid: 0, not run: 1, not expected at this scale: 1"
        in lines
    )
    counts_header = (
        "| kind | source | holds | holds by construction | differs | within noise | invalid | not run "
        "| not expected at this scale | total |"
    )
    i = lines.index(counts_header)
    assert lines[i + 2 : i + 6] == [
        "| reproduction | paper | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 1 |",
        "| derived | spec-derived | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 1 |",
        "| consistency | paper | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 1 |",
        "| consistency | closed-form | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 1 |",
    ]
    sections = [ln for ln in lines if ln.startswith("## ")]
    assert [s.split(":")[0] for s in sections] == ["## Reproduction", "## Derived", "## Consistency"]
    header = "| claim | source | artefact | statement | paper value | our value | noise | seeds | check | verdict |"
    assert lines.count(header) == 3
    rows = [ln for ln in lines[i + 6 :] if ln.startswith("| ") and ln != header]
    assert len(rows) == 4
    assert rows[0] == (
        "| a-holds | paper | Figure 3 left | a statement | MSE/MSE* in [0.95, 1.10] | 1.02 | none | 3/3 (0, 1, 2) | "
        "within(lo=0.95 hi=1.1): 1.02 in [0.95, 1.1] | **holds** |"
    )
    assert "error \\| pipes are escaped" in rows[1] and rows[1].endswith("| **differs** |")
    assert "| 2.0 ± 0.3 (law: Monte Carlo over 10^5 draws) |" in rows[1]
    assert rows[2].endswith("| **not expected at this scale** (by construction: zero row sums) |")
    assert "| **not run**: " in rows[3] and "does not exist" in rows[3]
    # every row has the 10 cells of the header (escaped pipes do not split cells)
    for r in rows:
        assert len(r.replace("\\|", "").split("|")) == len(header.split("|"))


def test_write_claims_without_claims_still_has_a_header(tmp_path):
    """A paper with no claims: claims.csv has the columns (report/index.py reads it), counts are zero."""
    md, csv_path = tmp_path / "claims.md", tmp_path / "claims.csv"
    R.write_claims([], md, csv_path, "heads", "tiny")
    df = pd.read_csv(csv_path)
    assert list(df.columns) == COLUMNS and len(df) == 0
    want = "Verdicts: holds: 0, differs: 0, within noise: 0, invalid: 0, not run: 0, not expected at this scale: 0"
    assert want in md.read_text()
    # no data: in the paper config and no device recorded: said so, never left blank
    assert f"Data at `tiny`: {R.UNDECLARED}. Device: {R.NO_DEVICE}." in md.read_text()


def test_devices_come_from_the_summaries(tmp_path):
    """The device column the train stage writes: one device, one per experiment, or none recorded."""
    (tmp_path / "a.csv").write_text("variant,device\nx,cuda\ny,cuda\n")
    (tmp_path / "b.csv").write_text("variant,device\nx,cpu\n")
    (tmp_path / "c.csv").write_text("variant,value\nx,1\n")  # an evaluate-only table: no device column
    a, b, c = (str(tmp_path / f"{n}.csv") for n in "abc")
    assert R.devices({"e1": a}) == "cuda"
    assert R.devices({"e1": a, "e2": b, "e3": c, "e4": str(tmp_path / "missing.csv")}) == "cuda (e1), cpu (e2)"
    assert R.devices({"e3": c}) == R.NO_DEVICE
