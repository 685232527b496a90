"""Live logging to an http(s) MLflow server while a training job runs; every failure only warns.

A live run is provisional until ``end``: it carries no fingerprint, so a replay of the leaf's buffer
replaces it if the job dies. At start it deletes earlier attempts of the same key (a job killed and
resumed would otherwise leave a truncated duplicate). It names its parent (``parent_key``: an experiment's
or a sweep's run) from the start, so the claims step's replay, which keeps a complete live run as it is, still
finds it to nest. At ``end`` it logs the points of the buffer record it has not logged itself (the steps
before a resume), then the record's tags and parent links, and only then the
fingerprint and the run's own end time, so a finished live run equals what a replay would write.
"""

from __future__ import annotations

import contextlib
import logging

from ..config.credentials import redact
from . import store
from .buffer import now_ms, param_value

log = logging.getLogger("seqmix.tracking.runs")


class LiveRun:
    """One run logged as the job goes. ``client`` is None once anything failed (files only from then)."""

    def __init__(
        self,
        uri: str,
        experiment: str,
        run_name: str,
        tags: dict,
        params: dict,
        key: str,
        start_ms: int,
        results: str | None = None,
        parent_key: str | None = None,
    ):
        self.client, self.run_id, self.experiment_id = None, None, None
        self.results = results  # what a record's artifact paths are relative to
        self.logged: set[tuple[str, int]] = set()
        if not store.reachable(uri):
            log.warning("mlflow server %s unreachable; logging to files only", redact(uri))
            return
        try:
            from mlflow.entities import Param

            mlf = store.client(uri)
            self.experiment_id = store.ensure_experiment(mlf, experiment, live=True)
            dropped = store.delete_runs_of(mlf, self.experiment_id, key)
            if dropped:
                log.info("mlflow: deleted %d earlier attempt(s) of %s", dropped, key)
            tags = dict({k: str(v) for k, v in tags.items()}, **{store.KEY_TAG: key})
            tags.update(store.parent_tags(mlf, self.experiment_id, parent_key))
            self.run_id = mlf.create_run(self.experiment_id, run_name=run_name, tags=tags, start_time=start_ms)
            self.run_id = self.run_id.info.run_id
            ps = [Param(k, param_value(v)) for k, v in params.items()]
            for i in range(0, len(ps), 100):
                mlf.log_batch(self.run_id, params=ps[i : i + 100])
            self.client = mlf
        except Exception as e:  # an outage must not fail the job
            log.warning("mlflow server unreachable (%s); logging to files only", redact(str(e)))

    def log(self, step: int, metrics: dict[str, float], timestamp_ms: int | None = None) -> None:
        if self.client is None:
            return
        try:
            from mlflow.entities import Metric

            ts = timestamp_ms or now_ms()
            self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), ts, step) for k, v in metrics.items()])
            self.logged.update((k, int(step)) for k in metrics)
        except Exception as e:
            log.warning("mlflow live logging failed (%s); continuing with files only", redact(str(e)))
            self.client = None

    def set_tags(self, tags: dict[str, str]) -> None:
        """Tags known only once the job has run a while (the backend each layer ran, after the first step)."""
        if self.client is None:
            return
        try:
            for k, v in tags.items():
                self.client.set_tag(self.run_id, k, str(v))
        except Exception as e:
            log.warning("mlflow live tagging failed (%s); continuing with files only", redact(str(e)))
            self.client = None

    def end(self, record: dict | None, status: str = "FINISHED") -> bool:
        """Complete the run from the leaf's buffer ``record`` and close it; True when it is now complete.
        With no record (or after any failure) the run stays without a fingerprint and a replay replaces it."""
        if self.client is None:
            return False
        try:
            if record is not None:
                store.log_points(self.client, self.run_id, record["metrics"], record.get("end_ms"), skip=self.logged)
                from mlflow.entities import RunTag

                # the parent's run may have been written since the start (a replay adopts only runs naming it)
                links = store.parent_tags(self.client, self.experiment_id, record.get("parent_key"))
                tags = {**record["tags"], **links}
                self.client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in tags.items()])
                if record.get("dataset"):
                    store.log_dataset(self.client, self.run_id, record["dataset"])
                if record.get("model") and self.results is not None:
                    store.log_model(self.client, self.client.get_run(self.run_id), record, self.results, live=True)
                self.client.set_tag(self.run_id, store.FINGERPRINT_TAG, record["fingerprint"])
                store.adopt_children(self.client, self.experiment_id, record["key"], self.run_id)
                store.supersede_older(self.client, self.experiment_id, record["run_name"], record["key"], self.run_id)
            end = record.get("end_ms") if record else None
            self.client.set_terminated(self.run_id, status, end_time=end)
            return record is not None
        except Exception as e:
            log.warning("mlflow live run could not be completed (%s); a replay of the buffer will", redact(str(e)))
            with contextlib.suppress(Exception):
                self.client.set_terminated(self.run_id, "FAILED")
            return False
