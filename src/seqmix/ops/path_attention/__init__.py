"""PaTH attention (accumulated Householder transforms): see reference.py."""
from __future__ import annotations

from .._select import choose
from . import reference

BACKENDS = {"reference": reference.path_attention}
path_logits = reference.path_logits


def backend_for(tensor, requested: str | None = None) -> str:
    return choose("path_attention", BACKENDS, tensor, requested)


def path_attention(q, k, v, w, beta, scale=None, chunk=32, backend: str | None = None):
    return BACKENDS[backend_for(q, backend)](q, k, v, w, beta, scale=scale, chunk=chunk)
