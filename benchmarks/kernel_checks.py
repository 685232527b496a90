"""The GPU-only sections of benchmarks/kernels.py: rotation attention against flash SDPA, the selective scan's
launch shapes, compilations across lengths, and determinism. Each appends a markdown table to ``lines``."""

from __future__ import annotations

import importlib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from fwd_bwd import fwd_bwd_seconds as _time
from fwd_bwd import ms as _ms
from kernel_cases import OPS, alibi_slopes, backends, op_of

SECTIONS = ("attention_vs_sdpa", "scan_launch", "compilations", "determinism")


def run(section: str, names, passed, reps, lines, flush) -> None:
    checks = {"attention_vs_sdpa": attention_vs_sdpa, "scan_launch": scan_launch, "compilations": compilations,
              "determinism": determinism}  # fmt: skip
    try:
        checks[section](names, passed, reps, lines)
    except Exception as e:  # one broken section must not cost the others (one GPU run has to hold all)
        lines += ["", f"Section {section} failed: {type(e).__name__}: {str(e)[:300]}"]
    flush(lines)


def attention_vs_sdpa(names, passed, reps, lines) -> None:
    """Every rotation variant through the op's automatic CUDA backend vs torch's flash SDPA on plain causal
    attention of the same shape (ratio >= 1: as fast as flash)."""
    if "rotation_attention" not in names:
        return
    from seqmix.ops import rotation_attention as ra

    lines += ["", "Rotation attention variants (automatic CUDA backend) vs torch flash SDPA, bf16, fwd+bwd:", ""]
    lines += ["| shape | variant | backend | time | flash SDPA | SDPA / variant |", "|---|---|---|---|---|---|"]
    backend = "fused" if "fused" in ra.OP.backends else ra.OP.backend_on("cuda")
    for Nb, T in ((4, 4096), (1, 16384)):
        H, d = 8, 96
        q, k, v, psi = OPS["rotation_attention"]["inputs"]((Nb, H, T, d), torch.bfloat16, "cuda")
        omega = 10000.0 ** (-torch.arange(0, d // 2, dtype=torch.float64, device="cuda") * 2 / d)
        rope, slopes = ra.rope_steps(T, omega), alibi_slopes(H, "cuda")
        variants = {
            "NoPE": (None, None, None),
            "RoPE": (rope, None, None),
            "SO(2) random, q/k": (psi, None, None),
            "SO(2) random, q/k/v": (psi, psi, None),
            "ALiBi": (None, None, slopes),
            "SO(2) q/k/v + ALiBi": (psi, psi, slopes),
        }
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            t_flash = _time(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), [q, k, v], reps)
        for label, (p, pv, m) in variants.items():

            def call(a, b, c, p=p, pv=pv, m=m):
                return ra.rotation_attention(a, b, c, p, pv, m, backend=backend)

            t = _time(call, [q, k, v], reps)
            lines.append(f"| {(Nb, H, T, d)} | {label} | {backend} | {_ms(t)} | {_ms(t_flash)} | {t_flash / t:.2f} |")


def scan_launch(names, passed, reps, lines) -> None:
    """The Triton selective scan at its first GPU shape under each (channels per program, warps) launch."""
    if "selective_scan" not in names or not passed.get(("selective_scan", "triton")):
        return
    kernel = importlib.import_module("seqmix.ops.selective_scan.triton")
    fn = backends("selective_scan")["triton"]
    shape = OPS["selective_scan"]["gpu"][0]
    inputs = OPS["selective_scan"]["inputs"](shape, torch.bfloat16, "cuda")
    lines += ["", f"Selective scan launch shapes at {shape}, bf16, fwd+bwd:", ""]
    lines += ["| channels per program | warps | time |", "|---|---|---|"]
    default = kernel._launch(shape[2] // shape[4], shape[3])
    for launch in ((32, 4), (32, 16), (8, 4)):
        kernel.LAUNCH = launch
        t = _time(fn, inputs, reps)
        mark = " (default)" if launch == default else ""
        lines.append(f"| {launch[0]} | {launch[1]}{mark} | {_ms(t)} |")
    kernel.LAUNCH = None


def _count_compilations():
    """(counter list, restore): counts Triton JIT compilations (in-memory cache misses) from now on."""
    count = [0]

    def hook(*args, **kwargs):
        count[0] += 1
        return False

    try:
        from triton import knobs

        prev = knobs.runtime.jit_post_compile_hook
        knobs.runtime.jit_post_compile_hook = hook
        return count, lambda: setattr(knobs.runtime, "jit_post_compile_hook", prev)
    except (ImportError, AttributeError):
        from triton.runtime.jit import JITFunction

        prev = JITFunction.cache_hook
        JITFunction.cache_hook = hook
        return count, lambda: setattr(JITFunction, "cache_hook", prev)


def compilations(names, passed, reps, lines) -> None:
    """Forward + backward of every fast backend over an extrapolation sweep of lengths: compilations (Triton)
    and torch.compile graphs after the first length (0 = lengths are not specialised)."""
    from torch._dynamo.utils import counters

    lines += ["", "Compilations across a sweep of lengths (after the first length; 0 = none per length):", ""]
    lines += ["| op | backend | lengths | Triton compilations | torch.compile graphs |", "|---|---|---|---|---|"]
    for name in names:
        shapes = OPS[name]["lengths"]
        for backend, fn in backends(name).items():
            if backend == "reference" or not passed.get((name, backend)):
                continue
            _time(fn, OPS[name]["inputs"](shapes[0], torch.bfloat16, "cuda"), 1)
            count, restore = _count_compilations()
            graphs = counters["stats"]["unique_graphs"]
            try:
                for shape in shapes[1:]:
                    _time(fn, OPS[name]["inputs"](shape, torch.bfloat16, "cuda"), 1)
            finally:
                restore()
            lengths = ", ".join(str(s[2] if name == "rotation_attention" else s[1]) for s in shapes)
            new_graphs = counters["stats"]["unique_graphs"] - graphs
            lines.append(f"| {name} | {backend} | {lengths} | {count[0]} | {new_graphs} |")


def determinism(names, passed, reps, lines) -> None:
    """Is each fast backend bitwise repeatable (output and gradients, two runs on the same inputs)? What does
    deterministic mode cost the automatic choice?"""
    from seqmix.ops import dispatch

    lines += ["", "Determinism (bf16, fwd+bwd on the same inputs twice) and deterministic mode's cost:", ""]
    lines += ["| op | backend | bitwise repeatable |", "|---|---|---|"]
    for name in names:
        shape = OPS[name]["gpu"][0]
        inputs = OPS[name]["inputs"](shape, torch.bfloat16, "cuda")
        for backend, fn in backends(name).items():
            if backend != "reference" and not passed.get((name, backend)):
                continue
            runs = []
            for _ in range(2):
                leaves = [t.detach().requires_grad_(t.dtype != torch.float64) for t in inputs]
                out = fn(*leaves)
                out.backward(torch.ones_like(out))
                runs.append([out.detach()] + [t.grad for t in leaves if t.grad is not None])
            same = all(torch.equal(a, b) for a, b in zip(*runs))
            lines.append(f"| {name} | {backend} | {'yes' if same else 'no'} |")
    lines += ["", "| op | automatic backend | time | deterministic mode: backend | time | cost |"]
    lines.append("|---|---|---|---|---|---|")
    for name in names:
        op = op_of(name)
        shape = OPS[name]["gpu"][0]
        inputs = OPS[name]["inputs"](shape, torch.bfloat16, "cuda")
        figures = []
        for on in (False, True):
            dispatch.set_deterministic(on)
            b = op.backend_on("cuda")
            figures.append((b, _time(OPS[name]["call"](op.backends[b]), inputs, reps)))
        dispatch.set_deterministic(None)
        (b0, t0), (b1, t1) = figures
        lines.append(f"| {name} | {b0} | {_ms(t0)} | {b1} | {_ms(t1)} | {t1 / t0:.2f}x |")
