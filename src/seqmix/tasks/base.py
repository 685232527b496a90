"""What every task provides. Batches come from ``seqmix.rng.counter_generator``."""

from __future__ import annotations

from typing import ClassVar

import torch


class Task:
    """Base class. Subclasses set ``d_in``, ``d_out``, ``seq_len`` and implement ``batch`` and ``loss``."""

    d_in: int
    d_out: int
    seq_len: int
    # The columns each stage adds to the experiment's summary.csv, as fnmatch patterns (``cos_z*``: one per
    # layer), beside the leaf's own (seqmix.config.claims.LEAF_COLUMNS). Claims naming a column no stage
    # declares are refused before any job (seqmix.config.claims.check_claim_columns).
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {}

    def model_inputs(self) -> dict:
        """What a model built for this task is given, as keyword arguments (sizes, fixed tensors): the model
        never sees the task object. Default: the input width, output width and sequence length."""
        return {"d_in": self.d_in, "d_out": self.d_out, "seq_len": self.seq_len}

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def evaluate(self, model: torch.nn.Module) -> dict:
        """The test metrics of a trained ``model`` ({name: float}), run by the evaluate stage. Required of every
        task whose experiment lists the evaluate stage (the default): the config loader refuses one that does
        not override this before any job (``seqmix.training.work.StageWork.lacks``)."""
        raise NotImplementedError(
            f"{type(self).__qualname__} implements no evaluate(model): it cannot run the evaluate stage"
        )

    @staticmethod
    def predict(model: torch.nn.Module, inputs: torch.Tensor, batch_size: int) -> torch.Tensor:
        """``model(inputs)`` for evaluation: in eval mode, without gradients, ``batch_size`` rows at a time,
        each output as float32 on the CPU, concatenated; the model's training mode is restored."""
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return torch.cat(
                    [model(inputs[i : i + batch_size]).float().cpu() for i in range(0, len(inputs), batch_size)]
                )
        finally:
            model.train(was_training)

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((pred - target) ** 2)
