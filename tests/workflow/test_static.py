"""The DAG cannot rot: every scale of every paper dry-runs, profiles resolve as documented, every rule has
log and benchmark, and nothing reads ../shared (the lint: tests/workflow/test_lint.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqmix.config.loading import SCALES
from tests.conftest import ROOT
from tests.test_readme_commands import readme_dry_run_scales

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def smk(*args, env=None, cwd=ROOT):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([*SNAKEMAKE, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=300)


def papers_present():
    return sorted(p.stem for p in (ROOT / "config" / "papers").glob("*.yaml"))


# every scale is dry-run once: here, or as the README prints it (tests/test_readme_commands.py runs every printed
# dry run; a paper-scale one costs about 12 CPU-seconds)
@pytest.mark.parametrize("scale", [s for s in SCALES if s not in readme_dry_run_scales()])
def test_dry_run_every_scale_of_every_paper(scale, tmp_path):
    papers = papers_present()
    assert papers, "no paper configs"
    r = smk(
        "-n",
        "--workflow-profile",
        "profiles/local",
        "--directory",
        str(ROOT),
        "--config",
        f"scale={scale}",
        f"papers=[{','.join(papers)}]",
        f"results={tmp_path / 'results'}",
        env={"SEQMIX_SHOW_SETTINGS": "1"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"scale={scale}" in r.stderr
    assert "train" in r.stdout + r.stderr
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


PROFILES = {
    # profile: (executor, cores, scale)
    "profiles/local": ("local", 2, "tiny"),
    "profiles/slurm": ("slurm", None, "paper"),
    "profiles/slurm-local": ("slurm", None, "tiny"),
}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_profiles_resolve(profile, tmp_path):
    from snakemake.cli import parse_args

    executor, cores, scale = PROFILES[profile]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        _, args = parse_args(["--workflow-profile", profile, "-n"])
    finally:
        os.chdir(cwd)
    assert args.executor == executor
    assert args.cores == cores
    assert args.rerun_incomplete is True
    # no --config here: it would replace the profile's `config:` entry (Snakemake's per-key override). One small
    # target: the settings print while the Snakefile loads; the whole DAG of every scale is the test above's
    r = smk("-n", "--workflow-profile", profile, "results/.mlflow/init.json", env={"SEQMIX_SHOW_SETTINGS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(rf"seqmix-settings scale={scale}\b", r.stderr), r.stderr[-2000:]


def test_default_profile_is_executor_and_scale_independent():
    import yaml

    keys = yaml.safe_load((ROOT / "profiles" / "default" / "profile.yaml").read_text())
    forbidden = {
        "executor",
        "cores",
        "jobs",
        "config",
        "configfile",
        "default-resources",
        "set-resources",
        "resources",
        "latency-wait",
        "local-cores",
    }
    assert not forbidden & set(keys), f"profiles/default must not set {forbidden & set(keys)}"


def _rule_bodies():
    """(name, body) of every rule in workflow/rules/*.smk, the ones a loop builds (`rule:` + `name:`) included."""
    out = []
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(\s*)rule(?: (\w+))?:\s*$", line)
            if not m:
                continue
            indent, body = len(m.group(1)), []
            for nxt in lines[i + 1 :]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                body.append(nxt)
            out.append((m.group(2) or f"{path.name}:{i + 1}", "\n".join(body)))
    return out


def test_every_rule_has_log_and_benchmark():
    rules = _rule_bodies()
    assert len(rules) >= 10
    for name, body in rules:
        assert re.search(r"^\s+log:", body, flags=re.M), f"rule {name} has no log:"
        assert re.search(r"^\s+benchmark:", body, flags=re.M), f"rule {name} has no benchmark:"


def test_no_per_paper_rule_files_and_one_caption_template():
    """Artefacts are data: no <paper>.smk, no paper-specific dict in the rules, one caption template."""
    names = {p.stem for p in (ROOT / "workflow" / "rules").glob("*.smk")}
    assert not names & set(papers_present()), names & set(papers_present())
    text = "\n".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    for paper in papers_present():
        assert f'"{paper}"' not in text, f"the rules name the paper {paper!r}"
    assert not re.search(r"PAPER_(TARGETS|CLAIM_INPUTS|ARTEFACTS)", text)
    # one caption template for every artefact, and the report's front page (Snakefile `report:`)
    assert sorted(p.name for p in (ROOT / "workflow" / "report").glob("*.rst")) == ["artefact.rst", "workflow.rst"]
    assert re.search(r"resources:\s*\n\s*heavy", text) is None


def test_tables_figures_claims_are_report_items():
    """Guards: report.html showed claims and tables as links to .md files it cannot render. What the report
    shows is an image or HTML: a figure's PNG, a table's CSV rendered as <paper>/report/<name>.html, the claims
    as claims.html; each through report() with the one caption template, the artefact's caption as a param
    (``shown_caption``), and no two shown files share a caption."""
    from seqmix import results as layout
    from seqmix.config.artefacts import report_files, report_html
    from seqmix.config.base import load_yaml

    text = (ROOT / "workflow" / "rules" / "artefacts.smk").read_text()
    assert re.search(r'report\(\s*path,\s*caption="../report/artefact.rst",\s*category=CATEGORY\[paper\]', text)
    assert "labels=labels" in text  # the report lists artefacts by title, file and rule, not by path
    assert "caption=rst_text(shown_caption(_cfg, _name, SCALE))" in text  # a figure's names paper values and seeds
    assert (
        "if Path(o).name in _shown" in text and "html=[_report_item(str(_html), _paper, _name, _decl, _data)]" in text
    )
    stages = (ROOT / "workflow" / "rules" / "stages.smk").read_text()
    assert re.search(
        r'html=report\(\s*str\(layout.claims_html_path\(RESULTS, "\{paper\}"\)\),\s*category=get_paper_category,'
        r'\s*subcategory="claims",\s*labels=get_claims_labels',
        stages,
    )
    assert "--out-html {output.html:q}" in stages
    cfg = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    heads = cfg["artefacts"]
    assert report_files(heads["table1"]) == ["table1.csv"]
    assert report_html("r", "heads", cfg, "table1") == layout.report_html_path("r", "heads", "table1")
    assert report_files(heads["figure3_left"]) == ["figure3_left.png"]
    assert report_html("r", "heads", cfg, "figure3_left") is None
    assert report_files(heads["theory"]) == []
    for paper in papers_present():
        arts = load_yaml(ROOT / "config" / "papers" / f"{paper}.yaml")["artefacts"]
        shown = {name: report_files(decl) for name, decl in arts.items() if report_files(decl)}
        assert all(len(files) == 1 and files[0].endswith((".png", ".csv")) for files in shown.values()), shown
        captions = [arts[name]["caption"] for name in shown]
        assert len(set(captions)) == len(captions), f"{paper}: two shown files share a caption"


def test_claims_overview_is_a_report_item_the_front_page_leads_with():
    """Guards (issue 26): the report's front page had no verdict counts. report_index also writes the scale's
    claims_overview.html, declared through report() so report.html shows it, and config front_page lists it
    first; the front page keeps front_page's order and leaves the overview out of the papers' list."""
    from seqmix.config.base import load_yaml
    from seqmix.report.captions import OVERVIEW_CATEGORY

    text = (ROOT / "workflow" / "rules" / "report.smk").read_text()
    assert re.search(r'overview=report\(\s*R\("claims_overview.html"\),\s*category=OVERVIEW_CATEGORY', text)
    assert "--out {output.md:q} --html {output.overview:q} --counts {output.counts:q}" in text
    assert load_yaml(ROOT / "config" / "config.yaml")["front_page"][0] == "claims_overview.html"
    front = (ROOT / "workflow" / "report" / "workflow.rst").read_text()
    assert '{% for name in snakemake.config.get("front_page", []) %}' in front
    assert f'{{% if cat.name != "{OVERVIEW_CATEGORY}" %}}' in front


def test_every_shipped_profile_hides_the_rule_graph_as_the_front_page_says():
    """The front page says Snakemake's rule graph is hidden by workflow/report/style.css in every shipped
    profile: each profiles/*/profile.yaml names it as report-stylesheet, and the stylesheet hides #rulegraph."""
    from seqmix.config.base import load_yaml

    profiles = sorted((ROOT / "profiles").glob("*/profile.yaml"))
    assert profiles
    for profile in profiles:
        assert load_yaml(profile).get("report-stylesheet") == "workflow/report/style.css", profile
    assert "#rulegraph { display: none; }" in (ROOT / "workflow" / "report" / "style.css").read_text()
    front = " ".join((ROOT / "workflow" / "report" / "workflow.rst").read_text().split())
    assert "which every shipped profile (``profiles/*/profile.yaml``) names as its ``report-stylesheet``" in front


