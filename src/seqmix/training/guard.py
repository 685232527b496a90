"""The per-step NaN/Inf guard: one fused check, one host sync, the offending tensor named only on failure.

``StepGuard.check(step, loss)`` runs after ``backward``: it computes the total gradient norm (the one
``clip_grad_norm_`` would compute; reused for clipping when ``train.grad_clip`` is set) and tests
``isfinite(loss) & isfinite(norm)`` with a single ``bool()``. Only when that fails does it walk the
tensors to name the first bad one: 'loss' (with the first non-finite parameter, if any) or
'<parameter>.grad'. A norm that overflowed while every gradient is finite is not an error (as before).
"""

from __future__ import annotations

import logging

import torch

log = logging.getLogger("seqmix.train")


class NonFiniteError(FloatingPointError):
    """A NaN/Inf appeared; the message names the step and the tensor."""


def _first_nonfinite(named) -> str | None:
    for name, t in named:
        if t is not None and not torch.isfinite(t).all():
            return name
    return None


def _total_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """The 2-norm of all gradients together, as ``clip_grad_norm_`` computes it (the same value, so clipping
    with it is bit-identical); one fused per-tensor norm when they share a device and dtype."""
    first = grads[0]
    if all(g.device == first.device and g.dtype == first.dtype for g in grads):
        return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    return torch.nn.utils.get_total_norm(grads)


class StepGuard:
    def __init__(self, model: torch.nn.Module, grad_clip: float | None = None):
        self.named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.params = [p for _, p in self.named]
        self.clip = float(grad_clip) if grad_clip else None

    def check(self, step: int, loss: torch.Tensor) -> torch.Tensor:
        """Raise NonFiniteError when the loss or a gradient is not finite; clip when asked. Returns the norm."""
        grads = [p.grad for p in self.params if p.grad is not None]
        norm = _total_norm(grads) if grads else loss.new_zeros(())
        # NaN/Inf anywhere in the loss or the gradients makes this sum non-finite (an overflow of a finite
        # sum is told apart afterwards)
        if not bool(torch.isfinite(norm + loss.detach().sum())):  # the step's one host sync
            self._name_the_culprit(step, loss)
        if self.clip is not None and grads:
            torch.nn.utils.clip_grads_with_norm_(self.params, self.clip, norm)
        return norm

    def _name_the_culprit(self, step: int, loss: torch.Tensor) -> None:
        if not torch.isfinite(loss.detach()).all():
            param = _first_nonfinite(self.named)
            extra = f"; first non-finite parameter: {param}" if param else ""
            value = loss.item() if loss.numel() == 1 else "non-finite"
            raise NonFiniteError(f"step {step}: tensor 'loss' is {value}{extra}")
        grad = _first_nonfinite((f"{n}.grad", p.grad) for n, p in self.named)
        if grad:
            raise NonFiniteError(f"step {step}: tensor '{grad}' has non-finite values")
        log.warning("step %d: the total gradient norm overflowed although every gradient is finite", step)
