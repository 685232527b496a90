"""scripts/screenshots.py: the headless-Chromium screenshots of the report, a claims page and the MLflow UI.
The commands, the blank-page check and the missing-browser error are checked without a browser; the
script runs whole (pages, and an MLflow UI on a small store) only where Chromium is installed."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "screenshots.py"


@pytest.fixture(scope="module")
def shots():
    spec = importlib.util.spec_from_file_location("screenshots", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _chromium(shots) -> str | None:
    try:
        return shots.find_browser()
    except shots.ScreenshotError:
        return None


def _png(path: Path, drawn: bool) -> Path:
    """A 1400x1000 page: all white, or a page of text and a chart (anti-aliased, as a browser draws it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(14, 10), dpi=100)
    if drawn:
        ax = fig.add_axes((0.3, 0.2, 0.6, 0.6))
        ax.plot([0, 1, 2, 3], [1, 3, 2, 4], label="train_loss")
        ax.legend()
        fig.text(0.02, 0.9, "claims at scale tiny: 12 hold, 3 fail", fontsize=14)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_the_browser_is_called_headless_with_a_budget_and_a_fresh_profile(shots, tmp_path, monkeypatch):
    monkeypatch.setattr(shots.os, "geteuid", lambda: 1000)
    cmd = shots.browser_command("/usr/bin/chromium", "file:///r/report.html", tmp_path / "a.png", 15000, tmp_path)
    assert cmd[0] == "/usr/bin/chromium" and cmd[-1] == "file:///r/report.html"
    for flag in ("--headless", f"--screenshot={tmp_path / 'a.png'}", "--window-size=1400,1000"):
        assert flag in cmd
    assert "--virtual-time-budget=15000" in cmd and f"--user-data-dir={tmp_path}" in cmd
    assert "--no-sandbox" not in cmd
    monkeypatch.setattr(shots.os, "geteuid", lambda: 0)  # Chromium refuses its sandbox as root
    assert "--no-sandbox" in shots.browser_command("c", "u", tmp_path / "a.png", 1, tmp_path)


def test_the_mlflow_ui_serves_the_store_with_the_results_artifacts_on_loopback(shots, tmp_path):
    cmd = shots.server_command("/venv/bin/mlflow", tmp_path / "mlflow.db", tmp_path / "art", 5123)
    assert cmd[:2] == ["/venv/bin/mlflow", "ui"]
    opts = dict(zip(cmd[2::2], cmd[3::2]))
    assert opts["--backend-store-uri"] == f"sqlite:///{(tmp_path / 'mlflow.db').resolve()}"
    assert opts["--artifacts-destination"] == str((tmp_path / "art").resolve())
    assert (opts["--host"], opts["--port"]) == ("127.0.0.1", "5123")


def test_the_mlflow_pages_are_the_experiment_as_clicked_then_the_model_training_views(shots):
    pages = dict(shots.mlflow_pages("http://127.0.0.1:1", "3", "abc"))
    assert pages["mlflow-experiment"] == "http://127.0.0.1:1/#/experiments/3"
    assert pages["mlflow-runs"] == "http://127.0.0.1:1/#/experiments/3/runs?workflowType=machine_learning"
    assert pages["mlflow-run"] == "http://127.0.0.1:1/#/experiments/3/runs/abc?workflowType=machine_learning"
    assert pages["mlflow-run-system-metrics"].endswith("/runs/abc/system-metrics?workflowType=machine_learning")


