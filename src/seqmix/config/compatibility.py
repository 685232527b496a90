"""Which (task, model, mixer) triples can run together, from what their classes declare
(``catalogue.CAPABILITIES``), never from their names.

A leaf whose triple is incompatible is a config error, unless its experiment says ``incompatible: skip``: the
cross-paper matrix declares every mixer for every task, and the pairs that cannot run are dropped at loading
and listed (``cfg["excluded"]``: experiment, variant, reason), so a table shows them as excluded, not as
missing results.
"""

from __future__ import annotations


def incompatibility(task, model, mixer) -> str | None:
    """Why the catalogue entries ``task``, ``model`` and ``mixer`` (any may be None) cannot run together, or None."""
    tc = task.capabilities if task is not None else {}
    mc = model.capabilities if model is not None else {}
    xc = mixer.capabilities if mixer is not None else {}
    if mc.get("requires_causal_mixer") and xc and not xc.get("causal", True):
        return f"model {model.name!r} predicts the next token and needs a causal mixer; {mixer.name!r} is not causal"
    if tc.get("evaluates_longer") and xc.get("fixed_length"):
        return (
            f"task {task.name!r} evaluates beyond the training length; {mixer.name!r} has parameters tied to the "
            "training length (fixed_length)"
        )
    return None
