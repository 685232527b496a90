# Papers, cells, path helpers and run specs shared by every rule. Paper ids are the files
# config/papers/<paper>.yaml (config `papers:` selects among them). Configs are validated against
# workflow/schemas/ here, before any job: a bad key or value stops the run with the file, the key path and
# what was expected. The results layout belongs to seqmix.results; artefacts are declared in the papers' YAML.
import json
import re
import shlex
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # the library, also without an install

from seqmix import results as layout
from seqmix.config import artefacts as A
from seqmix.config.base import ConfigError
from seqmix.config.figure_captions import shown_caption
from seqmix.config.leaves import cell_run_config, expand_cells
from seqmix.config.loading import blame_command_line, discover_papers, load_all
from seqmix.io import canonical_json
from seqmix.report.captions import OVERVIEW_CATEGORY, artefact_title, paper_categories, report_labels, rst_text
from seqmix.training.allocator import apply_to_environ

apply_to_environ()  # glibc malloc settings every job process inherits (see seqmix/training/allocator.py)

try:
    SEQMIX = load_all(config, workflow.basedir)
except ConfigError as e:
    raise WorkflowError(f"config error: {blame_command_line(e, config)}")

SCALE = config["scale"]
RESULTS_ROOT = config["results"]  # every scale side by side, and the MLflow store they share
RESULTS = str(layout.scale_root(RESULTS_ROOT, SCALE))  # this scale's run: every rule's outputs
PAPERS = SEQMIX["papers"]
CELLS = {p: expand_cells(p, cfg, SCALE) for p, cfg in PAPERS.items()}
# The interpreter running Snakemake runs the jobs too, by its absolute path (the `cli` param, get_seqmix_cli):
# a bare `python` would be whatever PATH finds, not the venv when snakemake is called as .venv/bin/snakemake.
SEQMIX_CLI = f"{shlex.quote(sys.executable)} -m seqmix"
EXPERIMENTS = sorted({e for cfg in PAPERS.values() for e in cfg["experiments"]})
# Each paper's category in report.html, by its short title (the paper's id where the title does not name it)
try:
    CATEGORY = paper_categories({p: cfg["title"] for p, cfg in PAPERS.items()})
except ValueError as e:
    raise WorkflowError(f"config error: {e}")
_clashes = sorted(
    f"config/papers/{p}.yaml: artefacts.{name}"
    for p, cfg in PAPERS.items()
    for name, decl in (cfg.get("artefacts") or {}).items()
    if decl["kind"] == "analysis" and name in EXPERIMENTS
)
if _clashes:  # its directory <paper>/<name>/ would look like an experiment's to the collect rule
    raise WorkflowError(f"config error: analysis names that are experiment names of a paper: {_clashes}")

if os.environ.get("SEQMIX_SHOW_SETTINGS"):
    # for tests and the curious: what the profiles resolved to
    print(
        f"seqmix-settings scale={SCALE} cores={workflow.resource_settings.cores} "
        f"executor={getattr(workflow.executor_plugin, 'name', None)} papers={','.join(PAPERS)}",
        file=sys.stderr,
    )


# Exact names, not patterns: `{paper}/{experiment}/summary.csv` (collect) must not match an analysis
# directory such as heads/theory/ (its input function would fail on an unknown experiment).
wildcard_constraints:
    paper="|".join(map(re.escape, PAPERS)),
    experiment="|".join(map(re.escape, EXPERIMENTS)),
    cell=r"[A-Za-z][A-Za-z0-9_]*-[0-9]+",
    artefact=r"[A-Za-z][A-Za-z0-9_]*",


def R(*parts):
    """A path under this scale's root (logs and benchmarks; outputs go through seqmix.results)."""
    return str(Path(RESULTS, *parts))


def cells_of(paper, experiment):
    return [cell for (exp, cell) in CELLS[paper] if exp == experiment]


def stages_of(paper, experiment):
    """The stages an experiment's cells run (default train -> evaluate; e.g. [diagnose] alone for models that
    are measured at initialisation)."""
    return A.stages_of(PAPERS[paper], experiment)


