"""Influence against the lag, one estimator for every trained model (the cross-paper memory comparison).

For a model, a batch of its inputs and an anchor position a_b per sequence, the influence of the source at lag
l = a_b - tau is the Frobenius norm of a Jacobian block,

    I_b(l) = || d h_b / d x_{b, a_b - l} ||_F,        l = 0 .. a_b,

with x and h chosen by what the model is:

- a ``capabilities.LayerStack`` (decoder LM, sequence classifier, LRA classifier): x = the first hidden states e
  (B, T, d), the token embedding's (or input encoder's) output, substituted through ``hooks.embeddings_from``;
  h_b = the last block's output at the anchor, (d,) (``hooks.captured``). Token ids or float inputs alike, so
  the probe never differentiates through an embedding lookup, and every stack is read at the same place (before
  its head, whatever the head is);
- otherwise, a float input (B, T, d_in): x = the input itself; h_b = the model's output at the anchor when the
  output is per position (B, T, p), or the whole output when it is pooled (B, p) (a classifier, a probe).
Anything else (token ids into a model without a LayerStack, retrieval pairs (B, 2, L), graphs) has no such
diagnostic and is refused with a TypeError naming the model.

Estimator (the same for every model): K Hutchinson probes u ~ N(0, I_p) at the target, one VJP each
(``hutchinson.vjp_source_norms``: every source from one backward pass), sqrt(mean_k ||u_k^T J||^2) in float64;
``batch_size`` sequences at a time bounds the memory. The model runs in eval mode (dropout off, BatchNorm on
its running statistics, so that sequences do not interact), its mode restored after; only the gradient with
respect to x is taken, so no parameter's ``.grad`` changes. A bidirectional model is measured the same way: the
profile then covers the sources up to the anchor, and ``after_anchor`` sums up the ones past it.
"""

from __future__ import annotations

import torch

from ..capabilities import LayerStack
from .hooks import captured, embeddings_from
from .hutchinson import vjp_source_norms
from .influence_fit import effective_memory, effective_memory_interval, fit_decay


def _refuse(model: torch.nn.Module, inputs, why: str) -> TypeError:
    shape = tuple(inputs.shape) if isinstance(inputs, torch.Tensor) else type(inputs).__name__
    dtype = f" {inputs.dtype}" if isinstance(inputs, torch.Tensor) else ""
    return TypeError(f"no influence diagnostic for {type(model).__name__} on inputs {shape}{dtype}: {why}")


def _kind(model: torch.nn.Module, inputs) -> str:
    """'stack' (LayerStack: differentiate at the embeddings) or 'direct' (differentiate at the float input)."""
    if not isinstance(inputs, torch.Tensor):
        raise _refuse(model, inputs, "the inputs must be one tensor, (B, T) token ids or (B, T, d) floats")
    floats = inputs.is_floating_point()
    if not ((floats and inputs.dim() == 3) or (not floats and inputs.dim() == 2)):
        raise _refuse(model, inputs, "the inputs must be (B, T) token ids or (B, T, d) floats (one sequence a row)")
    if isinstance(model, LayerStack):
        return "stack"
    if floats:
        return "direct"
    raise _refuse(model, inputs, "token ids need a model with token_embedding() and layers() (capabilities.LayerStack)")


def _anchors(anchor, n: int, T: int) -> torch.Tensor:
    """(n,) int64 anchors in [0, T-1]; None: T-1 for every sequence."""
    a = torch.full((n,), T - 1, dtype=torch.int64) if anchor is None else torch.as_tensor(anchor).long().cpu()
    a = a.expand(n).clone() if a.dim() == 0 else a
    if a.shape != (n,):
        raise ValueError(f"anchor: expected an int or a ({n},) tensor, got shape {tuple(a.shape)}")
    if n and not (0 <= int(a.min()) and int(a.max()) <= T - 1):
        raise ValueError(f"anchor: positions must lie in [0, {T - 1}], got {int(a.min())}..{int(a.max())}")
    return a


