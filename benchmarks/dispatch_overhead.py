"""Overhead of one step dispatched through submitit to SLURM: submit -> job start, job end -> step done.

Runs a tiny heads training cell (one leaf, a few steps) through `python -m seqmix train --dispatch` N
times on the SLURM this machine reaches (e.g. `scripts/slurm-local.sh up`) and reads the timestamps the
step's log carries. Usage:

    python benchmarks/dispatch_overhead.py [--repeats 5] [--markdown benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"


def _t(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def one(tmp: Path) -> dict:
    from seqmix.config.base import load_yaml
    from seqmix.config.leaves import cell_run_config, expand_cells

    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    exp = paper["experiments"]["exp1"]
    paper["experiments"] = {"exp1": exp}
    exp["variants"] = {"k2": exp["variants"]["k2"]}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=[1], cell_size=1)
    exp["scales"]["tiny"]["set"]["train"].update(steps=10, checkpoint_every=10)
    (name, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    run = cell_run_config(
        "heads", name, cell, leaves, "tiny", {"results": str(tmp / "results"), "tracking": {"uri": "none"}}
    )
    (tmp / "run.json").write_text(json.dumps(run))
    (tmp / "dispatch.json").write_text(
        json.dumps(
            {
                "mode": "submitit",
                "cluster": "slurm",
                "folder": str(tmp / "submitit"),
                "poll_s": 0.5,
                "rules": ["train"],
                "resources": {"default": {"timeout_min": 5, "mem_gb": 1, "cpus_per_task": 1}},
            }
        )
    )
    t0 = time.time()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqmix",
            "train",
            "--run",
            str(tmp / "run.json"),
            "--out",
            str(tmp / "out.json"),
            "--dispatch",
            str(tmp / "dispatch.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    t_end = time.time()
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    err = r.stderr
    submitted = _t(re.search(STAMP + r" seqmix.pipeline.dispatch INFO submitted", err).group(1))
    started = _t(re.search(r"submitit INFO \(" + STAMP + r"\) - Starting with JobEnvironment", err).group(1))
    finished = _t(re.search(r"submitit INFO \(" + STAMP + r"\) - Job completed successfully", err).group(1))
    return {"submit_to_start_s": started - submitted, "end_to_done_s": t_end - finished, "process_s": t_end - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    rows = []
    for _i in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            rows.append(one(Path(d)))
        print(rows[-1])
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    mx = {k: max(r[k] for r in rows) for k in rows[0]}
    text = (
        f"{args.repeats} dispatched jobs: submit->start mean {mean['submit_to_start_s']:.2f} s (max "
        f"{mx['submit_to_start_s']:.2f}), job end->step done mean {mean['end_to_done_s']:.2f} s (max "
        f"{mx['end_to_done_s']:.2f}), overhead per job {mean['submit_to_start_s'] + mean['end_to_done_s']:.2f} s; "
        f"whole `seqmix train --dispatch` process {mean['process_s']:.2f} s"
    )
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\n### Dispatch overhead (submitit on the local one-node SLURM)\n\n{text}\n")


if __name__ == "__main__":
    main()
