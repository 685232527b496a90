# seqmix: every experiment, table and figure of five papers on long-range memory in sequence mixers.
# Thin on purpose: configs are validated here, then the rules in workflow/rules/ build the DAG.
# Usage: snakemake --workflow-profile profiles/local            (tiny scale -> results/tiny/, `make reproduce`)
#        snakemake --workflow-profile profiles/local --config scale=cpu      (-> results/cpu/, beside tiny)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/tracking.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/stages.smk"
include: "workflow/rules/artefacts.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