def _stack_target(model, x: torch.Tensor, rows: torch.Tensor, anchor: torch.Tensor):
    """(e0 (b, T, d): the model's own first hidden states, target: e -> last block's output at the anchors (b, d))."""
    with torch.no_grad(), captured([model.token_embedding()], "output") as first:
        model(x)
    e0 = first[0]
    if not isinstance(e0, torch.Tensor) or e0.dim() != 3 or e0.shape[:2] != x.shape[:2]:
        got = tuple(e0.shape) if isinstance(e0, torch.Tensor) else type(e0).__name__
        raise _refuse(model, x, f"its token_embedding() gave {got}, not one (B, T, d) row per sequence")
    last_block = model.layers()[-1]

    def target(e: torch.Tensor) -> torch.Tensor:
        with embeddings_from(model, e), captured([last_block], "output") as last:
            model(x)
        h = last[0]
        if not isinstance(h, torch.Tensor) or h.dim() != 3 or h.shape[:2] != x.shape[:2]:
            got = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
            raise _refuse(model, x, f"its last layer gave {got}, not (B, T, d)")
        return h[rows, anchor]

    return e0, target


def _direct_target(model, x: torch.Tensor, rows: torch.Tensor, anchor: torch.Tensor):
    """target: x -> the output at the anchors (b, p) of a per-position model, or the pooled output (b, p)."""

    def target(e: torch.Tensor) -> torch.Tensor:
        y = model(e)
        if isinstance(y, torch.Tensor) and y.dim() == 3 and y.shape[:2] == x.shape[:2]:
            return y[rows, anchor]
        if isinstance(y, torch.Tensor) and y.dim() == 2 and y.shape[0] == x.shape[0]:
            return y
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise _refuse(model, x, f"its output {got} is neither (B, T, p) nor pooled (B, p)")

    return x, target


def influence_profile(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    *,
    probes: int = 8,
    batch_size: int = 32,
    generator: torch.Generator,
    anchor: int | torch.Tensor | None = None,
) -> dict:
    """Estimated ||d h_anchor / d x_{anchor - l}||_F for every lag l, per sequence and averaged (module docstring).

    inputs: (N, T) int64 token ids or (N, T, d_in) floats; anchor: None (T-1 for every sequence), an int, or
    (N,) positions in [0, T-1]; ``generator``: a CPU generator for the probes, ``probes`` per sequence, drawn per
    batch of ``batch_size`` sequences (one backward graph each; the draws, not their law, depend on it).
    With L = max anchor + 1 (T by default), returns
    {"lags": (L,) int64 0..L-1,
     "influence": (L,) float64, the mean over the sequences that have the lag (NaN where none has),
     "per_example": (N, L) float64, NaN at lags beyond a sequence's anchor,
     "after_anchor": (N,) float64, the estimate of ||d h / d x_{tau > anchor}||_F over all later sources at once
        (exactly 0 for a causal model; the bidirectional models' share that the lag profile leaves out),
     "anchor": (N,) int64}.
    TypeError for a model or input this diagnostic does not cover (module docstring), naming the model."""
    kind = _kind(model, inputs)
    if probes < 1 or batch_size < 1:
        raise ValueError(f"probes and batch_size must be >= 1, got {probes} and {batch_size}")
    N, T = inputs.shape[:2]
    anchors = _anchors(anchor, N, T)
    L = int(anchors.max()) + 1 if N else T
    lags = torch.arange(L, dtype=torch.int64)
    param = next(model.parameters(), None)
    device = param.device if param is not None else inputs.device
    # float inputs follow the model's precision (a task's float32 pixels into a model made float64 for the probe)
    floats = {"dtype": param.dtype} if param is not None and inputs.is_floating_point() else {}
    per_example = torch.full((N, L), float("nan"), dtype=torch.float64)
    after = torch.zeros(N, dtype=torch.float64)
    was_training = model.training
    model.eval()
    try:
        for lo in range(0, N, batch_size):
            hi = min(lo + batch_size, N)
            x, a = inputs[lo:hi].to(device, **floats), anchors[lo:hi].to(device)
            rows = torch.arange(hi - lo, device=device)
            make = _stack_target if kind == "stack" else _direct_target
            x0, target = make(model, x, rows, a)
            with torch.enable_grad():  # a caller's no_grad block must not silence the probe
                norms = vjp_source_norms(target, x0, probes, generator).cpu()  # (b, T): source tau
            a = a.cpu()
            tau = a[:, None] - lags[None, :]  # (b, L): the source at each lag, negative past the start
            got = norms.gather(1, tau.clamp_min(0))
            per_example[lo:hi] = torch.where(tau >= 0, got, torch.full_like(got, float("nan")))
            later = torch.arange(T)[None, :] > a[:, None]
            after[lo:hi] = (norms.pow(2) * later).sum(1).sqrt()
    finally:
        model.train(was_training)
    influence = per_example.nanmean(0) if N else torch.full((L,), float("nan"), dtype=torch.float64)
    return {"lags": lags, "influence": influence, "per_example": per_example, "after_anchor": after, "anchor": anchors}


