# seqmix: every experiment, table and figure of five papers on long-range memory in sequence mixers.
# Thin on purpose: configs are validated here, then the rules in workflow/rules/ build the DAG.
# Usage: snakemake --workflow-profile profiles/local            (tiny scale -> results/tiny/, `make reproduce`)
#        snakemake --workflow-profile profiles/local --config scale=cpu      (-> results/cpu/, beside tiny)
# `snakemake --lint` is clean (tests/workflow/test_lint.py): every shell rule names its software
# (`conda: envs/seqmix.yaml`, built and used with `--sdm conda`; otherwise the jobs run in the interpreter that
# runs Snakemake) and starts the CLI through its `cli` param, not a global (docs/architecture.md, "Snakemake lint").
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # the library, also without an install
from seqmix.config.base import ConfigError, load_yaml

# Read with seqmix's loader first: Snakemake's own says only "not valid JSON or YAML" for a syntax error
# and silently keeps the last of a key given twice; this one names the file, the line and the key.
try:
    load_yaml("config/config.yaml")
except ConfigError as e:
    raise WorkflowError(f"config error: {e}")


configfile: "config/config.yaml"


# report.html's front page: what the workflow does, the files config front_page names, then each paper
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/tracking.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/stages.smk"
include: "workflow/rules/artefacts.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        get_all_targets,


# The warm worker (seqmix.pipeline.warm): local jobs fork from one process that imported torch, pandas and
# matplotlib once. Started only when there are jobs to run on this machine (no dry run, no cluster executor);
# SEQMIX_WARM=0 in the environment turns it off. Snakemake's submission limit arms re-evaluation timers that pile up
# into hundreds of scheduling rounds a second: local runs drop its default, other runs keep one pending timer
# (seqmix.pipeline.scheduler_rounds).
onstart:
    tame_scheduler_rounds()
    start_warm_worker()


onsuccess:
    stop_warm_worker()


onerror:
    stop_warm_worker()
