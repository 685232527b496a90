"""The ``theory`` artefact: everything of the superposition paper that trains nothing, as long
``quantity,value`` rows (summary.csv, read by the claims as table ``theory``) plus the data files the
figures draw from.

Writes into ``out``: summary.csv; bounds.csv (E10 per-instance rows); mobius_summary.csv, mobius_trace.csv
(E3); gradlaw.csv (E6); conjd.csv (E7); ladder.csv (E11 selectivity ladder).

Settings (``analysis`` block): ``setting`` = the paper's graph and model sizes {n, p, depth, d} (np = n p);
the Monte-Carlo and optimisation sizes per scale (see config/papers/superposition.yaml).
"""

from __future__ import annotations

from pathlib import Path

from ...report.tables import write_csv
from . import analysis_bounds, analysis_reduced
from .inputs import setting
from .quantities import Quantities


def paper_setting(spec: dict) -> dict:
    """{n, p, depth, d, np} of ``analysis.setting``; np = n p as a float (the seeds of the Monte-Carlo
    generators hash it, so 2.0 and 2 are different streams)."""
    s = dict(setting(spec, "setting"))
    missing = {"n", "p", "depth", "d"} - set(s)
    if missing:
        raise KeyError(f"config/papers/superposition.yaml: analysis.setting lacks {sorted(missing)}")
    s["np"] = round(float(s["n"]) * float(s["p"]), 12)
    return s


def closed_forms(q: Quantities, s: dict) -> None:
    """E10 closed forms at k_c = np^c (Lemmas 18/27, Prop. 1, T1, Lemma 20/App. H, phase thresholds)."""
    from .theory import closed_forms as CF

    np_, n, p, d = s["np"], s["n"], s["p"], s["d"]
    ks = [np_**c for c in range(s["depth"] + 2)]
    for c in range(s["depth"] + 1):
        k, K = ks[c], ks[c + 1]
        q.add(f"alpha_star_c{c}", CF.alpha_star(k, K))
        q.add(f"cos_at_alpha_star_c{c}", CF.cos_step(CF.alpha_star(k, K), k, K))
        q.add(f"cos_at_zero_c{c}", CF.cos_step(0.0, k, K))
        q.add(f"cos_at_8.7_c{c}", CF.cos_step(8.7, k, K))  # the paper's trained α ≈ 8.7
        q.add(f"cos_d1_at_alpha_star_c{c}", CF.cos_step_d1(CF.alpha_star(k, K), k, K))
    # Lemma 27 curvature at a frontier that doubles (k, 2k) and one that does not (7, 15)
    for k, K in ((1, 2), (4, 8), (7, 15)):
        q.add(f"curv_numeric_k{k}_K{K}", CF.curvature_numeric(k, K))
        q.add(f"curv_corrected_k{k}_K{K}", CF.curvature_corrected(k, K))
        q.add(f"curv_paper_k{k}_K{K}", CF.curvature_paper(k, K))
    q.add("prop1_ceiling_np2", CF.prop1_ceiling(2))
    q.add("prop1_ceiling_np4", CF.prop1_ceiling(4))
    q.add("T1_cascade_2^-1/2", 2**-0.5)
    q.add("T1_e2e_2^-3/2", 2**-1.5)
    for D, npp in ((3, 2), (4, 2), (4, 4), (5, 2)):  # Prop. 7 attenuation on a grid of depths and np
        for c in range(D - 1):
            q.add(f"e2e_factor_D{D}_np{npp:g}_c{c}", CF.e2e_attenuation(npp, D, c))
    for k in (1, 2, 4, 8):
        q.add(f"ladder_gamma_k{k}", CF.ladder_gamma(d, k, 2 * (n - 1), 0.1))
    q.add("gamma_sat_k4", CF.gamma_sat(d, 4, n))
    q.add("gamma_sat_k8", CF.gamma_sat(d, 8, n))
    q.add(f"hessian_gap_bound_n{n}_d{d}", CF.hessian_gap_bound(d, n))
    q.add(f"diag_advantage_theta_n{n}_p{p:g}", n**1.5 / p)
    q.add("depth_advantage_D3", n * 3 / np_**2)
    q.add("depth_advantage_D4", n * 4 / np_**3)
    b_one, b_three = CF.phase_betas(np_, s["depth"], np_ ** (s["depth"] - 1))
    q.add(f"beta_I_D{s['depth']}_np{np_:g}", b_one)
    q.add(f"beta_III_D{s['depth']}_np{np_:g}", b_three)
    q.add(f"expected_edges_n{n}_p{p:g}", n * (n - 1) * p)


def mobius_algebra(q: Quantities, s: dict) -> None:
    """Prop. 2/3: on {A = 0} every step gets α* at once; Lemma 29's dL/dt against autograd."""
    import torch

    from .theory import reduced as T

    kt = torch.tensor([s["np"] ** c for c in range(s["depth"])], dtype=torch.float64)
    Kt = kt * s["np"]
    errs = []
    for eta, a in ((-1.274, 1 / 1.274), (-2.0, 0.5), (-0.8, 1.25)):  # points with A = 1 + ηa = 0
        theta = torch.tensor([[1.3, a, -0.1, eta]], dtype=torch.float64)
        ae = T.mobius_alpha_eff(theta, kt, Kt, relu=False)[0]
        errs.append(float((ae - (Kt - kt) / kt.sqrt()).abs().max()))
    q.add("mobius_A0_alpha_err", max(errs))
    lz = [
        abs(T.lemma29_dL_dt(alpha, t, kt, Kt) - T.lemma29_autograd(alpha, t, kt, Kt))
        for alpha, t in ((3.0, 0.5), (1.2, -0.3), (5.0, 2.0))
    ]
    q.add("lemma29_abs_err", max(lz))


def set_sizes(q: Quantities, spec: dict, s: dict) -> None:
    """Monte-Carlo set sizes (spec §2.1 table) at the paper's (n, p), and at np = 4 (``mc_np4_p``)."""
    from ...tasks.reachability import set_size_table

    hops = setting(spec, "mc_hops")
    for r in set_size_table(s["n"], s["p"], hops, setting(spec, "mc")):
        for key, val in r.items():
            if key != "c":
                q.add(f"mc_{key}_c{r['c']}", val)
    p4 = setting(spec, "mc_np4_p")
    tag = f"mc_np{round(s['n'] * p4, 9):g}"
    for r in set_size_table(s["n"], p4, hops, setting(spec, "mc_np4")):
        if r["c"] != "edges":
            q.add(f"{tag}_E_k_c{r['c']}", r["E_k"])
            if "P_mf0" in r:
                q.add(f"{tag}_P_mf0_c{r['c']}", r["P_mf0"])


def theory(spec: dict, out: Path) -> None:
    """Every no-training quantity of the paper -> ``out``/summary.csv and the data files listed above."""
    out = Path(out)
    s = paper_setting(spec)
    q = Quantities()
    closed_forms(q, s)
    mobius_algebra(q, s)
    set_sizes(q, spec, s)
    analysis_reduced.mobius(q, spec, s, out)
    analysis_reduced.gradient_law(q, spec, out)
    analysis_reduced.conjecture_d(q, spec, s, out)
    analysis_reduced.diagonal_advantage(q, spec, s)
    analysis_bounds.bounds(q, spec, s, out)
    analysis_reduced.ladder(q, spec, s, out)
    write_csv(out / "summary.csv", q.rows, checksum=True)  # the claims verify it