def cell_run_spec(wildcards):
    paper, experiment, cell = wildcards.paper, wildcards.experiment, wildcards.cell
    return canonical_json(cell_run_config(paper, experiment, cell, CELLS[paper][(experiment, cell)], SCALE, config))


def artefact_run_spec(wildcards):
    return canonical_json(
        A.artefact_spec(
            wildcards.paper, PAPERS[wildcards.paper], wildcards.artefact, SCALE, RESULTS, CELLS[wildcards.paper]
        )
    )


def claims_run_spec(wildcards):
    paper = wildcards.paper
    return canonical_json(A.claims_spec(paper, PAPERS[paper], SCALE, RESULTS_ROOT, config["tracking"]))


def dispatch_spec():
    """What `--dispatch` hands the heavy steps: the mode, the submitit settings and the resources at this
    scale (DISPATCH_RESOURCES: the one table, workflow/rules/resources.smk)."""
    sub = config.get("submitit") or {"cluster": "slurm", "folder": R(".submitit"), "rules": []}
    return canonical_json({"mode": config["dispatch"], **sub, "resources": DISPATCH_RESOURCES})


def threads_of(paper, experiment):
    return PAPERS[paper]["experiments"][experiment]["scales"][SCALE].get("threads", config["threads"])


def rule_envs_deployed():
    """Whether Snakemake deploys the rules' conda environment itself (`--sdm conda`); jobs then run in it."""
    return DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


# Input, params and threads functions of the rules (named, so a rule reads as data)
def get_seqmix_cli(wildcards, threads):
    """How a shell job starts the CLI (`"{params.cli} <command> ..."`): the interpreter that runs Snakemake, by its
    absolute path, so a printed command runs as printed; with `--sdm conda`, the `python` of the rule's own
    environment (envs/seqmix.yaml), which Snakemake activates before the command.
    A param, not a global in the shell command (Snakemake's lint: what a command uses is declared in the rule).
    It takes `threads` so that Snakemake counts it among the params derived from the job's settings, which are
    kept out of the params rerun trigger (as Snakemake 9 does): which interpreter runs seqmix says where the checkout
    and its venv live, not what a job computes, so moving them must not re-run finished jobs (a software change
    under `--sdm conda` still does, through Snakemake's software-env trigger).
    tests/workflow/test_lint.py runs a job and checks the interpreter is not among its recorded params."""
    return "python -m seqmix" if rule_envs_deployed() else SEQMIX_CLI


def get_threads(wildcards):
    return threads_of(wildcards.paper, wildcards.experiment)


def get_trained_marker(wildcards):
    """diagnose reads the trained model when the experiment trains (else the model at initialisation), and runs
    after every stage listed before it (evaluate too), so collect's last-stage markers imply all stages ran."""
    w = wildcards
    stages = stages_of(w.paper, w.experiment)
    before = stages[: stages.index("diagnose")] if "diagnose" in stages else [s for s in stages if s == "train"]
    return [str(layout.cell_marker(RESULTS, w.paper, w.experiment, w.cell, s)) for s in before]


def get_collect_inputs(wildcards):
    """The last stage's markers of every cell of an experiment."""
    w = wildcards
    last = stages_of(w.paper, w.experiment)[-1]
    return [str(layout.cell_marker(RESULTS, w.paper, w.experiment, c, last)) for c in cells_of(w.paper, w.experiment)]


def get_claims_inputs(wildcards):
    repair_corrupt_outputs([wildcards.paper])
    return claims_inputs(wildcards.paper)


def get_claims_caption(wildcards):
    return (
        f"Claims of {wildcards.paper}: the paper's numbers and statements beside ours, led by the verdict "
        "counts per kind (reproduction / derived / consistency, the last not evidence) and source "
        "(paper / spec-derived / closed-form); each with our value ± its 95% interval, the seeds used and a "
        "verdict (holds / differs / within noise / invalid / not run / not expected at this scale); secondary "
        "readings shown, not counted."
    )


def get_paper_category(wildcards):
    return CATEGORY[wildcards.paper]


def get_claims_labels(wildcards):
    return report_labels("Claims: verdicts beside the paper's values", "claims.csv", "claims")


