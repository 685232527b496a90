"""Reduced models of the superposition paper (no training of the full model): the Möbius scalar model (E3),
the e2e gradient-decay law (E6), Conjecture D (E7), the App. H.1 diagonal advantage and the E11 selectivity
ladder. Each adds its summary quantities to the ``theory`` rows and writes its data file into ``out``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...report.stats import linear_fit
from ...report.tables import write_csv
from .inputs import setting
from .quantities import Quantities

GENERIC_INITS = 8  # generic Möbius inits beside the spec's suggested one


def mobius(q: Quantities, spec: dict, s: dict, out: Path) -> None:
    """E3: Adam on the reduced Möbius loss from the spec's init and generic ones, ReLU and linear channels.
    -> mobius_summary.csv (one row per form and init), mobius_trace.csv (A, B, loss every 100 steps)."""
    import torch

    from .theory import reduced as T

    inits = torch.cat([torch.tensor([T.SPEC_INIT], dtype=torch.float64), T.mobius_inits(GENERIC_INITS)])
    labels = ["spec-init"] + [f"generic-{i}" for i in range(GENERIC_INITS)]
    summ, trace = [], []
    forms = (("relu", True), ("linear", False))
    n = len(labels)
    # both forms in one batch of 2n rows (the first n ReLU): half the Python steps, each row as alone
    both = T.train_mobius(
        inits.repeat(2, 1),
        np_=s["np"],
        D=s["depth"],
        steps=setting(spec, "mobius_steps"),
        relu=torch.arange(2 * n) < n,
        log_every=100,
    )
    for f, (form, relu) in enumerate(forms):
        res = {"theta": both["theta"][f * n : (f + 1) * n], "k": both["k"], "K": both["K"]}
        res["trace"] = [{**r, "run": r["run"] - f * n} for r in both["trace"] if f * n <= r["run"] < (f + 1) * n]
        A, B = T.mobius_AB(res["theta"])
        rows = []
        for i, lab in enumerate(labels):
            th = res["theta"][i]
            rows.append(
                {
                    "form": form,
                    "init": lab,
                    "alpha0": float(inits[i, 0]),
                    "a0": float(inits[i, 1]),
                    "b0": float(inits[i, 2]),
                    "eta0": float(inits[i, 3]),
                    "alpha": float(th[0]),
                    "a": float(th[1]),
                    "b1": float(th[2]),
                    "eta": float(th[3]),
                    "A": float(A[i]),
                    "absA": abs(float(A[i])),
                    "B": float(B[i]),
                    "loss": float(T.mobius_loss(th[None], res["k"], res["K"], relu)[0]),
                }
            )
        trace += [{"form": form, "init": labels[r["run"]], **r} for r in res["trace"]]
        for key in ("a", "b1", "eta", "alpha", "absA"):
            q.add(f"mobius_{form}_spec_init_{key}", rows[0][key])
        generic = [r for r in rows if r["init"] != "spec-init"]
        q.add(f"mobius_{form}_generic_frac_absA_lt_1e-14", np.mean([r["absA"] < 1e-14 for r in generic]))
        q.add(f"mobius_{form}_generic_median_absA", float(np.median([r["absA"] for r in generic])))
        q.add(f"mobius_{form}_b1_negative_all", float(all(r["b1"] < 0 for r in rows)))
        summ += rows
    write_csv(out / "mobius_summary.csv", summ)
    write_csv(out / "mobius_trace.csv", trace)


def gradient_law(q: Quantities, spec: dict, out: Path) -> None:
    """E6: R_c = |∂L_e2e/∂β_c| / |∂L_c/∂β_c| on the reduced model over (np, depth) with np^L <= n^0.8 (the
    tree-like regime), at uniform and ideal attention; slope of log10 R on (L - 1 - c) log10 np (Prop. 7:
    -1/2). -> gradlaw.csv."""
    from .theory import reduced as T

    n, batch = setting(spec, "gl_n"), setting(spec, "gl_batch")
    rows = []
    for npp in setting(spec, "gl_np"):
        for L in setting(spec, "gl_depths"):
            if npp**L > n**0.8:
                continue
            for point in ("uniform", "ideal"):
                rows += T.gradient_law(n, float(npp), L, batch, point=point)
    write_csv(out / "gradlaw.csv", rows)
    df = pd.DataFrame(rows)
    for point in ("uniform", "ideal"):
        sub = df[(df.point == point) & (df.depth_after > 0)]
        q.add(f"gradlaw_slope_{point}", linear_fit(sub["x"], sub["log10_R"]).slope)


def conjecture_d(q: Quantities, spec: dict, s: dict, out: Path) -> None:
    """E7 (App. H.5): R(γ) = ||∇_off|| / ||∇_diag|| along W^emb = γ(I - J/n); the fraction of points whose
    largest R over layers is < 1. -> conjd.csv."""
    from .theory import wemb as W

    rows = W.conjecture_d(setting(spec, "conjd"), n=s["n"], np_=s["np"], L=s["depth"], d=s["d"])
    write_csv(out / "conjd.csv", rows)
    df = pd.DataFrame(rows)
    per_point = df.groupby("point")["R"].max()
    q.add("conjD_frac_R_lt_1", float((per_point < 1).mean()))
    q.add("conjD_frac_R_lt_1_IJ", float((df.groupby("point")["R_IJ"].max() < 1).mean()))
    q.add("conjD_points", len(per_point))


def diagonal_advantage(q: Quantities, spec: dict, s: dict) -> None:
    """App. H.1: the population gradient of L_sup at W^emb = 0 favours the diagonal."""
    from .theory import wemb as W

    da = W.diagonal_advantage(n=s["n"], np_=s["np"], L=s["depth"], d=s["d"], batches=setting(spec, "diag_batches"))
    q.add("diag_adv_signed_ratio", da["signed_ratio"])
    q.add("diag_adv_abs_ratio", da["abs_ratio"])
    q.add("diag_adv_row_sum_rel", da["row_sum_rel"])


def ladder(q: Quantities, spec: dict, s: dict, out: Path) -> None:
    """E11 (no paper numbers): selectivity S_c and cos(z_{c+1}) against one shared β on the reduced model;
    β*_c (first β with S_c >= 0.9) must grow with c, like sqrt(k_c). -> ladder.csv."""
    from .theory import reduced as T

    grid = setting(spec, "ladder_betas")
    betas = np.geomspace(grid["start"], grid["stop"], grid["num"])
    rows = T.selectivity_ladder(setting(spec, "ladder_n"), s["np"], s["depth"], setting(spec, "ladder_batch"), betas)
    write_csv(out / "ladder.csv", rows)
    star = T.ladder_thresholds(rows)
    for c, b in star.items():
        q.add(f"ladder_beta_star_c{c}", b)
    q.add("ladder_strictly_increasing", float(all(star[c + 1] > star[c] for c in range(len(star) - 1))))
    kc = {r["c"]: r["k_c"] for r in rows}
    last = max(star)
    q.add(f"ladder_ratio_c{last}_c0", star[last] / star[0])
    q.add(f"ladder_sqrt_k{last}_over_k0", float(np.sqrt(kc[last] / kc[0])))
