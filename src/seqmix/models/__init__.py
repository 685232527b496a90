"""Model stacks built from a registered mixer name and sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import registry

if TYPE_CHECKING:  # for the annotation only: importing this package stays free of torch until a model is built
    import torch


def build_model(model_cfg: dict, task) -> torch.nn.Module:
    """Build the model named by ``model_cfg['name']`` from the config's options and ``task.model_inputs()``
    (sizes and fixed tensors, passed as keyword arguments; a non-null config key of the same name wins). The model
    never sees the task object. With ``target_params`` (``option_groups.Stack``) the width is chosen here so that
    the trainable parameter count is closest to it."""
    cfg = dict(model_cfg)
    cls = registry.get_model(cfg.pop("name"))
    inputs = task.model_inputs()
    # a config value left null (e.g. the LM's vocab_size) defers to the task's
    cfg = {k: v for k, v in cfg.items() if not (v is None and k in inputs)}
    target = cfg.pop("target_params", None)
    if target is not None:  # matched parameter counts across mixers (the cross-paper matrix)
        from .sizing import width_for_target

        cfg["d_model"] = width_for_target(lambda d: cls(**{**inputs, **cfg, "d_model": d}), int(target))
    return cls(**{**inputs, **cfg})
