"""Verdicts with noise (issue 25): an ordering, gap or threshold on a learned quantity holds only when our
95% interval clears it, differs only when the interval clears the opposite, and otherwise reads "within
noise"; strict relations are strict; one seed leaves the spread unknown. Each case here read "holds" on the
engine before (means alone, non-strict)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from seqmix.claims import engine as C
from seqmix.claims import noise as N
from seqmix.claims.checks import DIFFERS, HOLDS, NOT_EXPECTED, WITHIN_NOISE
from seqmix.claims.render import write_claims
from seqmix.io import write_text


def write(results: Path, rows: list[dict], table: str = "e1") -> None:
    path = results / table / "summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, pd.DataFrame(rows).to_csv(index=False), checksum=True)  # as collect writes it


def runs(variant: str, values: list[float], metric: str = "acc") -> list[dict]:
    return [dict(variant=variant, seed=s, **{metric: v}) for s, v in enumerate(values)]


def claim(ours: dict, check: dict, **extra) -> dict:
    return {
        "id": "c",
        "source": "paper",
        "artefact": "Table 1",
        "statement": "s",
        "reported": None,
        "ours": {"table": "e1", "metric": "acc", "aggregate": "mean", **ours},
        "check": check,
        "expected_at": ["cpu"],
        **extra,
    }


ORDER = {"kind": "ordering", "order": ["mamba2", "transformer", "sessa"], "direction": "increasing"}
SERIES = {"over": "variant", "where": {"variant": ["mamba2", "transformer", "sessa"]}}


def test_seed_interval_is_the_t_interval_of_the_mean():
    est = N.from_seeds(pd.Series([0.80, 0.82, 0.84]).to_numpy(), 0.82, N.Noise(N.SEEDS))
    half = stats.t.ppf(0.975, 2) * 0.02 / math.sqrt(3)
    assert est.lo == pytest.approx(0.82 - half) and est.hi == pytest.approx(0.82 + half) and est.dof == 2


def test_binomial_interval_is_shared_by_the_seeds():
    """One test set scores every seed: its sampling error does not shrink with the number of seeds."""
    est = N.from_seeds(pd.Series([0.5] * 4).to_numpy(), 0.5, N.Noise(N.BINOMIAL, 1000))
    assert est.hi - 0.5 == pytest.approx(1.959964 * math.sqrt(0.25 / 1000), rel=1e-6)
    both = N.from_seeds(pd.Series([0.48, 0.52]).to_numpy(), 0.5, N.Noise(N.SEEDS_BINOMIAL, 1000))
    se = math.sqrt(pd.Series([0.48, 0.52]).var() / 2 + 0.25 / 1000)
    assert both.hi - 0.5 == pytest.approx(stats.t.ppf(0.975, 1) * se)


def test_an_ordering_inside_one_binomial_error_is_within_noise(tmp_path):
    """sessa's SymbolSoup ordering 'held' by 0.0065, under one binomial standard error of a 1000-example test."""
    write(tmp_path, runs("mamba2", [0.05, 0.05, 0.05]) + runs("transformer", [0.79, 0.79, 0.79])
          + runs("sessa", [0.7965, 0.7965, 0.7965]))  # fmt: skip
    res = C.evaluate_claim(claim(SERIES, ORDER, noise={"binomial": {"n": 1000}}), tmp_path, "cpu")
    assert res.verdict == WITHIN_NOISE and "(transformer, sessa)" in res.detail, res.detail
    write(tmp_path, runs("mamba2", [0.05] * 3) + runs("transformer", [0.79] * 3) + runs("sessa", [0.86] * 3))
    res = C.evaluate_claim(claim(SERIES, ORDER, noise={"binomial": {"n": 1000}}), tmp_path, "cpu")
    assert res.verdict == HOLDS, res.detail
    assert res.noise == "binomial (n=1000)" and res.seeds_used == "0, 1, 2"