def test_a_blank_screenshot_is_told_from_a_drawn_page(shots, tmp_path):
    from PIL import Image, ImageDraw

    assert "distinct colours" in shots.blank_reason(_png(tmp_path / "white.png", drawn=False))
    assert shots.blank_reason(_png(tmp_path / "page.png", drawn=True)) is None
    # a spinner on a white page: colours enough, but almost nothing drawn
    im = Image.new("RGB", (1400, 1000), "white")
    draw = ImageDraw.Draw(im)
    for i in range(40):
        draw.point((700 + i % 8, 500 + i // 8), fill=(i * 6, 100, 200))
    im.save(tmp_path / "spinner.png")
    assert "differ from the background" in shots.blank_reason(tmp_path / "spinner.png")


def test_without_chromium_the_error_names_the_package(shots, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no browser anywhere
    with pytest.raises(shots.ScreenshotError, match=r"apt-get install chromium"):
        shots.find_browser()
    with pytest.raises(shots.ScreenshotError, match=r"--browser nowhere-chrome: not found"):
        shots.find_browser("nowhere-chrome")
    assert shots.main(["--results", str(tmp_path), "--no-mlflow"]) == 1
    assert "apt-get install chromium" in capsys.readouterr().err


def _pages(results: Path, report: str | None = None) -> None:
    """A report and a heads claims page under ``results/tiny`` (``report``: the report's body instead)."""
    (results / "tiny" / "heads").mkdir(parents=True)
    row = "<p style='color:#{:02x}4080'>claim {}: ours 0.{}, the paper 0.5</p>"
    claims = "".join(row.format(i * 37 % 256, i, i) for i in range(30))
    page = "<html><body><h1>{}</h1>{}</body></html>"
    (results / "tiny" / "report.html").write_text(report or page.format("report", claims))
    (results / "tiny" / "heads" / "claims.html").write_text(page.format("heads claims", claims))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_script_shoots_the_pages_and_refuses_a_blank_one(shots, tmp_path, capsys):
    if not _chromium(shots):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    results = tmp_path / "results"
    _pages(results)
    assert shots.main(["--results", str(results), "--no-mlflow", "--budget-ms", "2000"]) == 0
    out = results / "tiny" / "screenshots"
    assert sorted(p.name for p in out.glob("*.png")) == ["claims-heads.png", "report.png"]
    assert all(shots.blank_reason(p) is None for p in out.glob("*.png"))
    shutil.rmtree(results)
    _pages(results, "<html><body><div style='height:3000px'></div></body></html>")  # a report that draws nothing
    assert shots.main(["--results", str(results), "--no-mlflow", "--budget-ms", "2000"]) == 1
    assert "report.png" in (err := capsys.readouterr().err) and "is blank" in err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_script_shoots_the_mlflow_ui_of_a_store(shots, tmp_path, capsys):
    if not _chromium(shots):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    import psutil

    from seqmix.tracking import buffer as tb
    from seqmix.tracking import runs as tracking

    results = tmp_path / "results"
    _pages(results)
    uri = f"sqlite:///{results / 'mlflow.db'}"
    assert tracking.init_store(uri, ["heads"], results) is not None
    rec = tb.buffer_record(
        key="h.train",
        experiment="heads",
        run_name="exp1/k2/H1/seed0/train@tiny",
        tags={"rule": "train"},
        params={"train.lr": 0.01},
        metrics={"train_loss": [(1, 2.0), (2, 1.0)], "system/process_memory_rss_megabytes": [(0, 500.0)]},
        start_ms=1_700_000_000_000,
        end_ms=1_700_000_010_000,
    )
    buf = results / "tiny" / "heads" / "tracking-train.jsonl"
    tb.write_buffer(buf, [rec])
    assert tracking.ingest([buf], uri, results)["created"] == 1
    assert shots.main(["--results", str(results), "--paper", "heads"]) == 0
    out = results / "tiny" / "screenshots"
    names = ["mlflow-experiment", "mlflow-runs", "mlflow-run", "mlflow-run-system-metrics"]
    assert sorted(p.stem for p in out.glob("mlflow-*.png")) == sorted(names)
    assert "exp1/k2/H1/seed0/train@tiny" in capsys.readouterr().out  # the training run it chose

    def running(proc) -> bool:
        try:
            return proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    left = [p for p in psutil.Process().children(recursive=True) if running(p)]
    assert left == []  # the mlflow ui and its workers are gone (a zombie has ended: only not yet reaped)
