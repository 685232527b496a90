# Cluster resources of the heavy rules (train, evaluate, diagnose), from the one table in
# config/config.yaml (`resources:`; seqmix.config.resources). Both SLURM routes read it:
# - the executor-plugin profiles (profiles/slurm, profiles/slurm-local): each heavy rule sets
#   `resources: **slurm_resources_of("<rule>")`, so the profiles carry no resources of their own;
# - submitit dispatch: dispatch_spec() hands DISPATCH_RESOURCES to the job in its settings.
# Include before the rules that use it. Resources never re-run a finished step.
from seqmix.config.resources import resolve as _resolve_resources, slurm_resources as _slurm_resources

DISPATCH_RESOURCES = _resolve_resources(config.get("resources"), config["scale"])


def slurm_resources_of(rule_name):
    """The executor plugin's resources (runtime, mem_mb, cpus_per_task, gpu, tasks, slurm_partition,
    slurm_account) of one heavy rule at this scale."""
    return _slurm_resources(DISPATCH_RESOURCES[rule_name])
