"""What every task provides. Batches come from ``seqmix.rng.counter_generator``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import torch

R = TypeVar("R")

# the columns of the influence diagnostic's rows (seqmix.diagnostics.probes.influence): the diagnose stage's
# summary columns of every task without a probe of its own
DIAGNOSE_COLUMNS = ("quantity", "lag", "value", "lo", "hi")


class Task:
    """Base class. Subclasses set ``d_in``, ``d_out``, ``seq_len`` and implement ``batch`` and ``loss``; an
    experiment that lists the evaluate stage needs ``evaluate`` too. ``example_options`` (a small, valid and
    fast configuration) and ``example_model`` (a tiny model config that fits the task's batches) are read by the
    task contract test (tests/tasks/test_contract.py)."""

    d_in: int
    d_out: int
    seq_len: int
    # The columns each stage adds to the experiment's summary.csv, as fnmatch patterns (``cos_z*``: one per
    # layer), beside the leaf's own (seqmix.config.claims.LEAF_COLUMNS). Claims naming a column no stage
    # declares are refused before any job (seqmix.config.claims.check_claim_columns).
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"diagnose": DIAGNOSE_COLUMNS}
    # which split evaluate reads ("test" or "val"; the Evaluation option group sets it); None: no such choice
    eval_split: str | None = None
    example_options: ClassVar[dict[str, Any]] = {}
    example_model: ClassVar[dict[str, Any]] = {}
    # The largest tensors a leaf of this task holds or builds (its data sets as stored and as built, the
    # evaluation split as the model reads it, one training batch), in bytes, as {what: expression} over the
    # task's options and the leaf's key paths (``train.batch``): e.g. ``"n * n * k * k * 8"`` for an
    # (n, n, k, k) float64 operator. The config check sums them for every leaf before any job and refuses a
    # leaf over the data limit (seqmix.config.memory: the expressions, the limit). Conservative: a tensor built
    # in float64 and cast counts both copies. A term that needs a null option (a size read from the files) is
    # left out; a task with no term is not checked, so every registered task states its own (the task
    # contract test compares them with the tensors a built task holds).
    memory: ClassVar[dict[str, str]] = {}
    # Options bounded by others, {option: expression} in the same language (``{"min_len": "max_len"}``): the
    # config check refuses a leaf whose option exceeds its bound before any job (seqmix.config.leaf_rules).
    at_most: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "memory" in cls.__dict__:
            _check_memory(cls)
        own = cls.__dict__.get("summary_columns")
        if own is not None and "diagnose" not in own:  # the default probe's rows, unless the class declares its own
            cls.summary_columns = {**own, "diagnose": DIAGNOSE_COLUMNS}

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

    def validate(self, model: torch.nn.Module) -> dict:
        """``evaluate``'s metrics on the validation split, named ``val_<metric>`` (the evaluate stage adds them
        when the leaf's ``eval.validation`` is true, e.g. to pick a learning rate on validation). Provided for
        every task whose ``evaluate`` reads the split named by its ``eval_split`` (the ``Evaluation`` option
        group); other tasks raise NotImplementedError."""
        if self.eval_split not in ("test", "val"):
            raise NotImplementedError(f"{type(self).__qualname__} has no eval_split: it cannot evaluate on validation")
        saved = self.eval_split
        self.eval_split = "val"
        try:
            metrics = self.evaluate(model)
        finally:
            self.eval_split = saved
        return {f"val_{k}": v for k, v in metrics.items()}

    def influence_anchors(self, n: int) -> torch.Tensor | None:
        """For the first ``n`` examples of ``test_set()``, the position whose output the influence diagnostic
        differentiates (``seqmix.diagnostics.influence``): (n,) int64, or None for the last position of every
        row. Tasks with right-padded rows override it (the last position is a pad for the shorter ones)."""
        return None

    def diagnostics(self, model: torch.nn.Module) -> dict:
        """The in-training probe ({name: float}): the training loop calls it every ``eval.every`` steps and
        records it in ``history["diagnostics"]`` (``seqmix.training.loop``). A task that does not override
        it has none, and ``eval.every`` is then ignored (``Task.probes_in_training``)."""
        return {}

    @classmethod
    def probes_in_training(cls) -> bool:
        """Whether the class overrides ``diagnostics``."""
        return cls.diagnostics is not Task.diagnostics

    @staticmethod
    def in_batches(model: torch.nn.Module, n: int, batch_size: int, step: Callable[[int, int], R]) -> list[R]:
        """[``step(lo, hi)`` for each run lo..hi-1 of ``batch_size`` rows out of ``n``], in row order, with
        ``model`` in eval mode and without gradients; the model's training mode is restored. ``step`` runs the
        model itself, so it may feed it more than one tensor or reduce each output before the next batch."""
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return [step(lo, min(lo + batch_size, n)) for lo in range(0, n, batch_size)]
        finally:
            model.train(was_training)

    @staticmethod
    def predict(
        model: torch.nn.Module,
        inputs: torch.Tensor,
        batch_size: int | None = None,
        *,
        dtype: torch.dtype | None = torch.float32,
    ) -> torch.Tensor:
        """``model(inputs)`` (N, ...) -> (N, ...) for evaluation (``in_batches``): ``batch_size`` rows at a time
        (None: all N in one call), each output on the CPU as ``dtype`` (None: the model's), concatenated."""

        def forward(lo: int, hi: int) -> torch.Tensor:
            out = model(inputs[lo:hi])
            return (out if dtype is None else out.to(dtype)).cpu()

        return torch.cat(Task.in_batches(model, len(inputs), batch_size or max(len(inputs), 1), forward))

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((pred - target) ** 2)


def _check_memory(cls: type) -> None:
    """Each of ``cls.memory``'s expressions parses and reads only the class's options and the leaf's key paths:
    a misspelt option would otherwise drop its term, silently, at every config check."""
    from ..config.memory import LEAF_ROOTS, names_of
    from ..options import option_names

    options = set(option_names(cls))
    for what, expression in cls.memory.items():
        for name in names_of(expression):
            root, dot, _ = name.partition(".")
            if (dot and root not in LEAF_ROOTS) or (not dot and name not in options):
                raise TypeError(
                    f"{cls.__qualname__}.memory[{what!r}]: {name!r} is neither an option of the task "
                    f"({', '.join(sorted(options))}) nor a key path under {', '.join(LEAF_ROOTS)}"
                )
