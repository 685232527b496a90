"""Which backend (torch reference, lean torch backend or Triton kernel) each layer ran: an MLflow tag."""

from __future__ import annotations

from torch import nn


def backend_report(model: nn.Module) -> dict[str, str]:
    """{module path: backend} for every module that declares ``backend``; pure-torch modules report
    'torch-reference' so that no layer's backend is silent."""
    out = {name: str(m.backend) for name, m in model.named_modules() if hasattr(m, "backend")}
    return out or {"model": "torch-reference"}


def backend_tag(model: nn.Module) -> str:
    return ",".join(sorted(set(backend_report(model).values())))
