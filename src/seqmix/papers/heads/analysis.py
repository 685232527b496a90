"""What the heads paper computes without training: long ``quantity,value`` rows that the claims and the
figures read.

- ``theory``: the closed forms of spec §4 (interaction rank, Eckart-Young optimum MSE*(H), singular values)
  at the spec's n and the run's n -> theory/summary.csv
- ``theory_checks``: the measured quantities of the theory checks T1-T6 -> theory_checks/summary.csv
  (their verdicts are the ``check-T*`` claims)
- ``spectrum``: singular values of the trained k = 4 students' interaction operators (Figure 3 right)
  -> spectrum/summary.csv
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import torch

from ...report.tables import write_csv
from ...results import is_done, leaf_marker
from . import checks

log = logging.getLogger("seqmix.papers.heads")


def _grid(spec: dict, spec_n: int) -> tuple[list[int], list[int]]:
    """(ns, ks): the spec's n and every n of Exp. I at this scale; Exp. I's teacher ranks k."""
    exp = spec["resolved"]["exp1"]
    return sorted({spec_n} | {v["task"]["n"] for v in exp.values()}), sorted({v["task"]["k"] for v in exp.values()})


def theory(spec: dict, out: Path) -> None:
    from ...ops.lowrank import optimal_mse
    from ...tasks.rotation_teacher import lag_operators
    from .theory.closed_forms import interaction_rank, singular_values

    st = spec["analysis"]["theory"]
    ns, ks = _grid(spec, st["spec_n"])
    rows = []
    for n in ns:
        for k in ks:
            W = lag_operators(k, n)
            rows.append({"quantity": "interaction_rank", "k": k, "n": n, "H": "", "value": interaction_rank(W)})
            rows.append({"quantity": "total_variance", "k": k, "n": n, "H": 0, "value": optimal_mse(W, 0)})
            rows += [{"quantity": "mse_opt", "k": k, "n": n, "H": h, "value": optimal_mse(W, h)} for h in st["heads"]]
            for i, s in enumerate(singular_values(W)[: k + st["extra_singular_values"]], 1):
                rows.append({"quantity": "singular_value", "k": k, "n": n, "H": i, "value": s})
    write_csv(out / "summary.csv", rows, checksum=True)  # the claims verify it


def theory_checks(spec: dict, out: Path) -> None:
    st = spec["analysis"]["theory_checks"]
    ns, ks = _grid(spec, st["spec_n"])
    rows = (
        checks.check_t1(ns, st["t1"]["restarts"], st["t1"]["context_ks"])
        + checks.check_t2_t3(ks, ns)
        + checks.check_t4(**st["t4"])
        + checks.check_t5(**st["t5"])
        + checks.check_t6(ks, ns, **st["t6"])
    )
    write_csv(out / "summary.csv", rows, checksum=True)  # the claims verify it


def spectrum_leaves(spec: dict) -> list[dict]:
    """The trained Exp. I leaves Figure 3 right reads: the artefact's leaves with H in the slice's heads."""
    heads = set(spec["analysis"]["spectrum"]["heads"])
    leaves = [leaf for leaf in spec["inputs"]["leaves"]["exp1"] if leaf["config"].get("sweep_value") in heads]
    if not leaves:
        raise SystemExit(f"spectrum: no exp1 leaves with H in {sorted(heads)} among the artefact's inputs")
    return leaves


def spectrum(spec: dict, out: Path) -> None:
    """sigma_l and sigma_l / sigma_1 of the pair unfolding of each trained student's K_ij = sum_h
    alpha_ij^(h) V^(h) (float64), and of the teacher's."""
    from ...tasks.rotation_teacher import teacher_operator
    from ...training.loop import load_trained
    from .theory.closed_forms import operator_spectrum

    rows = []
    for leaf in spectrum_leaves(spec):
        out_dir = Path(leaf["out_dir"])
        if not is_done(leaf_marker(out_dir, "train"), leaf["hash"]):
            raise SystemExit(f"spectrum: {leaf['id']} is not trained for this config ({leaf_marker(out_dir, 'train')})")
        task, model = load_trained(leaf["config"], out_dir)
        with torch.no_grad():  # K formed in float64 from the trained (float32) parameters, then its SVD
            s = operator_spectrum(copy.deepcopy(model.mixer).double().interaction_operator())
        for i, v in enumerate(s.tolist(), 1):
            rows.append(
                {
                    "source": "student",
                    "k": task.k,
                    "n": task.n,
                    "H": leaf["config"]["sweep_value"],
                    "seed": leaf["config"]["seed"],
                    "index": i,
                    "sigma": v,
                    "sigma_rel": v / s[0].item(),
                }
            )
    k, n = task.k, task.n
    s = operator_spectrum(teacher_operator(k, n))
    for i, v in enumerate(s.tolist(), 1):
        rows.append(
            {
                "source": "teacher",
                "k": k,
                "n": n,
                "H": "",
                "seed": "",
                "index": i,
                "sigma": v,
                "sigma_rel": v / s[0].item(),
            }
        )
    write_csv(out / "summary.csv", rows, checksum=True)  # the claims verify it
