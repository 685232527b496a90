"""Cost of the training loop (seqmix.training.loop.train) against a bare torch loop, same model, batches and steps.

The bare loop builds the same task and model, draws the same batches (``task.batch(seed, step, 0, batch)``)
and runs forward, loss, zero_grad, backward, optimizer and scheduler steps: nothing else. The training loop
adds the NaN/Inf guard, logging, checkpoints, the final model file and, when the leaf has ``eval.every``,
the in-training diagnostics; it is timed with them on and with them switched off (``eval.every: 0``).
Both are timed end to end (build included) in the same process, interleaved, ``--repeats`` times, in CPU
seconds of the process (one torch thread; robust to other load on the machine); the ratios are of the
medians. Target: training loop without diagnostics <= 1.10 x bare.

    python benchmarks/loop_overhead.py [--repeats 5] [--threads 1] [--markdown benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
# CPU seconds of this process: on a machine shared with other work, wall time measures the neighbours too
CLOCK = time.process_time
# (paper, experiment, variant, leaf index among that variant's tiny leaves)
LEAVES = [("heads", "exp1", "k8", 3), ("superposition", "e1", "sup", 0)]


def tiny_leaf(paper: str, experiment: str, variant: str, index: int) -> dict:
    from seqmix import registry
    from seqmix.config.base import load_yaml
    from seqmix.config.leaves import expand_leaves

    registry.load_all()
    cfg = load_yaml(ROOT / "config" / "papers" / f"{paper}.yaml")
    leaves = [
        leaf for leaf in expand_leaves(paper, cfg, "tiny") if leaf.experiment == experiment and leaf.variant == variant
    ]
    return leaves[index].config


def bare(cfg: dict) -> float:
    """Seconds of a plain torch loop over the leaf's steps (build included)."""
    from seqmix.training.loop import build
    from seqmix.training.optim import build_optimizer, build_scheduler

    t0 = CLOCK()
    tcfg, seed = cfg["train"], int(cfg["seed"])
    task, model = build(cfg)
    opt = build_optimizer(model.parameters(), tcfg)
    sched = build_scheduler(opt, tcfg)
    model.train()
    for step in range(tcfg["steps"]):
        x, y = task.batch(seed, step, 0, tcfg["batch"])
        loss = task.loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    return CLOCK() - t0


def full(cfg: dict, out: Path) -> tuple[float, dict]:
    from seqmix.io import config_hash
    from seqmix.training.loop import train

    t0 = CLOCK()
    result = train(cfg, out, config_hash(cfg))
    return CLOCK() - t0, result.get("diagnostics", {})  # older loops did not count them


def measure(cfg: dict, repeats: int) -> dict:
    no_diag = copy.deepcopy(cfg)
    no_diag["eval"] = dict(cfg.get("eval") or {}, every=0)
    has_diag = bool((cfg.get("eval") or {}).get("every"))
    times: dict[str, list[float]] = {"bare": [], "loop": [], "loop_no_diag": []}
    diag = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats + 1):  # the first round warms up (imports, allocator) and is dropped
            b = bare(cfg)
            f, diag = full(cfg, Path(tmp) / f"on{r}")
            n = full(no_diag, Path(tmp) / f"off{r}")[0] if has_diag else f
            if r:
                times["bare"].append(b), times["loop"].append(f), times["loop_no_diag"].append(n)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "steps": cfg["train"]["steps"],
        "bare_s": med["bare"],
        "loop_s": med["loop"],
        "loop_no_diag_s": med["loop_no_diag"],
        "ratio": med["loop"] / med["bare"],
        "ratio_no_diag": med["loop_no_diag"] / med["bare"],
        "diag_calls": diag.get("calls", 0),
        "diag_s": diag.get("seconds", 0.0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--markdown", help="append the table to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import logging

    logging.basicConfig(level=logging.WARNING)
    lines = [
        "| leaf | steps | bare s | loop s (x bare) | loop, diagnostics off s (x bare) | diagnostics: calls, s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for paper, exp, variant, index in LEAVES:
        cfg = tiny_leaf(paper, exp, variant, index)
        m = measure(cfg, args.repeats)
        name = f"{paper}/{exp}/{cfg['variant']}/{cfg['point']}/seed{cfg['seed']}"
        lines.append(
            f"| {name} | {m['steps']} | {m['bare_s']:.3f} | {m['loop_s']:.3f} ({m['ratio']:.3f}x) | "
            f"{m['loop_no_diag_s']:.3f} ({m['ratio_no_diag']:.3f}x) | {m['diag_calls']}, {m['diag_s']:.3f} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\n{text}\n")


if __name__ == "__main__":
    main()