def test_a_mean_over_seeds_gets_the_seed_interval_by_default(tmp_path):
    """No `noise` key: a mean over a seeded table is judged with its seed interval, a spread that swamps the
    difference of means is within noise, and a step clearing it the other way differs."""
    write(tmp_path, runs("mamba2", [0.1, 0.5, 0.9]) + runs("transformer", [0.5, 0.6, 0.7]) + runs("sessa", [0.6] * 3))
    res = C.evaluate_claim(claim(SERIES, ORDER), tmp_path, "cpu")
    assert res.noise == "seeds" and res.verdict == WITHIN_NOISE, res
    write(tmp_path, runs("mamba2", [0.90, 0.91, 0.92]) + runs("transformer", [0.5] * 3) + runs("sessa", [0.6] * 3))
    res = C.evaluate_claim(claim(SERIES, ORDER), tmp_path, "cpu")
    assert res.verdict == DIFFERS and "breaks at [('mamba2', 'transformer')]" in res.detail, res.detail


@pytest.mark.parametrize("op,verdict", [(">", DIFFERS), (">=", HOLDS), ("<", DIFFERS), ("<=", HOLDS)])
def test_strict_relations_are_strict(tmp_path, op, verdict):
    """A tie with no spread: '>' and '<' differ (they did hold as orderings), '>=' and '<=' hold."""
    write(tmp_path, runs("a", [0.5, 0.5, 0.5]))
    res = C.evaluate_claim(
        claim({"where": {"variant": "a"}}, {"kind": "threshold", "op": op, "value": 0.5}), tmp_path, "cpu"
    )
    assert res.verdict == verdict, res


def test_a_tie_in_an_ordering_is_not_an_ordering(tmp_path):
    write(tmp_path, runs("mamba2", [0.1] * 3) + runs("transformer", [0.5] * 3) + runs("sessa", [0.5] * 3))
    assert C.evaluate_claim(claim(SERIES, ORDER), tmp_path, "cpu").verdict == DIFFERS


def test_a_threshold_twice_chance_is_within_noise_until_the_interval_clears(tmp_path):
    """'did not converge' (accuracy below twice chance) held for any model up to twice chance."""
    check = {"kind": "threshold", "op": "<", "value": 0.1}
    write(tmp_path, runs("mamba2", [0.06, 0.09, 0.12]))
    assert C.evaluate_claim(claim({"where": {"variant": "mamba2"}}, check), tmp_path, "cpu").verdict == WITHIN_NOISE
    write(tmp_path, runs("mamba2", [0.05, 0.051, 0.049]))
    assert C.evaluate_claim(claim({"where": {"variant": "mamba2"}}, check), tmp_path, "cpu").verdict == HOLDS


def test_one_seed_leaves_the_spread_unknown(tmp_path):
    write(tmp_path, runs("a", [0.9]) + runs("b", [0.1], metric="acc"))
    res = C.evaluate_claim(
        claim({"where": {"variant": "a"}}, {"kind": "threshold", "op": ">", "value": 0.5}), tmp_path, "cpu"
    )
    assert res.verdict == WITHIN_NOISE and res.detail == "1 seed: spread unknown" and res.interval == "unknown"


def test_within_needs_the_whole_interval_inside_the_band(tmp_path):
    check = {"kind": "within", "target": 0.86, "atol": 0.05}
    write(tmp_path, runs("a", [0.80, 0.86, 0.92]))  # mean inside, interval straddles the band's edges
    assert C.evaluate_claim(claim({"where": {"variant": "a"}}, check), tmp_path, "cpu").verdict == WITHIN_NOISE
    write(tmp_path, runs("a", [0.85, 0.86, 0.87]))
    assert C.evaluate_claim(claim({"where": {"variant": "a"}}, check), tmp_path, "cpu").verdict == HOLDS
    write(tmp_path, runs("a", [0.50, 0.51, 0.52]))
    assert C.evaluate_claim(claim({"where": {"variant": "a"}}, check), tmp_path, "cpu").verdict == DIFFERS


