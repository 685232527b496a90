"""The card's own ceilings, measured in the same run as the kernels they judge (never a datasheet number):

- copy bandwidth: a device-to-device copy of a 2 GiB buffer, bytes read + written over the time;
- bf16 matmul throughput: an 8192^3 bf16 product on random data (dense tensor-core FLOP/s);
- transcendental throughput: a Triton kernel that applies exp2 64 times to each loaded float32 value (the
  special-function units' rate, which bounds scans that exponentiate per (channel, state, step)).

Each is the best of a few timed repeats after warm-up (CUDA events). ``measure()`` returns a dict; on a
machine without CUDA it returns None.

    python benchmarks/card_ceilings.py
"""

from __future__ import annotations

import torch

EXP_PER_LOAD = 64

try:
    import triton
    import triton.language as tl
except ImportError:  # no Triton: no transcendental ceiling (measure() needs CUDA anyway)
    triton = None

if triton is not None:

    @triton.jit
    def _exps(x_ptr, y_ptr, n, REPS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        for _ in range(REPS):
            x = tl.exp2(x * -0.5)  # stays in (0, 1]: no overflow, no denormals
        tl.store(y_ptr + offs, x, mask=offs < n)


def _best_ms(fn, reps: int = 10, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end))
    return best


def copy_bandwidth(gib: float = 2.0) -> float:
    """Bytes/s of a device-to-device copy (read + write counted)."""
    n = int(gib * 2**30) // 4
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    ms = _best_ms(lambda: dst.copy_(src))
    return 2 * 4 * n / (ms * 1e-3)


def matmul_throughput(size: int = 8192) -> float:
    """bf16 FLOP/s of one size^3 product on random data."""
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    ms = _best_ms(lambda: a @ b)
    return 2 * size**3 / (ms * 1e-3)


def transcendental_throughput(n: int = 1 << 26) -> float:
    """exp evaluations/s: EXP_PER_LOAD dependent exp2 per loaded float32 (compute-bound by construction)."""
    import triton

    x, y = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    ms = _best_ms(lambda: _exps[(triton.cdiv(n, 1024),)](x, y, n, REPS=EXP_PER_LOAD, BLOCK=1024))
    return EXP_PER_LOAD * n / (ms * 1e-3)


def measure() -> dict | None:
    """{"card", "copy_bytes_per_s", "bf16_flops_per_s", "exp_per_s"} for CUDA device 0, or None without one."""
    if torch.version.cuda is None or not torch.cuda.is_available():
        return None
    return {
        "card": torch.cuda.get_device_name(0),
        "copy_bytes_per_s": copy_bandwidth(),
        "bf16_flops_per_s": matmul_throughput(),
        "exp_per_s": transcendental_throughput(),
    }


def describe(c: dict) -> str:
    return (
        f"{c['card']}: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s (read + write), bf16 matmul "
        f"{c['bf16_flops_per_s'] / 1e12:.0f} TFLOP/s, exp {c['exp_per_s'] / 1e12:.2f} T/s (all measured here)"
    )


if __name__ == "__main__":
    c = measure()
    print(describe(c) if c else "no CUDA device: nothing measured")
