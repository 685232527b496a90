"""One Sessa layer against one Transformer layer on CPU: forward + backward time and peak memory (a benchmark,
not a test; sessa spec §2.2 "efficient implementation notes", issue 13).

Layers, all at the same width D and forward heads H (default D = 64, H = 4, batch 1, float32, one thread):
- ``sessa``: the Sessa block (LN, W_in, GELU, Sessa mixer, gate, W_out) as the experiments run it; its
  feedback branch saves one T x T per sequence (ops/feedback_solve/saved_once.py);
- ``sessa (composed autograd)``: the same block with the feedback branch composed from torch ops under plain
  autograd (the path before issue 13: softmax output, masked alpha, -B_fb and two masks saved), for the
  memory change;
- ``transformer (shared)``: the Sessa block around causal RoPE softmax attention (sessa spec §2.4 Option A, what the
  tables run); the baseline of every ratio;
- ``transformer (native)``: pre-LN attention + MLP (ratio 4), ``block: native`` (sessa spec §2.4 Option B).

Each (layer, T) runs in a fresh process: time = median over ``--reps`` forward + backward runs after one
warm-up, as wall and as CPU seconds of the process (the ratios use CPU seconds: the box is shared); peak =
rise of the process's peak resident set (VmHWM) over the run, as in benchmarks/mixers.py; saved = what
autograd keeps for backward (distinct storages, torch.autograd.graph.saved_tensors_hooks) and how many
float32 T x T matrices of it end in (T, T), per sequence (counted at length T + 1, so that no activation of
width D, 2D or 4D passes for T x T). The script writes the table to benchmarks/sessa_layer_results.md
(date, machine, command).

    python benchmarks/sessa_layer.py [--lengths 256 1024 4096] [--width 64] [--heads 4] [--batch 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

LAYERS = ("transformer (shared)", "transformer (native)", "sessa", "sessa (composed autograd)")
BASELINE = "transformer (shared)"


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def build_layer(name: str, D: int, H: int):
    """One layer as the models build it (seqmix.models.blocks.make_blocks)."""
    from seqmix.models.blocks import make_blocks
    from seqmix.ops import feedback_solve as fs

    attention = {"name": "softmax_attention", "heads": H, "position": "rope"}
    if name == "transformer (shared)":
        return make_blocks(D, 1, attention, "gated", 4 * D, "layernorm", None, None)[0]
    if name == "transformer (native)":
        return make_blocks(D, 1, attention, "native", 4 * D, "layernorm", None, None)[0]
    block = make_blocks(D, 1, {"name": "sessa", "heads": H}, "gated", 4 * D, "layernorm", None, None)[0]
    if name == "sessa (composed autograd)":
        mixer = block.mixer

        def composed(a):  # the pre-issue-13 path: every intermediate kept by autograd
            return fs.feedback_solve(mixer.forward_branch(a), mixer.gamma(a), mixer.feedback_weights(a))

        mixer.forward = composed
    return block


def _saved_bytes(layer, x) -> tuple[int, float]:
    """Bytes autograd keeps for backward (distinct storages, parameters excluded) and how many float32 T x T
    matrices they hold."""
    import torch

    T, kept = x.shape[1], {}
    weights = {p.untyped_storage().data_ptr() for p in layer.parameters()}  # a D x D weight is no T x T at T = D

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights:
            kept[ptr] = (t.untyped_storage().nbytes(), tuple(t.shape[-2:]))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x)
    square = sum(n for n, last in kept.values() if last == (T, T))
    return sum(n for n, _ in kept.values()), square / (4 * T * T)


def _measure(name: str, B: int, T: int, D: int, H: int, reps: int, threads: int, q) -> None:
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layer = build_layer(name, D, H)
    x = torch.randn(B, T, D, requires_grad=True)
    saved = _saved_bytes(layer, x)[0], _saved_bytes(layer, torch.randn(B, T + 1, D, requires_grad=True))[1]
    base = _rss_kb("VmRSS")
    wall, cpu = [], []
    for _ in range(reps + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        layer(x).square().mean().backward()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        layer.zero_grad(set_to_none=True)
        x.grad = None
    q.put(
        {
            "layer": name,
            "T": T,
            "wall_s": statistics.median(wall[1:]),
            "cpu_s": statistics.median(cpu[1:]),
            "peak_mb": (_rss_kb("VmHWM") - base) / 1024,
            "saved_mb": saved[0] / 2**20,
            "saved_tt_per_seq": saved[1] / B,
            "params": sum(p.numel() for p in layer.parameters()),
        }
    )


def measure(name, B, T, D, H, reps, threads) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_measure, args=(name, B, T, D, H, reps, threads, q))
    p.start()
    p.join()
    if p.exitcode != 0:
        return {"layer": name, "T": T, "error": f"exit code {p.exitcode}"}
    return q.get()


def render(rows: list[dict], a, wall: float) -> str:
    import torch

    lines = [
        "# One Sessa layer vs one Transformer layer (CPU, reference backends)",
        "",
        f"Generated by `{' '.join(['python benchmarks/sessa_layer.py', *a.argv])}` on "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; {platform.node() or 'unknown host'}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), load average "
        f"{os.getloadavg()[0]:.1f} at the end, Python {platform.python_version()}, torch {torch.__version__}.",
        "",
        f"Forward + backward of one layer, batch {a.batch}, width D = {a.width}, {a.heads} forward heads, float32, "
        f"{a.threads} thread(s); median of {a.reps} runs after one warm-up, each (layer, T) in a fresh process. "
        f"Time ratios use CPU seconds of the process (the box is shared); peak = rise of the process's peak "
        f"resident set over the run; saved = bytes autograd keeps for backward (distinct storages, parameters "
        f"excluded) and the float32 T x T matrices among them per sequence (counted at length T + 1, where no "
        f"activation width equals the length). Ratios are to `{BASELINE}` at the same T. "
        f"Whole benchmark: {wall:.0f} s.",
        "",
        "| T | layer | params | fwd+bwd wall s | fwd+bwd CPU s | x transformer | peak MB | x transformer | "
        "saved for backward MB | saved T x T per sequence |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for T in a.lengths:
        base = next((r for r in rows if r["T"] == T and r["layer"] == BASELINE and "error" not in r), None)
        for r in (r for r in rows if r["T"] == T):
            if "error" in r:
                lines.append(f"| {T} | {r['layer']} | | {r['error']} | | | | | | |")
                continue
            t_ratio = f"{r['cpu_s'] / base['cpu_s']:.2f}" if base else ""
            m_ratio = f"{r['peak_mb'] / max(base['peak_mb'], 1e-9):.2f}" if base else ""
            lines.append(
                f"| {T} | {r['layer']} | {r['params']:,} | {r['wall_s']:.3f} | {r['cpu_s']:.3f} | {t_ratio} | "
                f"{r['peak_mb']:.1f} | {m_ratio} | {r['saved_mb']:.1f} | {r['saved_tt_per_seq']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layers", nargs="+", default=list(LAYERS), choices=LAYERS)
    ap.add_argument("--out", default=str(Path(__file__).with_name("sessa_layer_results.md")))
    a = ap.parse_args(argv)
    a.argv = argv
    t0 = time.perf_counter()
    rows = []
    for T in a.lengths:
        for name in a.layers:
            r = measure(name, a.batch, T, a.width, a.heads, a.reps, a.threads)
            print(json.dumps(r), flush=True)
            rows.append(r)
    text = render(rows, a, time.perf_counter() - t0)
    from seqmix.io import write_text

    write_text(a.out, text)
    print(text)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