def test_slope_interval_propagates_the_point_errors(tmp_path):
    rows = [dict(variant="a", d=d, seed=s, acc=2.0 * d + e) for d in (1, 2, 3) for s, e in enumerate((-1, 0, 1))]
    write(tmp_path, rows)
    sel = {"over": "d", "where": {"variant": "a", "d": [1, 2, 3]}}
    res = C.evaluate_claim(claim(sel, {"kind": "slope", "lo": 1.9, "hi": 2.1}), tmp_path, "cpu")
    # each point: se 1/sqrt(3); slope se = sqrt(sum w^2) se with w = (-1/2, 0, 1/2)
    half = stats.t.ppf(0.975, 2) * math.sqrt(0.5) / math.sqrt(3)
    assert res.verdict == WITHIN_NOISE and f"slope 2 [{2 - half:.6g}, {2 + half:.6g}]" in res.detail, res
    assert C.evaluate_claim(claim(sel, {"kind": "slope", "lo": 0}), tmp_path, "cpu").verdict == HOLDS


def test_noise_none_keeps_the_exact_judgement(tmp_path):
    write(tmp_path, runs("a", [0.1, 0.5, 0.9]))
    check = {"kind": "threshold", "op": ">", "value": 0.4}
    res = C.evaluate_claim(claim({"where": {"variant": "a"}}, check, noise="none"), tmp_path, "cpu")
    assert res.verdict == HOLDS and res.interval == "" and res.noise == "none"


def test_claims_files_show_value_interval_and_seeds(tmp_path):
    write(tmp_path, runs("a", [0.80, 0.82, 0.84]))
    res = C.evaluate_claims(
        [claim({"where": {"variant": "a"}}, {"kind": "threshold", "op": ">", "value": 0.5})], tmp_path, "cpu"
    )
    write_claims(res, tmp_path / "c.md", tmp_path / "c.csv", "p", "cpu")
    row = pd.read_csv(tmp_path / "c.csv", keep_default_na=False).iloc[0]
    half = stats.t.ppf(0.975, 2) * 0.02 / math.sqrt(3)
    assert row["our_value"] == f"0.82 ± {half:.2g}" and row["interval"] == f"[{0.82 - half:.4g}, {0.82 + half:.4g}]"
    assert row["seeds_used"] == "0, 1, 2" and row["noise"] == "seeds" and row["verdict"] == HOLDS
    assert f"| 0.82 ± {half:.2g} | seeds | 3/3 (0, 1, 2) |" in (tmp_path / "c.md").read_text()


def test_not_expected_says_it_would_be_within_noise(tmp_path):
    write(tmp_path, runs("a", [0.1, 0.5, 0.9]))
    res = C.evaluate_claim(
        claim({"where": {"variant": "a"}}, {"kind": "threshold", "op": ">", "value": 0.4}), tmp_path, "tiny"
    )
    assert res.verdict == NOT_EXPECTED and res.detail.endswith("(would be within noise)")


def test_secondary_rows_are_shown_not_counted(tmp_path):
    write(tmp_path, runs("a", [0.80, 0.82, 0.84]))
    check = {"kind": "threshold", "op": ">", "value": 0.5}
    sec = {"of": "c", "why": "a second table's rounding"}
    res = C.evaluate_claims(
        [
            claim({"where": {"variant": "a"}}, check),
            dict(claim({"where": {"variant": "a"}}, check), id="d", secondary=sec),
        ],
        tmp_path,
        "cpu",
    )
    write_claims(res, tmp_path / "c.md", tmp_path / "c.csv", "p", "cpu")
    text = (tmp_path / "c.md").read_text()
    assert (
        "Verdicts: holds: 1, differs: 0, within noise: 0," in text
        and "(1 secondary readings shown, not counted)" in text
    )
    assert "(secondary reading of c: a second table's rounding; not counted)" in text
    assert pd.read_csv(tmp_path / "c.csv", keep_default_na=False)["secondary"].tolist() == [
        "",
        "of c: a second table's rounding",
    ]
