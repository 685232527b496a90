"""Run the heavy stages (train -> evaluate / diagnose) of cells whose run configs Snakemake already wrote,
outside Snakemake: on a lent GPU machine that has PyTorch but not this project's environment (no Snakemake,
MLflow or jsonschema), with many cells at once on one card. Snakemake picks the results up afterwards: a
cell's stage marker is the rule's output, so a later `snakemake` run skips what finished here.

    # here, with the project's venv: the run configs (and the MLflow store, which the train rule reads: made
    # later, it would be newer than the markers and re-run every train job), then the plan
    snakemake --config scale=cpu 'papers=[rotations]' --until run_config dispatch_config mlflow_init --cores 2
    python scripts/run_cells.py plan --scale cpu --papers rotations --out plan.json

    # there (PYTHONPATH=src): every cell of the plan, 12 at a time, on the GPU, stop starting cells at 400 s
    python scripts/run_cells.py run --plan plan.json --device cuda --workers 12 --deadline-s 400

The run configs are not edited: ``--device`` writes each cell's run config with ``runtime.device`` replaced
to a scratch copy, and that copy is what the stages read (the device is recorded in the stage's marker
JSON and tracking buffer as the runtime resolved it). A cell whose marker exists is skipped, so a cut-off
run resumes; training resumes from its checkpoint. Logs go where Snakemake's rules put them
(``<results>/<paper>/logs/<stage>/<experiment>.<cell>.log``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def plan(args) -> None:
    """Cells of the given papers (experiments in --order first, then the rest) and the stages each runs."""
    import yaml

    from seqmix import results as layout
    from seqmix.config import artefacts as A
    from seqmix.config.leaves import expand_cells
    from seqmix.config.loading import load_all

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg.update(scale=args.scale, papers=list(args.papers))
    papers = load_all(cfg, str(ROOT))["papers"]
    results = layout.scale_root(cfg["results"], args.scale)
    order = {name: i for i, name in enumerate(args.order)}
    cells = []
    for paper, pcfg in papers.items():
        for experiment, cell in expand_cells(paper, pcfg, args.scale):
            if f"{paper}:{experiment}" in args.skip:
                continue
            run = layout.cell_run_path(results, paper, experiment, cell)
            if not run.exists():
                raise SystemExit(f"{run} is missing: write the run configs first (snakemake --until run_config)")
            stages = A.stages_of(pcfg, experiment)
            cells.append(
                {
                    "key": f"{paper}:{experiment}",
                    "run": str(run),
                    "stages": stages,
                    "markers": [str(layout.cell_marker(results, paper, experiment, cell, s)) for s in stages],
                    "logs": [str(results / paper / "logs" / s / f"{experiment}.{cell}.log") for s in stages],
                }
            )
    cells.sort(key=lambda c: order.get(c["key"], len(order)))
    Path(args.out).write_text(json.dumps(cells, indent=1))
    print(f"{len(cells)} cells -> {args.out}")


def _device_copy(run_path: str, device: str | None, scratch: Path) -> str:
    if not device:
        return run_path
    run = json.loads(Path(run_path).read_text())
    run.setdefault("runtime", {})["device"] = device
    copy = scratch / f"{Path(run_path).parent.parent.name}.{Path(run_path).name}"
    copy.write_text(json.dumps(run))
    return str(copy)


def _run_cell(cell: dict, device: str | None, scratch: Path, threads: int, stop_at: float) -> str:
    run = _device_copy(cell["run"], device, scratch)
    for stage, marker, log in zip(cell["stages"], cell["markers"], cell["logs"], strict=True):
        if Path(marker).exists():
            continue
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "seqmix", stage, "--run", run, "--out", marker, "--threads", str(threads)]
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, stderr=err, cwd=ROOT)
            while proc.poll() is None:
                if time.time() > stop_at:  # the hard deadline: the checkpoint on disk is what resumes
                    proc.terminate()
                    proc.wait(30)
                    return f"{stage} stopped at the deadline"
                time.sleep(0.5)
        if proc.returncode:
            return f"{stage} failed (exit {proc.returncode}; {log})"
    return "done"


def run(args) -> None:
    cells = json.loads(Path(args.plan).read_text())
    todo = [c for c in cells if not all(Path(m).exists() for m in c["markers"])]
    t0 = time.time()
    start_until, stop_at = t0 + args.deadline_s, t0 + args.deadline_s + args.grace_s
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    print(f"{len(todo)} of {len(cells)} cells to run, {args.workers} at a time, device {args.device}", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="seqmix-cells-"))
    counts: dict[str, int] = {}
    given_up = 0
    with ThreadPoolExecutor(args.workers) as pool:
        pending, queue = {}, list(todo)
        while queue or pending:
            while queue and len(pending) < args.workers and time.time() < start_until:
                cell = queue.pop(0)
                pending[pool.submit(_run_cell, cell, args.device, scratch, args.threads, stop_at)] = cell
            if not pending:
                break
            done, _ = wait(pending, timeout=5, return_when=FIRST_COMPLETED)
            for fut in done:
                cell = pending.pop(fut)
                status = fut.result()
                counts[status.split(" (")[0]] = counts.get(status.split(" (")[0], 0) + 1
                print(f"[{time.time() - t0:6.0f} s] {cell['run']}: {status}", flush=True)
            finished = sum(counts.values())
            if queue and finished >= args.give_up_after and counts.get("done", 0) == 0:
                print(f"the first {finished} cells all failed: starting no more (see their logs)", flush=True)
                given_up += len(queue)
                queue.clear()
    left = len(queue) + given_up
    print(f"finished in {time.time() - t0:.0f} s: {counts}; {left} not started", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("plan", help="list the cells of papers whose run configs exist (needs the project's venv)")
    sp.add_argument("--scale", required=True)
    sp.add_argument("--papers", nargs="+", required=True)
    sp.add_argument("--order", nargs="*", default=[], help="paper:experiment keys to run first, in this order")
    sp.add_argument("--skip", nargs="*", default=[], help="paper:experiment keys to leave out")
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=plan)
    sp = sub.add_parser("run", help="run a plan's cells in parallel (needs only PyTorch and PyYAML)")
    sp.add_argument("--plan", required=True)
    sp.add_argument("--device", help="runtime.device for every cell (e.g. cuda); default: the run config's")
    sp.add_argument("--workers", type=int, default=2)
    sp.add_argument("--threads", type=int, default=1, help="torch threads per stage process")
    sp.add_argument("--deadline-s", type=float, default=float("inf"), help="start no cell after this many seconds")
    sp.add_argument("--grace-s", type=float, default=60.0, help="then stop running stages this much later")
    sp.add_argument(
        "--give-up-after", type=int, default=4, help="start no more cells once this many failed and none ran"
    )
    sp.set_defaults(fn=run)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