def test_no_shell_rule_starts_a_bare_python():
    """Guards: `python -m seqmix` in a rule ran whatever `python` PATH found, so the README's direct
    `.venv/bin/snakemake ...` failed outside `make`. Shell commands start with {params.cli}: get_seqmix_cli,
    SEQMIX_CLI (sys.executable) unless `--sdm conda` runs the jobs in the rules' own environment."""
    text = "\n".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    # the one bare `python`: the rules' conda environment's, which Snakemake activates under `--sdm conda`
    conda_only = '    return "python -m seqmix" if rule_envs_deployed() else SEQMIX_CLI\n'
    assert text.count(conda_only) == 1, "get_seqmix_cli no longer picks the interpreter as documented"
    assert not re.search(r"""["']\s*python3?\s""", text.replace(conda_only, "")), "a rule starts a bare python"
    shells = re.findall(r"^\s+shell:\s*\n\s+(.+)$", text, flags=re.M)
    assert len(shells) >= 9 and all(s.startswith('"{params.cli} ') for s in shells), shells
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert re.search(r"^SEQMIX_CLI = .*sys\.executable", common, flags=re.M)


@pytest.mark.parametrize("paper", papers_present())
def test_declared_artefacts_are_the_packages(paper):
    """Every artefact a paper's YAML declares has its function in seqmix.papers.<paper>.ARTEFACTS, and back."""
    import importlib

    from seqmix.config.base import load_yaml

    declared = set(load_yaml(ROOT / "config" / "papers" / f"{paper}.yaml").get("artefacts") or {})
    assert declared == set(importlib.import_module(f"seqmix.papers.{paper}").ARTEFACTS)


def test_nothing_reads_shared():
    offenders = []
    for top in ("src", "workflow", "config", "tests", "profiles", "Makefile", "Snakefile", "benchmarks", ".ci"):
        base = ROOT / top
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()] if base.exists() else []
        for f in files:
            if f.suffix in (".pyc", ".png", ".pdf") or f == Path(__file__).resolve():
                continue
            try:
                text = f.read_text()
            except UnicodeDecodeError:
                continue
            if re.search(r"\.\./shared|shared/(specs|seeds|DESIGN)", text):
                offenders.append(str(f.relative_to(ROOT)))
    assert not offenders, f"these read ../shared: {offenders}"
