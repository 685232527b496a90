"""Size a model to a target parameter count (papers compare mixers at matched parameters).

``count_parameters`` counts unique trainable parameters (a tied head counts once).
``fit_parameters`` searches a coarse knob (e.g. d_model, in multiples that keep head dims valid) and then a
fine knob that adds parameters almost linearly (e.g. the MLP hidden width), building candidates on the
``meta`` device so no memory is allocated, and returns the closest configuration; it raises ValueError when
the best is not within ``tol`` (relative) of the target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn


def count_parameters(model: nn.Module, exclude_embeddings: bool = False) -> int:
    seen, total = set(), 0
    skip = set()
    if exclude_embeddings:
        skip = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    for p in model.parameters():
        if p.requires_grad and id(p) not in seen and id(p) not in skip:
            seen.add(id(p))
            total += p.numel()
    return total


def _count(build: Callable[..., nn.Module], exclude_embeddings: bool, **kw) -> int:
    with torch.device("meta"):
        return count_parameters(build(**kw), exclude_embeddings)


def fit_parameters(
    build: Callable[..., nn.Module],
    target: int,
    coarse: tuple[str, Iterable[int]],
    fine: tuple[str, Callable[[int], Iterable[int]]] | None = None,
    tol: float = 0.01,
    exclude_embeddings: bool = False,
) -> tuple[dict, int]:
    """Return ({coarse_name: v, fine_name: w}, count) with count closest to ``target``.

    build(**{coarse_name: v, fine_name: w}) -> model. ``fine`` = (name, candidates(v)) lists fine values to try
    for a coarse value v (e.g. lambda d: range(0, 8 * d + 1)); the fine search is a bisection, so the count
    must be non-decreasing in the fine knob."""
    if target < 1:
        raise ValueError(f"target must be a positive parameter count, got {target!r}")
    best: tuple[float, dict, int] | None = None
    cname, cvals = coarse
    for v in cvals:
        kw = {cname: v}
        if fine is None:
            cands = [(kw, _count(build, exclude_embeddings, **kw))]
        else:
            fname, fvals = fine
            fv = list(fvals(v))
            lo, hi = 0, len(fv) - 1
            while lo < hi:  # first fine value whose count reaches the target
                mid = (lo + hi) // 2
                if _count(build, exclude_embeddings, **kw, **{fname: fv[mid]}) < target:
                    lo = mid + 1
                else:
                    hi = mid
            cands = []
            for i in {max(0, lo - 1), lo}:
                k2 = {**kw, fname: fv[i]}
                cands.append((k2, _count(build, exclude_embeddings, **k2)))
        for k2, n in cands:
            err = abs(n - target) / target
            if best is None or err < best[0]:
                best = (err, k2, n)
    if best is None:
        raise ValueError("coarse: no candidate values given")
    if best[0] > tol:
        raise ValueError(
            f"target: no configuration within {tol:.1%} of {target} parameters (closest {best[2]} with {best[1]})"
        )
    return best[1], best[2]


def size_decoder_lm(
    target: int,
    *,
    vocab_size: int,
    n_layers: int,
    mixer: dict,
    block: str = "residual_mlp",
    multiple_of: int = 8,
    widths: Iterable[int] | None = None,
    tol: float = 0.01,
    exclude_embeddings: bool = False,
) -> dict:
    """A DecoderLM config within ``tol`` of ``target`` parameters: d_model over multiples of ``multiple_of``,
    then the MLP hidden width (residual_mlp blocks only; gated blocks have no fine knob, so the 1% holds only
    where the width grid is fine enough)."""
    from .lm import DecoderLM

    def build(d_model, mlp_hidden=None):
        return DecoderLM(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, mixer=mixer, block=block, mlp_hidden=mlp_hidden
        )

    widths = list(widths) if widths is not None else list(range(multiple_of, 4097, multiple_of))
    # only widths whose default (4d MLP) model is not far above the target are worth a fine search
    fine = ("mlp_hidden", lambda d: range(0, 8 * d + 1)) if block == "residual_mlp" else None
    coarse_ok = []
    for d in sorted(widths):  # counts grow with the width: stop at the first too-large one
        if _count(build, exclude_embeddings, d_model=d, mlp_hidden=0) > target * (1 + tol):
            break
        coarse_ok.append(d)
    if not coarse_ok:
        raise ValueError(f"target: {target} parameters is below the smallest width's count")
    kw, n = fit_parameters(build, target, ("d_model", coarse_ok[-4:]), fine, tol, exclude_embeddings)
    return {
        "d_model": kw["d_model"],
        "n_layers": n_layers,
        "mixer": dict(mixer),
        "block": block,
        "mlp_hidden": kw.get("mlp_hidden"),
        "parameters": n,
    }


def width_for_target(build: Callable[[int], nn.Module], target: int, widths: Iterable[int] = range(2, 2049, 2)) -> int:
    """The width d (from ``widths``, ascending) whose ``build(d)`` has the trainable parameter count closest to
    ``target`` (ties: the smaller width). Counts grow with the width, so a bisection finds the crossing;
    a width the model refuses (e.g. heads not dividing it: ValueError) is skipped. Candidates are built on the
    ``meta`` device (no memory), with the random state restored, so the search leaves the model's init alone."""
    if target < 1:
        raise ValueError(f"target_params must be a positive parameter count, got {target!r}")
    cands = sorted(set(widths))
    memo: dict[int, int | None] = {}

    def count(i: int) -> int | None:
        d = cands[i]
        if d not in memo:
            memo[d] = _count_or_none(build, d)
        return memo[d]

    def valid_from(i: int, step: int) -> int | None:
        while 0 <= i < len(cands):
            if count(i) is not None:
                return i
            i += step
        return None

    def reaches(i: int) -> bool:  # monotone in i: the first valid width from i is at or above the target
        j = valid_from(i, 1)
        return j is None or count(j) >= target

    lo, hi = 0, len(cands)
    while lo < hi:
        mid = (lo + hi) // 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid + 1
    near = {valid_from(lo, 1) if lo < len(cands) else None, valid_from(lo - 1, -1) if lo > 0 else None}
    near.discard(None)
    if not near:
        raise ValueError(f"target_params: no width in {cands[0]}..{cands[-1]} builds this model")
    best = min(near, key=lambda i: (abs(count(i) - target), cands[i]))
    return cands[best]


def _count_or_none(build: Callable[[int], nn.Module], d: int) -> int | None:
    """The parameter count of ``build(d)``, None when the model refuses the width; on ``meta`` when the model
    allows it, else (an init that reads values) on the CPU."""
    with torch.random.fork_rng(devices=[]):
        try:
            with torch.device("meta"):
                return count_parameters(build(d))
        except (ValueError, TypeError):
            return None
        except Exception:  # an init that needs real values (e.g. a numpy step) cannot run on meta
            pass
        try:
            return count_parameters(build(d))
        except (ValueError, TypeError):
            return None
