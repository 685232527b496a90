"""Per-rule time of a finished DAG and its split: process start-up, MLflow, training, other.

Reads what every job leaves behind: Snakemake's benchmark files (wall seconds per job) and the lines the
CLI jobs write to their rule logs: `seqmix-timing` (start-up = interpreter + imports until the work
begins; work = the rest), `seqmix-ingest s=` (MLflow ingest, mlflow import included) and `seqmix-train s=`
(the training loops of a train job). The MLflow share is the ingests plus the `mlflow_init` job;
"other" is the rest of the job-seconds (evaluation, diagnostics, tables, figures, claims, Snakemake's
run-config jobs). Usage, after `make reproduce`:

    python benchmarks/dag_timing.py --results results/tiny [--elapsed SECONDS] [--markdown benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

TIMING = re.compile(r"seqmix-timing cmd=(\S+) startup_s=([0-9.]+) work_s=([0-9.]+)")
INGEST = re.compile(r"seqmix-ingest s=([0-9.]+)")
TRAIN = re.compile(r"seqmix-train s=([0-9.]+)")


def rule_of(bench: Path, results: Path) -> tuple[str, str]:
    """(rule, job) from <paper>/benchmarks/<rule>[/<job>].tsv or .pipeline/benchmarks/<rule>.tsv under a scale's
    root (results/<scale>)."""
    rel = bench.relative_to(results).with_suffix("")
    parts = rel.parts
    i = parts.index("benchmarks")
    rest = parts[i + 1 :]
    paper = parts[0] if i == 1 and parts[0] != ".pipeline" else ""
    rule = rest[0]
    return (f"{paper}:{rule}" if paper else rule), "/".join(rest[1:])


def collect(results: Path) -> pd.DataFrame:
    rows = []
    for bench in sorted(results.rglob("benchmarks/**/*.tsv")):
        df = pd.read_csv(bench, sep="\t")
        wall = float(df["s"].iloc[-1])
        log = Path(str(bench).replace("/benchmarks/", "/logs/")).with_suffix(".log")
        startup = work = None
        ingest = train = 0.0
        if log.exists():
            text = log.read_text()
            m = TIMING.findall(text)
            if m:
                startup, work = float(m[-1][1]), float(m[-1][2])
            ingest = sum(float(v) for v in INGEST.findall(text))
            train = sum(float(v) for v in TRAIN.findall(text))
        rule, job = rule_of(bench, results)
        if rule == "mlflow_init":  # creating the store is MLflow's cost as a whole
            ingest = wall - (startup or 0.0)
        rows.append(
            {
                "rule": rule,
                "job": job,
                "wall_s": wall,
                "startup_s": startup,
                "work_s": work,
                "ingest_s": ingest,
                "train_s": train,
            }
        )
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby("rule").agg(
        jobs=("wall_s", "size"),
        wall_total_s=("wall_s", "sum"),
        wall_mean_s=("wall_s", "mean"),
        startup_total_s=("startup_s", "sum"),
        ingest_total_s=("ingest_s", "sum"),
        train_total_s=("train_s", "sum"),
    )
    g["startup_share"] = g["startup_total_s"] / g["wall_total_s"]
    return g.sort_values("wall_total_s", ascending=False)


def split_line(df: pd.DataFrame, elapsed: float | None = None) -> str:
    """One sentence: job-seconds split into start-up, MLflow, training, evaluation and other. Evaluation is the
    work of the evaluate jobs (after start-up, less their MLflow ingest)."""
    total = df["wall_s"].sum()
    evaluate = df[df["rule"].str.endswith(":evaluate")]
    parts = {
        "start-up": df["startup_s"].fillna(0).sum(),
        "MLflow (init + ingest)": df["ingest_s"].sum(),
        "training": df["train_s"].sum(),
        "evaluation": (evaluate["work_s"].fillna(0) - evaluate["ingest_s"]).clip(lower=0).sum(),
    }
    parts["other"] = total - sum(parts.values())
    text = ", ".join(f"{k} {v:.1f} s ({v / total:.0%})" for k, v in parts.items())
    head = f"{len(df)} jobs, {total:.1f} job-seconds" + (f" in {elapsed:.0f} s of wall clock" if elapsed else "")
    both = parts["start-up"] + parts["MLflow (init + ingest)"]
    learn = parts["training"] + parts["evaluation"]
    return f"{head}: {text}; start-up + MLflow = {both / total:.0%}; training + evaluation = {learn / total:.0%}."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results/tiny", help="one scale's root (results/<scale>)")
    ap.add_argument("--markdown", help="append the table to this Markdown file")
    ap.add_argument("--title", default="DAG timing")
    ap.add_argument("--elapsed", type=float, help="the DAG's wall-clock seconds (Snakemake's), to report too")
    args = ap.parse_args()
    df = collect(Path(args.results))
    if df.empty:
        raise SystemExit(f"no benchmark files under {args.results}; run the DAG first")
    table = summarise(df)
    text = (
        table.round(3).to_markdown()
        if hasattr(table, "to_markdown") and _has_tabulate()
        else table.round(3).to_string()
    )
    summary = split_line(df, args.elapsed)
    print(text)
    print(summary)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\n### {args.title}\n\n```\n{table.round(3).to_string()}\n```\n\n{summary}\n")


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
