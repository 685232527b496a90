"""The matrix paper's analysis artefact.

``grid`` -> grid/summary.csv: one row per leaf (every task, mixer, learning rate and seed read), the raw
material of every table and figure. Columns:

- experiment: the config's experiment (one task); task: its ``task.name``;
- mixer: the variant label (e.g. ``rope``); mixer_name: the registered mixer (``model.mixer.name``);
- leaf: the leaf id ``<mixer>/<point>/seed<k>``; lr: the learning rate (sweep value, else ``train.lr``); seed;
- n_params: trainable parameters of the built model (train.done.json; empty when not recorded);
- metric / score: the configured test metric and its value (metrics.json);
- select / select_value: the configured validation metric that picks the lr, and its value (empty if absent);
- higher_is_better: the direction of both;
- n_test: the test-set size read from the config path ``test_size_key`` (empty when the task names none);
- exp_rate, exp_rate_lo, exp_rate_hi: rate r of the exponential fit log I = a - r lag, with its interval;
- power, power_lo, power_hi: exponent p of the power-law fit log I = b - p log lag, with its interval;
- effective_memory, effective_memory_lo, effective_memory_hi: the lag where influence falls below the
  diagnose stage's fraction of its scale, with its interval;
- best_fit_power: 1 when the power law fits better (in log space), 0 when the exponential does;
- chosen: 1 for the leaves at their (task, mixer)'s learning rate chosen on validation (``selection``), else 0:
  the claims read one measurement per seed there, as the tables do.
"""

from __future__ import annotations

from pathlib import Path

from ...report.tables import write_csv
from .selection import at_chosen, scored


def grid(spec: dict, out: Path) -> None:
    df, scores, _ = scored(spec)
    picked = set(at_chosen(df, scores)[["experiment", "leaf"]].itertuples(index=False, name=None))
    df["chosen"] = [int(key in picked) for key in zip(df["experiment"], df["leaf"])]
    rows = [{k: ("" if v != v else v) for k, v in r.items()} for r in df.to_dict("records")]  # NaN -> empty
    write_csv(Path(out) / "summary.csv", rows, checksum=True)
