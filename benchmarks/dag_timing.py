"""Per-rule time of a finished DAG and the share of it spent starting processes.

Reads what every job leaves behind: Snakemake's benchmark files (wall seconds per job) and the
`seqmix-timing` line each CLI job writes to its rule log (start-up = interpreter + imports until the
work begins; work = the rest). Usage, after `make reproduce`:

    python benchmarks/dag_timing.py --results results [--markdown benchmarks/RESULTS.md]
"""
from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

TIMING = re.compile(r"seqmix-timing cmd=(\S+) startup_s=([0-9.]+) work_s=([0-9.]+)")


def rule_of(bench: Path, results: Path) -> tuple[str, str]:
    """(rule, job) from results/<paper>/benchmarks/<rule>[/<job>].tsv or results/.pipeline/benchmarks/<rule>.tsv."""
    rel = bench.relative_to(results).with_suffix("")
    parts = rel.parts
    i = parts.index("benchmarks")
    rest = parts[i + 1:]
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
        if log.exists():
            m = TIMING.findall(log.read_text())
            if m:
                startup, work = float(m[-1][1]), float(m[-1][2])
        rule, job = rule_of(bench, results)
        rows.append({"rule": rule, "job": job, "wall_s": wall, "startup_s": startup, "work_s": work})
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby("rule").agg(jobs=("wall_s", "size"), wall_total_s=("wall_s", "sum"), wall_mean_s=("wall_s", "mean"),
                               startup_total_s=("startup_s", "sum"))
    g["startup_share"] = g["startup_total_s"] / g["wall_total_s"]
    return g.sort_values("wall_total_s", ascending=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--markdown", help="append the table to this Markdown file")
    ap.add_argument("--title", default="DAG timing")
    args = ap.parse_args()
    df = collect(Path(args.results))
    if df.empty:
        raise SystemExit(f"no benchmark files under {args.results}; run the DAG first")
    table = summarise(df)
    total, startup = df["wall_s"].sum(), df["startup_s"].fillna(0).sum()
    text = (table.round(3).to_markdown() if hasattr(table, "to_markdown") and _has_tabulate() else table.round(3).to_string())
    summary = (f"{len(df)} jobs, {total:.1f} job-seconds in all, of which {startup:.1f} s ({startup / total:.0%}) "
               f"were process start-up (interpreter + torch import).")
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
