"""glibc allocator settings for job processes: before/after on a step that allocates large CPU tensors.

Runs the same workload (B2S6 forward + backward at d_state n = 16, one thread) in two fresh subprocesses, one
with the environment as it is (GLIBC_TUNABLES unset) and one with ``seqmix.training.allocator.GLIBC_TUNABLES``
(what the workflow and the submitit executors give their jobs), and prints per step: wall and CPU seconds,
minor page faults, and the peak resident set. Ratios are default / tuned.

    python benchmarks/allocator.py [--batch 4] [--length 512] [--width 128] [--steps 3] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKLOAD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
from seqmix import registry
from seqmix.mixers.base import build_mixer
registry.load_all()
batch, length, width, steps = map(int, sys.argv[1:5])
torch.manual_seed(0)
m = build_mixer("b2s6", width, blocks=8, d_state=16)
x = torch.randn(batch, length, width)
def step():
    m.zero_grad(set_to_none=True)
    m(x).sum().backward()
step()  # warm-up: first-touch faults are not the steady state
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(steps):
    step()
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": (time.perf_counter() - t0) / steps, "cpu_s": (time.process_time() - c0) / steps,
                  "faults": (r.ru_minflt - f0) / steps, "peak_mb": r.ru_maxrss / 1024}))
"""


def run(args, tunables: str | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(args.batch), str(args.length), str(args.width), str(args.steps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from seqmix.training.allocator import GLIBC_TUNABLES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    before, after = run(args, None), run(args, GLIBC_TUNABLES)
    lines = [
        f"B2S6 forward+backward, batch {args.batch}, length {args.length}, width {args.width}, d_state 16, "
        f"1 thread; tuned: GLIBC_TUNABLES={GLIBC_TUNABLES}",
        "",
        "| allocator | wall s/step | CPU s/step | minor faults/step | peak MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, m in (("glibc default", before), ("tuned", after)):
        lines.append(f"| {name} | {m['wall_s']:.3f} | {m['cpu_s']:.3f} | {m['faults']:.0f} | {m['peak_mb']:.0f} |")
    lines.append(
        f"| default / tuned | {before['wall_s'] / after['wall_s']:.2f}x | {before['cpu_s'] / after['cpu_s']:.2f}x "
        f"| {before['faults'] / max(after['faults'], 1):.1f}x | {before['peak_mb'] / after['peak_mb']:.2f}x |"
    )
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\n{text}\n")


if __name__ == "__main__":
    main()
