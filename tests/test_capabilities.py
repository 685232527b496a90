"""The capability protocols match the mixers and models that have them, and the probes that need one fail
with a clear TypeError on a model without it (instead of reading attributes by name)."""

from __future__ import annotations

import pytest
import torch

from seqmix.capabilities import (
    InteractionOperator,
    LagOperator,
    LastOutput,
    LayerwiseEdgeAttention,
    SoleMixer,
    StepMode,
    TokenInput,
    ValueOutputProduct,
)
from seqmix.mixers.base import build_mixer
from seqmix.models.bare import BareMixer
from seqmix.models.cascade import CascadeTransformer
from seqmix.tasks.lag_sensitivity import LagSensitivity
from seqmix.tasks.reachability import Reachability
from seqmix.tasks.rotation_teacher import RotationTeacher, student_mixer

ALL = (InteractionOperator, LagOperator, LastOutput, LayerwiseEdgeAttention, SoleMixer, StepMode, ValueOutputProduct)
# registered mixer (tiny options) -> the capabilities it must have; every other protocol of ALL it must not have
EXPECTED = {
    ("linear_ssm", (("state", 4),)): {LagOperator},
    ("mha", (("heads", 2),)): {ValueOutputProduct, LastOutput},
    ("factorized_linear_attention", (("heads", 2),)): {InteractionOperator},
    ("s4d", (("d_state", 3),)): {StepMode},
    ("mamba2", (("d_state", 3), ("headdim", 4), ("chunk", 4))): {StepMode},
    ("sessa", (("heads", 2),)): {StepMode},
}


@pytest.mark.parametrize("name,options", list(EXPECTED), ids=[n for n, _ in EXPECTED])
def test_mixers_have_exactly_their_capabilities(name, options):
    m = build_mixer(name, 8, seq_len=6, **dict(options))
    have = {p for p in ALL if isinstance(m, p)}
    assert have == EXPECTED[(name, options)]


def test_models_declare_what_probes_read():
    bare = BareMixer(d_in=4, d_out=4, seq_len=6, mixer={"name": "linear_ssm", "state": 4})
    assert isinstance(bare, SoleMixer) and isinstance(bare.sole_mixer(), LagOperator)
    assert not isinstance(bare, LagOperator)  # the closed forms belong to the mixer, reached through sole_mixer
    task = Reachability(n=6, p=0.3, L=2, d=8)
    cascade = CascadeTransformer(**task.model_inputs(), d_mlp=8)
    assert isinstance(cascade, LayerwiseEdgeAttention) and not isinstance(cascade, SoleMixer)
    w_qk, w_ov = cascade.attention_maps(1)
    assert torch.equal(w_qk, cascade.layer(1).w_qk()) and torch.equal(w_ov, cascade.layer(1).w_ov())
    assert [len(ps) for ps in cascade.layer_parameters()] == [len(list(lay.parameters())) for lay in cascade.layers]
    attn = build_mixer("so2_learned_qk", 8, seq_len=6, heads=2)
    assert isinstance(attn, TokenInput)


def test_probes_refuse_models_without_the_capability():
    from seqmix.diagnostics.probes import diagnose
    from seqmix.tasks.reachability_metrics import cascade_diagnostics

    ssm_student = BareMixer(d_in=2, d_out=2, seq_len=4, mixer={"name": "linear_ssm", "state": 2})
    with pytest.raises(TypeError, match="InteractionOperator"):
        student_mixer(ssm_student)
    task = Reachability(n=6, p=0.3, L=2, d=8)
    with pytest.raises(TypeError, match="LayerwiseEdgeAttention"):
        cascade_diagnostics(task, ssm_student, task.test_set())
    # a task without a probe of its own gets the influence diagnostic, the same for every model
    rows = diagnose(RotationTeacher(k=2, n=4), ssm_student, seed=0)["rows"]
    assert {"influence", "exp_rate", "effective_memory"} <= {r["quantity"] for r in rows}
    out = diagnose(LagSensitivity(d=2, T=[2], draws=1), ssm_student.double(), seed=0)
    assert out["rows"][0]["rel_err"] < 1e-10  # the SSM's closed form was found through the protocol
