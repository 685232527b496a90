"""PaTH attention (accumulated Householder transforms): see reference.py."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

OP = Op("path_attention", __name__, reference.path_attention)
BACKENDS = OP.backends
backend_for = OP.backend_for
path_logits = reference.path_logits
path_attention_blocked = reference.path_attention_blocked  # linear memory, reference only


def path_attention(q, k, v, w, beta, scale=None, chunk=32, backend: str | None = None):
    """Arguments and shapes as in ``reference.path_attention``."""
    return OP(q, backend, q, k, v, w, beta, scale=scale, chunk=chunk)
