# Targets, path helpers and the run-config rule shared by every paper.
# Configs are validated against workflow/schemas/ here, before any job: a bad key or value stops the
# run with the file, the key path and what was expected.
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # the library, also without an install

from seqmix.config import ConfigError, expand_cells, leaf_config, load_all, cell_run_config
from seqmix.io import canonical_json
from seqmix.training.allocator import apply_to_environ

apply_to_environ()  # glibc malloc settings every job process inherits (see seqmix/training/allocator.py)

try:
    SEQMIX = load_all(config, workflow.basedir)
except ConfigError as e:
    raise WorkflowError(f"config error: {e}")

SCALE = config["scale"]
RESULTS = config["results"]
PAPERS = SEQMIX["papers"]
CELLS = {p: expand_cells(p, cfg, SCALE) for p, cfg in PAPERS.items()}

if os.environ.get("SEQMIX_SHOW_SETTINGS"):
    # for tests and the curious: what the profiles resolved to
    print(f"seqmix-settings scale={SCALE} cores={workflow.resource_settings.cores} "
          f"executor={getattr(workflow.executor_plugin, 'name', None)} papers={','.join(PAPERS)}", file=sys.stderr)


wildcard_constraints:
    paper="|".join(PAPERS),
    experiment=r"[A-Za-z0-9_]+",
    cell=r"[A-Za-z][A-Za-z0-9_]*-[0-9]+",


def R(*parts):
    """A path under the results root."""
    return str(Path(RESULTS, *parts))


def cells_of(paper, experiment):
    return [cell for (exp, cell) in CELLS[paper] if exp == experiment]


def stages_of(paper, experiment):
    """The stages an experiment's cells run (default train -> evaluate; e.g. [diagnose] alone for models that
    are measured at initialisation)."""
    return PAPERS[paper]["experiments"][experiment].get("stages") or ["train", "evaluate"]


def cell_run_spec(paper, experiment, cell):
    return canonical_json(cell_run_config(paper, experiment, cell, CELLS[paper][(experiment, cell)], SCALE, config))


def paper_run_spec(paper):
    """What paper-level rules (tables, figures, claims) read: the paper config and each variant's
    resolved config at this scale."""
    cfg = PAPERS[paper]
    resolved = {e: {v: leaf_config(x, v, SCALE) for v in x["variants"]} for e, x in cfg["experiments"].items()}
    return canonical_json({"paper": paper, "scale": SCALE, "results": RESULTS, "tracking": config["tracking"],
                           "config": cfg, "resolved": resolved})


def run_spec(wildcards):
    if wildcards.name == "paper":
        return paper_run_spec(wildcards.paper)
    experiment, cell = wildcards.name.split(".", 1)
    return cell_run_spec(wildcards.paper, experiment, cell)


def dispatch_spec():
    """What `--dispatch` hands the heavy steps: the mode, the submitit settings and the resources at this
    scale (DISPATCH_RESOURCES: the one table, workflow/rules/resources.smk)."""
    sub = config.get("submitit") or {"cluster": "slurm", "folder": R(".submitit"), "rules": []}
    return canonical_json({"mode": config["dispatch"], **sub, "resources": DISPATCH_RESOURCES})


def threads_of(paper, experiment):
    return PAPERS[paper]["experiments"][experiment]["scales"][SCALE].get("threads", config["threads"])


PAPER_TARGETS = {}  # paper -> its tables, figures and claims (filled by <paper>.smk)


def all_targets():
    targets = [R("report.md")]
    for p in PAPERS:
        targets += PAPER_TARGETS[p]
    return targets


def claims_inputs(paper):
    """Everything a paper's claims read: each experiment's summary and the paper's theory outputs."""
    ins = [R(paper, e, "summary.csv") for e in PAPERS[paper]["experiments"]]
    return ins + PAPER_CLAIM_INPUTS.get(paper, [])


PAPER_CLAIM_INPUTS = {}  # paper -> extra inputs of its claims rule (filled by <paper>.smk)
PAPER_ARTEFACTS = {}  # paper -> tables and figures attached to its MLflow artefacts run
