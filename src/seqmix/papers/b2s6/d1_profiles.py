"""D1 (spec "Extra diagnostics"): relative-gradient profiles S_k of eq. (6) against the scale c of one input.

    J_k = d Gamma(u)_L / d u_k  (d x d),   S_k = ||J_k||_F / sum_k' ||J_k'||_F

computed in float64 by reverse mode (``torch.autograd.functional.jacobian``: one VJP per output channel; the
CPU scan is a custom autograd Function without functorch support, which ``torch.func.jacrev`` would need).
Protocol: a random unit (d channels, L steps), u_k0 normalised so that the Delta logit(s) w . u_k0 are +-1,
then scaled by every c of ``c_values``. Cases and the predicted asymptotics (paper Thms 2 and 5):

- ``s6_pos`` (w . u_k0 = +1): S_(k<k0) decays exponentially (ln S falls with slope -(w . u_k0) min_m |a_m|:
  the past is multiplied by exp(Delta_k0 a_m), Delta_k0 ~ c w . u_k0), S_k0 = Theta(1/c), S_(k>k0) = Theta(1);
- ``s6_neg`` (w . u_k0 = -1): S_k0 decays exponentially (Delta_k0 ~ exp(c w . u_k0), slope -|w . u_k0|),
  S_(k != k0) = Theta(1);
- ``b2s6_mixed`` (real B2S6, h blocks, block logits alternately +1 and -1): polynomial, O(c^-2), O(c^-1),
  Theta(1), once c |w^[j] . u^[j]_k0| >> max(1, |b|) (the spec's pre-asymptotic warning; ``regime_c`` records
  max(1, max |b|) / min_j |w^[j] . u^[j]_k0|);
- ``s4d``: the profile does not depend on c (an LTI unit's Jacobian does not depend on its input).

``summary.csv`` rows: (case, quantity, value) with the fitted slopes the d1-* claims read; ``d1_profiles.csv`` the
per-c regions (before / at / after k0) with S and the raw norm sum. An S that underflows to exactly 0 is
"below precision" (flagged, drawn at 1e-300) and left out of every fit.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from ...mixers.ssm import B2S6, S4D, S6
from ...report.plots import legend_outside, save_figure
from ...report.tables import write_csv

CASES = ("s6_pos", "s6_neg", "b2s6_mixed", "s4d")
REGIONS = ("before", "at", "after")
FLOOR = 1e-300  # where an underflowed S is drawn on log axes


def jacobian_norms(unit: torch.nn.Module, u: torch.Tensor) -> torch.Tensor:
    """||J_k||_F for every k: (L,) from u (L, d), J_k = d unit(u)_L / d u_k."""
    J = torch.autograd.functional.jacobian(lambda v: unit(v[None])[0, -1], u)  # (d_out, L, d_in)
    return J.permute(1, 0, 2).flatten(1).norm(dim=1)


def region_sums(norms: torch.Tensor, k0: int) -> dict[str, float]:
    """The raw norms summed over k < k0, k = k0 and k > k0."""
    return {"before": float(norms[:k0].sum()), "at": float(norms[k0]), "after": float(norms[k0 + 1 :].sum())}


def build_case(case: str, d: int, n: int, L: int, k0: int, h: int, seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """(unit in float64, u (L, d)) with u_k0 scaled so that its Delta logit(s) are the case's +-1."""
    torch.manual_seed(seed)
    u = torch.randn(L, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if case in ("s6_pos", "s6_neg"):
        unit = S6(d, d_state=n).double()
        logit = float(unit.w.detach() @ u[k0])
        u[k0] = u[k0] * (1.0 if case == "s6_pos" else -1.0) / logit
    elif case == "b2s6_mixed":
        unit = B2S6(d, blocks=h, d_state=n, complex=False).double()
        w = unit.w.detach()  # (h, p)
        blocks = u[k0].view(h, unit.p)
        signs = torch.tensor([1.0 if j % 2 == 0 else -1.0 for j in range(h)], dtype=torch.float64)
        u[k0] = (blocks * (signs / (w * blocks).sum(1))[:, None]).flatten()
    elif case == "s4d":
        unit = S4D(d, d_state=n).double()
    else:
        raise ValueError(f"d1_profiles: unknown case {case!r}; expected one of {CASES}")
    return unit.eval(), u


def delta_logits(unit: torch.nn.Module, u_k0: torch.Tensor) -> torch.Tensor:
    """The Delta logit(s) w . u_k0 of a selective unit: (1,) for S6, (h,) for B2S6."""
    if isinstance(unit, B2S6):
        return (unit.w.detach() * u_k0.view(unit.h, unit.p)).sum(1)
    return (unit.w.detach() @ u_k0)[None]


def case_curves(case: str, st: dict) -> list[dict]:
    """Per c and region: S (the region's share of sum_k ||J_k||) and the raw norm sum."""
    k0 = st["k0"]
    unit, u = build_case(case, st["d"], st["n"], st["L"], k0, st["h"], st["seed"])
    rows = []
    for c in st["c_values"]:
        v = u.clone()
        v[k0] = c * v[k0]
        norms = jacobian_norms(unit, v)
        total = float(norms.sum())
        for region, raw in region_sums(norms, k0).items():
            S = raw / total
            rows.append({"case": case, "c": float(c), "region": region, "S": S, "norm": raw, "below_precision": S == 0})
    return rows


def loglog_fit(x: np.ndarray, y: np.ndarray, logx: bool = True) -> float:
    """Least-squares slope of ln y on ln x (or on x when ``logx`` is False) over the points with y > 0."""
    keep = y > 0
    if keep.sum() < 2:
        return float("nan")
    xs = np.log(x[keep]) if logx else x[keep]
    return float(np.polyfit(xs, np.log(y[keep]), 1)[0])


def _series(curves: list[dict], case: str, region: str, c_min: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    pts = [(r["c"], r["S"]) for r in curves if r["case"] == case and r["region"] == region and r["c"] >= c_min]
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])


