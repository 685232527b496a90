"""Screenshots of what a researcher opens after a run, taken in a headless Chromium: the Snakemake report's
front page, one paper's claims page, and in the MLflow UI that paper's experiment as a click opens it, its
runs table, one of its training runs and that run's system metrics. For looking at the pages as a reader
meets them (a review, an issue), not for the results.

    .venv/bin/python scripts/screenshots.py                      # results/, scale tiny
    .venv/bin/python scripts/screenshots.py --results /elsewhere/results --paper heads --out /tmp/shots
    .venv/bin/python scripts/screenshots.py --mlflow-db /tmp/copy.db   # a copy: the UI never writes the results

PNGs go to ``<results>/<scale>/screenshots/`` (under results/, so never committed). The MLflow UI is an
``mlflow ui`` on a free loopback port against the SQLite store with the results' artifacts destination (as
``seqmix ui`` runs it), stopped on exit. The UI and the report are JavaScript apps: Chromium gets a virtual
time budget to render them, and a screenshot of fewer than a handful of colours (a page that never drew)
is an error. Needs Chromium (Debian: ``apt-get install chromium``) or ``--browser``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1400, 1000)
MIN_COLOURS = 16  # a rendered page has text, anti-aliased edges and borders; a blank or spinner-only one few
MIN_INK = 0.005  # the share of pixels off the page's background colour


class ScreenshotError(RuntimeError):
    pass


def find_browser(explicit: str | None = None) -> str:
    """The Chromium executable: ``explicit`` when given, else the first of BROWSERS on PATH."""
    if explicit:
        path = shutil.which(explicit)
        if not path:
            raise ScreenshotError(f"--browser {explicit}: not found or not executable")
        return path
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise ScreenshotError(
        "no headless Chromium on PATH (looked for " + ", ".join(BROWSERS) + "): install Debian's package "
        "`apt-get install chromium` (Ubuntu: `snap install chromium`), or pass --browser /path/to/chrome"
    )


def browser_command(browser: str, url: str, png: Path, budget_ms: int, profile: Path) -> list[str]:
    """The headless Chromium call that renders ``url`` for ``budget_ms`` of virtual time, then writes ``png``."""
    cmd = [
        browser,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--no-default-browser-check",
        f"--user-data-dir={profile}",  # a throwaway profile: never the user's, never locked by another Chromium
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--virtual-time-budget={budget_ms}",
        f"--screenshot={png}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(2, "--no-sandbox")  # Chromium refuses to start its sandbox as root (containers, CI)
    return [*cmd, url]


def server_command(mlflow: str, db: Path, artifacts: Path, port: int) -> list[str]:
    """``mlflow ui`` on the SQLite store ``db`` with the results' artifacts, on a loopback ``port``."""
    return [
        mlflow,
        "ui",
        "--backend-store-uri",
        f"sqlite:///{db.resolve()}",
        "--artifacts-destination",
        str(artifacts.resolve()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]


def blank_reason(png: Path) -> str | None:
    """Why the screenshot ``png`` shows no page (None when it shows one): too few distinct colours, or
    almost every pixel the background's."""
    from PIL import Image

    with Image.open(png) as im:
        rgb = im.convert("RGB")
    colours = rgb.getcolors(maxcolors=rgb.width * rgb.height)
    colours.sort(reverse=True)
    ink = 1 - colours[0][0] / (rgb.width * rgb.height)
    if len(colours) < MIN_COLOURS:
        return f"{len(colours)} distinct colours (a drawn page has at least {MIN_COLOURS})"
    if ink < MIN_INK:
        return f"{100 * ink:.2f}% of the pixels differ from the background (a drawn page has {100 * MIN_INK}%+)"
    return None


def shoot(browser: str, url: str, png: Path, budget_ms: int, timeout_s: float = 240) -> Path:
    """Screenshot ``url`` into ``png``; ScreenshotError when Chromium fails or the page comes out blank."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="seqmix-chromium-") as profile:
        cmd = browser_command(browser, url, png, budget_ms, Path(profile))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ScreenshotError(f"{url}: Chromium did not finish in {timeout_s:.0f} s") from None
    if proc.returncode != 0 or not png.exists():
        raise ScreenshotError(f"{url}: Chromium exited {proc.returncode} without {png}:\n{proc.stderr[-2000:]}")
    why = blank_reason(png)
    if why:
        raise ScreenshotError(f"{png} of {url} is blank: {why}; the page did not render (try a larger --budget-ms)")
    return png


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_ui(db: Path, artifacts: Path, wait_s: float = 180) -> Iterator[str]:
    """An ``mlflow ui`` serving ``db`` until the block ends (its whole process group is stopped)."""
    mlflow = str(Path(sys.executable).parent / "mlflow")
    if not Path(mlflow).exists():
        mlflow = shutil.which("mlflow") or mlflow
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    # MLflow 3 also starts seven job-runner processes (GenAI judges) that the pages never use and that
    # outlive a SIGTERM for tens of seconds
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    cmd = server_command(mlflow, db, artifacts, port)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise ScreenshotError(f"mlflow ui exited {proc.returncode}:\n{log.read()[-3000:]}")
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"{base}/health", timeout=2).status == 200:
                    break
            if time.monotonic() > deadline:
                raise ScreenshotError(f"mlflow ui on port {port} did not answer within {wait_s:.0f} s")
            time.sleep(0.5)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _post(base: str, route: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{base}/api/2.0/mlflow/{route}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def pick_run(base: str, paper: str | None) -> tuple[str, str, str]:
    """(experiment id, run id, run name): the paper's experiment (else the first with runs) and its newest
    training run (else its newest run), found through MLflow's REST API."""
    exps = _post(base, "experiments/search", {"max_results": 1000}).get("experiments", [])
    exps = sorted(exps, key=lambda e: (e["name"] != paper, e["name"] == "Default", e["name"]))
    for exp in exps:
        for flt in ("tags.rule = 'train'", ""):
            body = {"experiment_ids": [exp["experiment_id"]], "max_results": 1, "order_by": ["start_time DESC"]}
            runs = _post(base, "runs/search", {**body, "filter": flt} if flt else body).get("runs", [])
            if runs:
                info = runs[0]["info"]
                return exp["experiment_id"], info["run_id"], info.get("run_name", "")
    raise ScreenshotError(f"{base}: the store holds no run")


def mlflow_pages(base: str, exp_id: str, run_id: str) -> list[tuple[str, str]]:
    """(file stem, address) of the MLflow pages shot: the experiment as a click on it opens it (MLflow 3
    opens its GenAI view unless the browser chose "Model training" before), then, with the address's
    ``workflowType=machine_learning``, its runs table, the run's page and the run's system metrics."""
    ml = "?workflowType=machine_learning"
    run = f"{base}/#/experiments/{exp_id}/runs/{run_id}"
    return [
        ("mlflow-experiment", f"{base}/#/experiments/{exp_id}"),
        ("mlflow-runs", f"{base}/#/experiments/{exp_id}/runs{ml}"),
        ("mlflow-run", f"{run}{ml}"),
        ("mlflow-run-system-metrics", f"{run}/system-metrics{ml}"),
    ]


def take(args) -> list[Path]:
    results = Path(args.results)
    scale_root = results / args.scale
    out = Path(args.out) if args.out else scale_root / "screenshots"
    browser = find_browser(args.browser)
    report = scale_root / "report.html"
    papers = sorted(p.parent.name for p in scale_root.glob("*/claims.html"))
    paper = args.paper or (papers[0] if papers else None)
    claims = scale_root / str(paper) / "claims.html"
    for page in (report, claims):
        if not page.is_file():
            raise ScreenshotError(f"{page} does not exist (papers with a claims page: {', '.join(papers) or 'none'})")
    shots = [
        shoot(browser, report.resolve().as_uri(), out / "report.png", args.budget_ms, args.timeout_s),
        shoot(browser, claims.resolve().as_uri(), out / f"claims-{paper}.png", args.budget_ms, args.timeout_s),
    ]
    if args.no_mlflow:
        return shots
    db = Path(args.mlflow_db) if args.mlflow_db else results / "mlflow.db"
    if not db.is_file():
        raise ScreenshotError(f"{db} does not exist: run the DAG first, or pass --mlflow-db or --no-mlflow")
    artifacts = Path(args.artifacts) if args.artifacts else results / ".mlflow" / "artifacts"
    with mlflow_ui(db, artifacts) as base:
        exp_id, run_id, name = pick_run(base, paper)
        print(f"mlflow ui at {base}: experiment {exp_id}, run {run_id} ({name})")
        for stem, url in mlflow_pages(base, exp_id, run_id):
            shots.append(shoot(browser, url, out / f"{stem}.png", args.budget_ms, args.timeout_s))
    return shots


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--results", default="results", help="the results root (default: results)")
    ap.add_argument("--scale", default="tiny", help="the scale whose report and claims page it shows (default: tiny)")
    ap.add_argument("--paper", help="the paper whose claims page and MLflow experiment it shows (default: the first)")
    ap.add_argument("--out", help="where the PNGs go (default: <results>/<scale>/screenshots)")
    ap.add_argument("--mlflow-db", help="the SQLite store (default: <results>/mlflow.db), e.g. a copy in /tmp")
    ap.add_argument("--artifacts", help="the artifacts destination (default: <results>/.mlflow/artifacts)")
    ap.add_argument("--no-mlflow", action="store_true", help="only the report and the claims page")
    ap.add_argument("--browser", help=f"the Chromium/Chrome executable (default: the first of {', '.join(BROWSERS)})")
    ap.add_argument("--budget-ms", type=int, default=15000, help="virtual time each page gets to render (ms)")
    ap.add_argument("--timeout-s", type=float, default=240, help="wall-clock limit of one screenshot (s)")
    args = ap.parse_args(argv)
    try:
        shots = take(args)
    except ScreenshotError as e:
        print(f"screenshots: {e}", file=sys.stderr)
        return 1
    for png in shots:
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
