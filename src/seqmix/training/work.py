"""The model side of the per-leaf stages: train, evaluate or diagnose one leaf.

The pipeline (``seqmix.pipeline.stages``) owns everything around a leaf (marker, MLflow record, summary row,
ingest) and reaches this class only by name, ``seqmix.registry.worker("stages")``, so the pipeline side of
the import contracts never imports torch models. One ``StageWork`` per job: it applies the job's runtime
(device, amp, compile, kernels) once, then serves every leaf of the cell.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from . import distributed


class StageWork:
    """One job's model-side work. ``runtime`` is the run config's ``runtime`` block (None: the defaults)."""

    def __init__(self, runtime: dict | None):
        from .runtime import Runtime

        self.runtime = Runtime.resolve(runtime).activate()
        self.device = str(self.runtime.device)

    @staticmethod
    def lacks(task_cls: type, stage: str) -> str | None:
        """Why the task class ``task_cls`` cannot run ``stage`` (None when it can): train needs its own
        ``batch``, evaluate its own ``evaluate`` (``Task``'s raise), diagnose a probe registered for it
        (``seqmix.diagnostics.probes.PROBES``). The config loader calls this before any job."""
        from ..tasks.base import Task

        if stage == "train" and getattr(task_cls, "batch", Task.batch) is Task.batch:
            return "it implements no batch(seed, step, rank, size) (seqmix.tasks.base.Task)"
        if stage == "evaluate" and getattr(task_cls, "evaluate", Task.evaluate) is Task.evaluate:
            return "it implements no evaluate(model) (seqmix.tasks.base.Task)"
        if stage == "diagnose":
            from ..diagnostics.probes import lacks_probe

            return lacks_probe(task_cls)
        return None

    @staticmethod
    def init_distributed(device: str) -> None:
        """Data-parallel when launched with several tasks (RANK/WORLD_SIZE or SLURM); NCCL only on CUDA."""
        distributed.init_from_env(device)

    @staticmethod
    def rank() -> int:
        return distributed.rank()

    @staticmethod
    def world_size() -> int:
        return distributed.world_size()

    @staticmethod
    def torch_threads() -> int:
        import torch

        return torch.get_num_threads()

    def train(
        self,
        cfg: dict,
        out: Path,
        config_hash: str,
        on_log: Callable[[int, dict], None] | None,
        on_backend: Callable[[dict], None],
    ) -> dict:
        """Train (or resume) one leaf into ``out``: ``seqmix.training.loop.train``'s result."""
        from .loop import train

        return train(cfg, out, config_hash, on_log=on_log, runtime=self.runtime, on_backend=on_backend)

    def evaluate(self, cfg: dict, out: Path) -> dict[str, float]:
        """The task's test metrics of the trained leaf in ``out`` (with ``eval.validation``, also its
        ``val_<metric>``s, ``Task.validate``)."""
        from .loop import load_trained

        task, model = load_trained(cfg, out, self.runtime)
        metrics = task.evaluate(model)
        if (cfg.get("eval") or {}).get("validation"):
            metrics.update(task.validate(model))
        return metrics

    def diagnose(self, cfg: dict, out: Path, trained: bool) -> dict:
        """Diagnostics of the leaf (``{"rows": [...], "metrics": {...}, "seconds": s}``): on the trained model
        when ``trained``, else on the model at initialisation (e.g. the heads paper's Exp. II)."""
        from ..diagnostics.probes import diagnose
        from .loop import build, load_trained
        from .runtime import keep_inputs_on_device

        if trained:
            task, model = load_trained(cfg, out, self.runtime)
        else:
            task, model = build(cfg, self.runtime)
            keep_inputs_on_device(model, self.runtime)
        model.eval()
        t0 = time.perf_counter()
        result = diagnose(task, model, int(cfg["seed"]))
        return {**result, "seconds": round(time.perf_counter() - t0, 3)}