def case_summary(case: str, curves: list[dict], st: dict) -> list[dict]:
    """The fitted asymptotics of one case (see the module docstring)."""
    unit, u = build_case(case, st["d"], st["n"], st["L"], st["k0"], st["h"], st["seed"])
    rows: list[dict] = []

    def add(quantity: str, value: float) -> None:
        rows.append({"case": case, "quantity": quantity, "value": float(value)})

    if case == "s4d":
        base = {r["region"]: r["S"] for r in curves if r["case"] == case and r["c"] == st["c_values"][0]}
        add("max_change", max(abs(r["S"] - base[r["region"]]) for r in curves if r["case"] == case))
        return rows
    logits = delta_logits(unit, u[st["k0"]])
    min_rate = float(unit.A().detach().abs().min())  # the slowest mode sets the decay of the past
    add("regime_c", max(1.0, float(unit.b.detach().abs().max())) / float(logits.abs().min()))
    fit_from, exp_from = st["fit_from"], st["exp_fit_from"]
    for region in REGIONS:
        c, S = _series(curves, case, region, fit_from)
        add(f"slope_{region}", loglog_fit(c, S))
        add(f"min_{region}", S.min())
    if case in ("s6_pos", "s6_neg"):
        region = "before" if case == "s6_pos" else "at"
        c, S = _series(curves, case, region, exp_from)
        predicted = -abs(float(logits[0])) * (min_rate if case == "s6_pos" else 1.0)
        add(f"rate_{region}", loglog_fit(c, S, logx=False))
        add(f"rate_{region}_over_predicted", loglog_fit(c, S, logx=False) / predicted)
        add(f"points_{region}", int((S > 0).sum()))
    return rows


def draw(curves: list[dict], out: Path) -> None:
    titles = {
        "s6_pos": r"S6, $w\cdot u_{k_0} > 0$",
        "s6_neg": r"S6, $w\cdot u_{k_0} < 0$",
        "b2s6_mixed": "B2S6, blocks of both signs",
        "s4d": "S4D",
    }
    fig, axes = plt.subplots(1, len(CASES), figsize=(14, 3.4), sharey=True)
    for ax, case in zip(axes, CASES):
        for region, color in zip(REGIONS, ("tab:blue", "tab:red", "tab:green")):
            c, S = _series(curves, case, region)
            ax.loglog(
                c, np.maximum(S, FLOOR), "o-", ms=3, color=color, label=f"$k {dict(zip(REGIONS, '<=>'))[region]} k_0$"
            )
        ax.set_title(titles[case], fontsize=9)
        ax.set_xlabel("c (scale of $u_{k_0}$)")
        ax.set_ylim(1e-40, 3)
    axes[0].set_ylabel(r"$S_k$ summed over the region (exact 0: below precision)")
    fig.suptitle("D1: relative-gradient profiles against the scale of one input (float64)", fontsize=10, y=1.04)
    legend_outside(fig)
    save_figure(fig, out / "d1_profiles", curves)  # and d1_profiles.csv: the curves it draws


def d1_profiles(spec: dict, out: Path) -> None:
    st = spec["analysis"]["d1_profiles"]
    curves = [row for case in CASES for row in case_curves(case, st)]
    summary = [row for case in CASES for row in case_summary(case, curves, st)]
    write_csv(out / "summary.csv", summary, checksum=True)  # the claims verify it
    draw(curves, out)