def get_output_dir(wildcards, output):
    """The directory of a job's first output (an artefact's kind dir; the scale's root for report.md)."""
    return Path(output[0]).parent


def get_results_root(wildcards, output):
    """The results root (shared by the scales) of an output under results/.mlflow/."""
    return Path(output[0]).parents[1]


def paper_targets(paper):
    """A paper's claims and every declared artefact output, with the HTML renderings the report shows."""
    md, csv = layout.claims_paths(RESULTS, paper)
    html = [layout.claims_html_path(RESULTS, paper), *A.all_report_html(RESULTS, paper, PAPERS[paper])]
    return [str(md), str(csv)] + [str(p) for p in A.all_outputs(RESULTS, paper, PAPERS[paper]) + html]


def all_targets():
    return [R("report.md")] + [t for p in PAPERS for t in paper_targets(p)]


def claims_inputs(paper):
    """Everything a paper's claims read: each experiment's summary and every declared artefact output."""
    ins = [str(layout.summary_path(RESULTS, paper, e)) for e in PAPERS[paper]["experiments"]]
    return ins + [str(p) for p in A.all_outputs(RESULTS, paper, PAPERS[paper])]


def outputs_to_verify(paper):
    """The outputs whose corruption the DAG repairs: what the claims read, every cell's stage markers, the
    paper's claims.csv (the report reads it), and the run configs (JSON: one that does not parse failed
    every rerun with an error naming no file). A summary, marker or claims.csv whose checksum is missing
    counts as corrupt (seqmix.results.needs_checksum)."""
    markers = [str(layout.cell_marker(RESULTS, paper, e, c, s)) for (e, c) in CELLS[paper] for s in stages_of(paper, e)]
    runs = [str(layout.cell_run_path(RESULTS, paper, e, c)) for (e, c) in CELLS[paper]]
    runs += [str(layout.artefact_run_path(RESULTS, paper, a)) for a in PAPERS[paper].get("artefacts") or {}]
    runs += [str(layout.claims_run_path(RESULTS, paper))]
    return claims_inputs(paper) + markers + [str(layout.claims_paths(RESULTS, paper)[1])] + runs


# A summary, marker or claims.csv that fails or lacks its checksum (or, a run config, does not parse) is moved
# aside and its path
# forced (the DAG's forcefiles, as --force would), so the rule that makes it runs again and so does every rule
# downstream; moved aside alone, Snakemake would skip a missing file whose consumers are up to date (measured).
# Not at parse time but from the input functions of `rule all` and of a paper's claims (whichever target the
# DAG is built for reaches one of them), when Snakemake knows whether this is a dry run: a dry run moves
# nothing (it names what a run would move). Once per paper and process.
_REPAIRED = set()


def repair_corrupt_outputs(papers):
    for _paper in papers:
        if _paper in _REPAIRED:
            continue
        _REPAIRED.add(_paper)
        if workflow.dryrun:
            for _bad, _why in layout.find_corrupt(outputs_to_verify(_paper)):
                print(f"seqmix: {_bad} is corrupt ({_why}); a run moves it aside and makes it again", file=sys.stderr)
            continue
        for _bad in layout.discard_corrupt(outputs_to_verify(_paper)):
            workflow.dag.forcefiles.add(str(_bad))
            print(
                f"seqmix: {_bad} was corrupt; moved aside to {_bad.name}.corrupt, it will be made again",
                file=sys.stderr,
            )


def tame_scheduler_rounds():
    from seqmix.pipeline import scheduler_rounds

    scheduler_rounds.tame_rounds(workflow)


def start_warm_worker():
    # not for jobs in the rules' conda environment: the worker would run them in this interpreter instead
    if workflow.local_exec and not workflow.dryrun and not rule_envs_deployed():
        import tempfile

        from seqmix.pipeline import warm

        warm.start(tempfile.gettempdir())


def stop_warm_worker():
    from seqmix.pipeline import warm

    warm.stop()


def get_all_targets(wildcards):
    """The default target's inputs, after the repair of corrupt outputs."""
    repair_corrupt_outputs(PAPERS)
    return all_targets()
