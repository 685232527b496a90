"""System metrics of a training job: CPU, memory and, on CUDA, the device memory, sampled by a background
thread into the leaf's MLflow record as ``system/<name>`` series (the prefix the MLflow UI gathers under a
run's "System metrics" tab; MLflow's own names where they measure the same thing).

Why not MLflow's own monitor (``log_system_metrics=True``): it logs from the job straight into a live run,
so the embedded SQLite store, which only the claims step's replay of the buffers writes, would never get
them, and a run replayed from its buffer (after an outage or a kill) would lose them. Sampled into the
buffer, they reach either store with the run. With a server they are also logged live as they come.

Sample ``i`` is step ``i`` (as MLflow numbers them), stamped with the time it was taken. CPU percentages
are averages since the previous sample (a first sample at the start would read 0, so the first is taken
one interval in, or at the end of a shorter training); memory is the value at the sample. The samples are
kept in ``tracking-system.json`` beside the leaf, so a resumed leaf keeps those of the attempts before a
kill (like ``buffer.StepClock``). A sampling failure only warns: the job never fails on its metrics.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from ..io import read_json, write_json
from .buffer import now_ms

log = logging.getLogger("seqmix.tracking.system")

PREFIX = "system/"
DEFAULT_EVERY_S = 10.0  # MLflow's own sampling interval
FILE = "tracking-system.json"


def settings(tracking: dict) -> float | None:
    """The sampling interval in seconds from a run config's ``tracking`` block, None when switched off
    (``system_metrics: false``). On unless switched off: sampling costs one psutil call per interval."""
    if not tracking.get("system_metrics", True):
        return None
    return float(tracking.get("system_metrics_every_s", DEFAULT_EVERY_S))


def _busy_and_total(times) -> tuple[float, float]:
    """CPU seconds busy and in all, from ``psutil.cpu_times()`` (as ``psutil.cpu_percent`` counts them: guest
    time is inside user time already, idle and iowait are not busy)."""
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    return total - times.idle - getattr(times, "iowait", 0.0), total


class HostReader:
    """Reads one sample: {name without the prefix: value}. Keeps its own reference points for the CPU shares
    (``psutil.cpu_percent(None)`` keeps one per calling thread, so the sampler thread's first call would read
    0 and the closing sample, taken on the job's thread, would average over the whole training).
    ``cuda_device`` e.g. "cuda:0", None off CUDA."""

    def __init__(self, cuda_device: str | None = None):
        import psutil

        self.cuda = cuda_device
        self.proc = psutil.Process()
        self.proc.cpu_percent(None)  # its reference point (a Process keeps its own, whatever the thread)
        self.last = _busy_and_total(psutil.cpu_times())

    def read(self) -> dict[str, float]:
        import psutil

        busy, total = _busy_and_total(psutil.cpu_times())
        spent = total - self.last[1]
        cpu = min(100.0, max(0.0, 100.0 * (busy - self.last[0]) / spent)) if spent > 0 else 0.0
        self.last = (busy, total)
        mem = psutil.virtual_memory()
        out = {
            "cpu_utilization_percentage": cpu,
            "system_memory_usage_megabytes": mem.used / 1e6,
            "system_memory_usage_percentage": 100.0 * mem.used / mem.total,
            # this job alone: more than 100 when its threads use several cores
            "process_cpu_utilization_percentage": self.proc.cpu_percent(None),
            "process_memory_rss_megabytes": self.proc.memory_info().rss / 1e6,
        }
        if self.cuda:
            import torch

            # the tensors torch's allocator holds (not NVML's whole-card figure: other jobs may share the card)
            out["cuda_memory_allocated_megabytes"] = torch.cuda.memory_allocated(self.cuda) / 1e6
            out["cuda_memory_reserved_megabytes"] = torch.cuda.memory_reserved(self.cuda) / 1e6
            out["cuda_peak_memory_allocated_megabytes"] = torch.cuda.max_memory_allocated(self.cuda) / 1e6
        return out


class SystemSampler:
    """Samples every ``every_s`` seconds while a leaf trains (``start`` ... ``stop``), keeping them in
    ``<out>/tracking-system.json``. ``series()`` gives the buffer's ``{system/<name>: [[step, value, ms]]}``,
    ``take_new()`` the samples not yet handed out, as ``[(step, {system/<name>: value}, ms)]``."""

    def __init__(self, out: str | Path, config_hash: str, resuming: bool, every_s: float, device: str = "cpu"):
        self.path = Path(out) / FILE
        self.config_hash, self.every_s = config_hash, max(float(every_s), 0.1)
        self.cuda = device if device.startswith("cuda") else None
        self.samples: list[list] = self._earlier(resuming)  # [[ms, {name: value}], ...]
        self.handed = len(self.samples)  # earlier attempts' samples reach a live run with the buffer record
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread: threading.Thread | None = None
        self._host: HostReader | None = None

    def _earlier(self, resuming: bool) -> list[list]:
        if not (resuming and self.path.exists()):
            return []
        try:
            state = read_json(self.path)
            samples = state["samples"] if state.get("config_hash") == self.config_hash else []
            return [[int(ms), {str(k): float(v) for k, v in values.items()}] for ms, values in samples]
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            # a damaged file only costs the earlier attempts' samples
            log.warning("%s: unreadable (%s: %s); system metrics start afresh", self.path, type(e).__name__, e)
            return []

    def start(self) -> SystemSampler:
        try:
            self._host = HostReader(self.cuda)
        except Exception as e:  # no psutil, or a system it cannot read: the job goes on without the metrics
            log.warning("system metrics off: %s: %s", type(e).__name__, e)
            return self
        self._thread = threading.Thread(target=self._loop, name="seqmix-system-metrics", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            if not self.sample():
                return

    def sample(self) -> bool:
        """Take one sample now and keep it on disk; False (after a warning) when the system cannot be read."""
        if self._host is None:
            return False
        try:
            values = self._host.read()
        except Exception as e:
            log.warning("system metrics stopped: %s: %s", type(e).__name__, e)
            self._host = None
            return False
        with self._lock:
            self.samples.append([now_ms(), values])
            state = {"config_hash": self.config_hash, "samples": list(self.samples)}
        try:
            write_json(self.path, state, indent=None)
        except OSError as e:  # the samples stay in memory and reach the buffer record
            log.warning("%s: not written (%s)", self.path, e)
        return True

    def stop(self) -> None:
        """End the sampling with a last sample (a training shorter than one interval gets exactly one)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.sample()

    def series(self) -> dict[str, list[list]]:
        with self._lock:
            samples = list(self.samples)
        out: dict[str, list[list]] = {}
        for step, (ms, values) in enumerate(samples):
            for name, value in values.items():
                out.setdefault(PREFIX + name, []).append([step, value, ms])
        return out

    def take_new(self) -> list[tuple[int, dict[str, float], int]]:
        with self._lock:
            new = [(i, {PREFIX + k: v for k, v in vals.items()}, ms) for i, (ms, vals) in enumerate(self.samples)]
            new = new[self.handed :]
            self.handed = len(self.samples)
        return new
