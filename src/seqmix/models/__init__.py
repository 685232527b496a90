"""Model stacks built from a registered mixer name and sizes."""

from __future__ import annotations

from .. import registry


def build_model(model_cfg: dict, task) -> torch.nn.Module:  # noqa: F821
    """Build the model named by ``model_cfg['name']`` from the config's options and ``task.model_inputs()``
    (sizes and fixed tensors, passed as keyword arguments; a non-null config key of the same name wins). The model
    never sees the task object."""
    cfg = dict(model_cfg)
    cls = registry.get_model(cfg.pop("name"))
    inputs = task.model_inputs()
    # a config value left null (e.g. the LM's vocab_size) defers to the task's
    cfg = {k: v for k, v in cfg.items() if not (v is None and k in inputs)}
    return cls(**{**inputs, **cfg})
