"""The one table of cluster resources of the heavy steps, read by both SLURM routes.

``config/config.yaml`` ``resources:``: ``default`` applies to every heavy rule, ``<rule>`` to one of them,
and ``scales.<scale>.default`` / ``scales.<scale>.<rule>`` override those at one scale. Keys (submitit's
names): timeout_min, mem_gb, cpus_per_task, gpus_per_node, tasks_per_node, partition, account.

- submitit dispatch gets ``resolve(table, scale)`` in its settings (seqmix.pipeline.dispatch reads it);
- the executor-plugin profiles get ``slurm_resources(resolve(...)[rule])`` as the rule's ``resources:``
  (workflow/rules/resources.smk), so the profiles hold no resources of their own.
"""

from __future__ import annotations

HEAVY_RULES = ("train", "evaluate", "diagnose")


def resolve(table: dict | None, scale: str) -> dict[str, dict]:
    """{"default": ..., "train": ..., "evaluate": ..., "diagnose": ...}: every heavy rule's resources at
    ``scale`` (default, then the rule's own, then the scale's default, then the scale's rule entry)."""
    table = table or {}
    at_scale = (table.get("scales") or {}).get(scale) or {}
    default = {**(table.get("default") or {}), **(at_scale.get("default") or {})}
    out = {"default": default}
    for rule in HEAVY_RULES:
        out[rule] = {
            **(table.get("default") or {}),
            **(table.get(rule) or {}),
            **(at_scale.get("default") or {}),
            **(at_scale.get(rule) or {}),
        }
    return out


def slurm_resources(res: dict) -> dict:
    """The same resources under the names of snakemake-executor-plugin-slurm (runtime in minutes, mem_mb;
    an unset partition/account is '' so the plugin leaves it to the site's default)."""
    return {
        "runtime": int(res.get("timeout_min", 60)),
        "mem_mb": int(round(float(res.get("mem_gb", 4)) * 1024)),
        "cpus_per_task": int(res.get("cpus_per_task", 1)),
        "gpu": int(res.get("gpus_per_node", 0)),
        "tasks": int(res.get("tasks_per_node", 1)),
        "slurm_partition": res.get("partition") or "",
        "slurm_account": res.get("account") or "",
    }
