"""The claims engine: the papers' numbers and statements beside ours, with an honest verdict.

A claim (in ``config/papers/<paper>.yaml``) names where our value comes from (``ours``: a summary table
under ``results/<scale>/<paper>/<table>/summary.csv``, a metric, a row filter, an aggregate over seeds) and a
check:

- ``within``: our value lies in [lo, hi], or within rtol/atol of ``target`` (default: the reported value);
- ``ordering``: the series of our values over ``order`` is monotone (``direction``), with a relative slack;
- ``slope``: the least-squares slope of our series (log10 of it with ``logy``, against log10 x with
  ``logx``; natural logs with ``log_base: e``) lies in [lo, hi]; with ``relative_to`` the slope is first
  divided by the aggregate of another metric over the same rows (e.g. a decay rate ln rho(A)), and with
  ``min_r2`` the fit must also reach that coefficient of determination;
- ``threshold``: our value compares to ``value`` by ``op``.

A selection with ``over`` is a series over the points listed in ``where`` (``where: {T: [10, 20, 40]}``; the
loader fills the list of a series over an experiment's ``sweep_value`` or ``variant`` with the points the
experiment runs at the scale, and refuses any other series without one); ``ratio_to`` divides it pointwise
by a second selection's series,
and ``reduce: min|max`` turns it into one value for ``within``/``threshold`` (e.g. "attention above the
SSM at every T": the smallest attention/SSM ratio over T exceeds 1).

Keys of a claim besides its selection and check:

- ``kind``: ``reproduction`` (a quantity our experiment measured against the paper's own number or
  relation), ``derived`` (our numerics against a law obtained apart from the formula our code implements: a
  theorem or number of the paper, a Monte Carlo, a bound evaluated independently) or ``consistency`` (an
  identity, or a formula against itself or the spec's evaluation of it: a unit test of the code, never
  evidence). Default from ``source``: paper -> reproduction, spec-derived -> derived, closed-form ->
  consistency. The loader enforces the policy (seqmix.config.claim_kinds): ``reproduction`` needs ``source:
  paper`` and a measured value; a ``derived`` claim on a code evaluation names its ``law:`` (shown beside the
  paper value in claims.md, and in claims.csv's law column); ``law:`` on any other kind is refused.
- ``by_construction: "<reason>"``: the claim holds for any data of the right shape (e.g. a ratio fixed by
  zero row sums); it is still checked, but shown as "holds (by construction: <reason>)" and counted apart,
  never as evidence.
- ``noise``: where the uncertainty of our value comes from (seqmix.claims.noise, whose docstring gives the
  formulas): ``none`` (deterministic: judged exactly as written), ``seeds`` (95% t-interval of the mean over
  seeds, k - 1 dof), ``binomial: {n: N}`` (an accuracy over a test set of N examples shared by the seeds; N an
  int or a {tiny, cpu, paper} map), ``seeds+binomial`` (both in quadrature). Default: ``seeds`` for an
  ``aggregate: mean`` over a table with a seed column, unless the claim is a consistency claim or ``where``
  pins one seed; ``none`` otherwise. A noise model needs ``aggregate: mean``; an ordering's ``rtol`` (slack of a
  deterministic series) does not mix with one. With noise, a check holds only when its whole 95% interval
  satisfies it, differs only when the whole interval satisfies the opposite, and is "within noise"
  otherwise; '>', '<' and orderings are strict; with a seed model and one seed the spread is unknown ("1
  seed: spread unknown": within noise, never holds).
- ``secondary: {of: <primary id>, why: "<reason>"}``: an alternative reading of a quantity the primary claim
  reads (e.g. a second table's rounding of the same number, a gap that repeats an ordering's step): shown
  in claims.md/csv, never counted. The loader rejects two primary claims with one selection (``ours``,
  ``seeds``, a slope's ``relative_to``) in one paper; ``null`` marks a family member primary.
- ``seeds``: the seeds our value needs. An int is a minimum count of distinct seeds; a list names the
  seeds (only those rows are read, and every one must be there); by default every seed that the table
  holds (within a ``seed`` that ``where`` pins) is needed, so a mean "over seeds" is never over a subset.
  Each member (a point of a series, a value of a list in ``where``) needs them; each row shows 'had/needed'
  for its worst member ("2/3") and the seeds read; '—' for tables without a seed column. A row without a
  seed in a seeded table is a missing seed, unless ``where`` names the seedless rows (``seed: null``: a
  deterministic member such as a teacher).
- ``where`` values are compared as the column's type ("2" matches an int column); a value that can be of no
  row's type is "invalid", not "no rows".

Verdicts (seqmix.claims.checks.VERDICTS): holds / differs / within noise / invalid / not run / not expected at this
scale; "within noise" and secondary readings are counted apart from holds and differs.

- "not run": results are missing: a file, a column of an experiment's summary, a value listed in ``where``
  (a list of wanted members) with no rows ("missing variant=c", along a series "missing variant=b at T=2"),
  or fewer seeds than needed ("2 of 3 seeds (missing seed 44)").
- "invalid": results exist but cannot be judged: an empty (0-byte) summary, a non-numeric or NaN/Inf cell
  in any row a check reads (the rows named), two rows for one (member, seed) (rows that agree on every
  label and integer-valued column but the metric and the run's hash; a stale row beside a fresh one), a
  geomean or log of values <= 0, a zero denominator (``ratio_to``, ``relative_to``), a column that an
  analysis artefact's table does not have (the table, the column and the table's columns named: an
  experiment's columns are declared and checked at config load, an analysis artefact's are its own, so a
  claim naming one it does not write would read 'not run' however often it ran). Never turned into a
  number that a check could pass, never a crashed claims step.
- "not expected at this scale": the scale is not in ``expected_at`` (our value and what it would give are
  still shown: "(would hold / differ / be within noise)"). "not run" and "invalid" win over it.

Only ``consistency`` claims are required to hold by ``make test`` (they test the code); reproduction and
derived claims are reported as they come out.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from . import noise as noise_model
from .checks import (
    CONSISTENCY,
    DIFFERS,
    HOLDS,
    INVALID,
    NO_SEEDS,
    NOT_EXPECTED,
    NOT_RUN,
    WITHIN_NOISE,
    ClaimResult,
    InvalidInput,
    MissingResults,
    _require_finite,
    claim_kind,
    run_check,
)
from .select import read_claim, read_reference

__all__ = ["evaluate_claim", "evaluate_claims"]


def _check_text(check: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in check.items() if k != "kind").join((f"{check['kind']}(", ")"))


def _interval_text(est) -> str:
    if est is None:
        return ""
    points = est if isinstance(est, list) else [(None, est)]
    if any(e.unknown for _, e in points):
        return "unknown"
    cells = [f"[{e.lo:.4g}, {e.hi:.4g}]" for _, e in points]
    return cells[0] if not isinstance(est, list) else ", ".join(f"{x}: {c}" for (x, _), c in zip(points, cells))


def _judge(claim: dict, reading, ref, axis: str) -> tuple[str, str]:
    check = claim["check"]
    if not reading.noise.active:
        ok, detail = run_check(check, reading.ours, claim.get("reported"), ref, axis=axis)
        return (HOLDS if ok else DIFFERS), detail
    if check["kind"] == "ordering" and check.get("rtol"):
        raise InvalidInput(f"an ordering's rtol is the slack of a deterministic series; noise {reading.noise.kind!r} "
                           "judges the steps by their intervals: set noise: none or drop rtol")  # fmt: skip
    _require_finite(reading.ours, axis)
    outcome, detail = noise_model.judge(check, reading.estimate, claim.get("reported"), ref, axis)
    return {noise_model.HOLD: HOLDS, noise_model.DIFFER: DIFFERS, noise_model.NOISE: WITHIN_NOISE}[outcome], detail


def _secondary_text(claim: dict) -> str:
    sec = claim.get("secondary")
    return f"of {sec['of']}: {sec['why']}" if sec else ""


WOULD = {HOLDS: "hold", DIFFERS: "differ", WITHIN_NOISE: "be within noise"}


def evaluate_claim(claim: dict, results_dir: Path, scale: str, analysis_tables: Collection[str] = ()) -> ClaimResult:
    """The verdict of one claim on the tables under ``results_dir``; ``analysis_tables``: the tables that
    analysis artefacts write (``config.artefacts.analysis_tables``), whose missing columns make a claim invalid."""
    base = dict(
        id=claim["id"],
        source=claim["source"],
        artefact=claim["artefact"],
        statement=claim["statement"],
        reported=claim.get("reported"),
        check=_check_text(claim["check"]),
        expected_at=claim["expected_at"],
        kind=claim_kind(claim),
        by_construction=claim.get("by_construction") or "",
        secondary=_secondary_text(claim),
        law=claim.get("law") or "",
    )
    sel, declared = claim["ours"], claim.get("seeds")
    analysis = sel["table"] in analysis_tables
    reading = None
    try:
        reading = read_claim(
            sel, results_dir, declared, claim.get("noise"), base["kind"] == CONSISTENCY, scale, analysis=analysis
        )
        ref = None
        if claim["check"].get("relative_to") is not None:
            ref = read_reference(sel, claim["check"]["relative_to"], results_dir, declared, analysis=analysis)
        verdict, detail = _judge(claim, reading, ref, sel.get("over") or "x")
    except MissingResults as e:
        ours, seeds = (reading.ours, reading.seeds) if reading else (None, e.seeds)
        return ClaimResult(ours=ours, verdict=NOT_RUN, detail=str(e), seeds=seeds, **base)
    except InvalidInput as e:
        ours, seeds = (reading.ours, reading.seeds) if reading else (None, NO_SEEDS)
        return ClaimResult(ours=ours, verdict=INVALID, detail=str(e), seeds=seeds, **base)
    if scale not in claim["expected_at"]:
        verdict, detail = NOT_EXPECTED, f"{detail} (would {WOULD[verdict]})"
    return ClaimResult(
        ours=reading.ours,
        verdict=verdict,
        detail=detail,
        seeds=reading.seeds,
        noise=reading.noise.label(),
        interval=_interval_text(reading.estimate),
        seeds_used=reading.seeds_used,
        estimate=reading.estimate,
        **base,
    )


def evaluate_claims(
    claims: list[dict], results_dir: Path, scale: str, analysis_tables: Collection[str] = ()
) -> list[ClaimResult]:
    return [evaluate_claim(c, results_dir, scale, analysis_tables) for c in claims]
