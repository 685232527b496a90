"""Model stacks built from a registered mixer name and sizes."""
from __future__ import annotations

from .. import registry


def build_model(model_cfg: dict, task) -> "torch.nn.Module":  # noqa: F821
    """Build the model named by ``model_cfg['name']`` for a task (which supplies d_in, d_out, seq_len)."""
    cfg = dict(model_cfg)
    cls = registry.get_model(cfg.pop("name"))
    return cls(task=task, **cfg)