def influence_of(
    task,
    model: torch.nn.Module,
    *,
    n_examples: int = 32,
    probes: int = 8,
    seed: int = 0,
    anchor: int | torch.Tensor | None = None,
    fraction: float = 0.01,
    n_boot: int = 200,
) -> dict:
    """The influence diagnostic of a trained ``model`` on the first ``n_examples`` inputs of ``task.test_set()``,
    as one summary row: every value a float, the profile apart for plotting.

    Probes and bootstraps are seeded by ``seed``; ``anchor`` as in ``influence_profile`` (default: the last
    position of every sequence; pass the last real position for right-padded token sets, whose position T-1 is a
    pad for the shorter sequences). Keys (fits over lags >= 1, ``influence_fit``; lo/hi: 95% bootstrap
    intervals over the examples):
      influence_exp_rate[_lo, _hi]   r of I(l) ~ exp(-r l)
      influence_power[_lo, _hi]      p of I(l) ~ l^-p
      influence_best_fit             0.0 exponential, 1.0 power law (``influence_fit.BEST_FIT``), NaN undecided
      influence_exp_rss, influence_power_rss, influence_n_lags   the fits' log-space residuals and point count
      influence_lag0, influence_after_anchor   the mean influence at lag 0, the mean ``after_anchor``
      effective_memory[_lo, _hi]     ``influence_fit.effective_memory`` at ``fraction``
      influence_n_examples, influence_probes
      profile                        {"lags": [int], "influence": [float]} (mean over the examples)
    A task without ``test_set``, or a model/input pair ``influence_profile`` refuses, raises TypeError."""
    try:
        data = task.test_set()
    except NotImplementedError as e:  # the base Task's test_set: say which task, not an empty message
        raise TypeError(f"no influence diagnostic for {type(task).__name__}: the task has no test_set()") from e
    # test_set gives (inputs, targets); a set of another form goes through whole and is refused by its type
    inputs = data[0] if isinstance(data, tuple) and len(data) == 2 else data
    if isinstance(inputs, torch.Tensor):
        inputs = inputs[:n_examples]
        if isinstance(anchor, torch.Tensor) and anchor.dim() == 1:
            anchor = anchor[: len(inputs)]
    gen = torch.Generator().manual_seed(int(seed))
    prof = influence_profile(model, inputs, probes=probes, generator=gen, anchor=anchor)
    lags, per_example, mean = prof["lags"], prof["per_example"], prof["influence"]
    fits = fit_decay(lags, per_example, n_boot=n_boot, seed=seed)
    mem_lo, mem_hi = effective_memory_interval(lags, per_example, fraction, n_boot=n_boot, seed=seed)
    row = {
        **{f"influence_{k}": v for k, v in fits.items()},
        "influence_lag0": float(mean[0]) if len(mean) else float("nan"),
        "influence_after_anchor": float(prof["after_anchor"].mean()) if len(per_example) else float("nan"),
        "effective_memory": effective_memory(lags, mean, fraction),
        "effective_memory_lo": mem_lo,
        "effective_memory_hi": mem_hi,
        "influence_n_examples": float(len(per_example)),
        "influence_probes": float(probes),
    }
    row["profile"] = {"lags": [int(v) for v in lags], "influence": [float(v) for v in mean]}
    return row
