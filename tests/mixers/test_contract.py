"""The mixer contract, for every registered causal mixer: schema, shapes, causality, float64 gradcheck, step
decoding == parallel forward (where a recurrent form exists), clear ValueErrors, reported backend."""

from __future__ import annotations

import jsonschema
import pytest
import torch

from seqmix import registry
from seqmix.mixers.base import build_mixer
from seqmix.ops.backends import backend_report
from seqmix.options import defaults, options_schema

D = 8  # tiny width: every mixer's head/state sizes below divide it
T = 6

# options that make each mixer tiny; every registered mixer must appear here (test_every_mixer_is_covered)
OPTIONS = {
    "softmax_attention": {"heads": 2},
    "nope": {"heads": 2},
    "rope": {"heads": 2},
    "rope_qkv": {"heads": 2},
    "alibi": {"heads": 2},
    "so2_random_qk": {"heads": 2},
    "so2_random_qkv": {"heads": 2},
    "so2_learned_qk": {"heads": 2},
    "so2_learned_qkv": {"heads": 2},
    "path": {"heads": 2, "chunk": 4},
    "s4d": {"d_state": 3},
    "s6": {"d_state": 3},
    "b2s6": {"blocks": 2, "d_state": 3},
    "b2s6_real": {"blocks": 2, "d_state": 3},
    "b2s6_nobias": {"blocks": 2, "d_state": 3},
    "mamba": {"expand": 1, "unit_options": {"d_state": 3}},
    "mamba2": {"d_state": 3, "headdim": 4, "chunk": 4},
    "sessa": {"heads": 2},
    "sessa_nofb": {"heads": 2},
    "linear_ssm": {"state": 3},
    "factorized_linear_attention": {"heads": 2},
    "mha": {"heads": 2},
    "bidirectional": {"mixer": {"name": "s4d", "d_state": 3}},
}
NONCAUSAL = {"bidirectional"}
CAUSAL = sorted(set(OPTIONS) - NONCAUSAL)


def make(name: str, dtype=torch.float64, seed=0) -> torch.nn.Module:
    torch.manual_seed(seed)
    m = build_mixer(name, D, seq_len=T, **OPTIONS[name]).to(dtype)
    if name.startswith("so2_learned"):  # leave the RoPE point so the learned angles matter
        with torch.no_grad():
            m.angle_proj.weight.normal_(0, 0.5)
    return m


def run(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    if hasattr(m, "reseed"):
        m.reseed()  # random rotations: the same angles on every call
    return m(x)


def test_every_mixer_is_covered():
    missing = set(registry.names("mixer")) - set(OPTIONS)
    assert not missing, f"newly registered mixers {sorted(missing)}: add tiny options for them to OPTIONS here"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_schema_is_valid_and_accepts_the_test_options(name):
    cls = registry.get_mixer(name)
    schema = options_schema(cls)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(OPTIONS[name], schema)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_shape_and_dtype(name):
    for dtype in (torch.float32, torch.float64):
        m = make(name, dtype)
        y = run(m, torch.randn(2, T, D, dtype=dtype))
        assert y.shape == (2, T, D) and y.dtype == dtype and torch.isfinite(y).all()


@pytest.mark.parametrize("name", CAUSAL)
def test_causality(name):
    m = make(name)
    x = torch.randn(2, T, D, dtype=torch.float64)
    y = run(m, x)
    for t0 in (1, T - 2):
        x2 = x.clone()
        x2[:, t0] += torch.randn(2, D, dtype=torch.float64)
        y2 = run(m, x2)
        # positions before t0 unchanged (FFT convolutions only to rounding); t0 itself does change
        assert (y2[:, :t0] - y[:, :t0]).abs().max() <= 1e-12, name
        assert (y2[:, t0] - y[:, t0]).abs().max() > 1e-6, name


def test_bidirectional_sees_the_future_and_respects_padding():
    m = make("bidirectional")
    x = torch.randn(2, T, D, dtype=torch.float64)
    x2 = x.clone()
    x2[:, -1] += 1
    assert (run(m, x2)[:, 0] - run(m, x)[:, 0]).abs().max() > 1e-6
    lengths = torch.tensor([T, 4])
    y = m(x, lengths=lengths)
    y_short = m(x[1:, :4], lengths=None)
    assert torch.allclose(y[1, :4], y_short[0], atol=1e-12)  # padding after the valid prefix is never read


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_gradcheck_float64(name):
    m = make(name)
    x = torch.randn(1, 5 if name != "factorized_linear_attention" else T, D, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda inp: run(m, inp), (x,), eps=1e-6, atol=1e-5, rtol=1e-4)


STEPPERS = [n for n in CAUSAL if hasattr(registry.get_mixer(n), "step")]


def test_recurrent_mixers_have_steps():
    assert {"s4d", "s6", "b2s6", "mamba", "mamba2", "sessa", "sessa_nofb"} <= set(STEPPERS)


@pytest.mark.parametrize("name", STEPPERS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_step_decoding_equals_parallel_forward(name, dtype):
    m = make(name, dtype)
    x = torch.randn(2, T, D, dtype=dtype)
    y = m(x)
    state, ys = m.init_state(2, dtype), []
    for t in range(T):
        yt, state = m.step(x[:, t], state)
        ys.append(yt)
    err = float((torch.stack(ys, 1) - y).detach().norm() / y.detach().norm())
    assert err <= {torch.float64: 1e-10, torch.float32: 1e-4}[dtype], err


MINE = [n for n in sorted(OPTIONS) if n not in ("linear_ssm", "factorized_linear_attention", "mha")]


@pytest.mark.parametrize("name", MINE)
def test_wrong_width_raises(name):
    m = make(name)
    with pytest.raises(ValueError, match="d_model"):
        m(torch.randn(1, T, D + 2, dtype=torch.float64))


SCAN_MIXERS = {"s6", "b2s6", "b2s6_real", "b2s6_nobias", "mamba"}  # selective scan: the lean backend on CPU


@pytest.mark.parametrize("name", MINE)
def test_backend_is_reported(name):
    m = make(name)
    run(m, torch.randn(1, T, D, dtype=torch.float64))
    expected = "lean" if name in SCAN_MIXERS else "reference"
    assert m.backend == expected
    assert set(backend_report(torch.nn.Sequential(m)).values()) == {expected}


@pytest.mark.parametrize(
    "name,kw,arg",
    [
        ("rope", {"heads": 2}, "head_dim"),  # width 6: head_dim 3 is odd
        ("so2_learned_qkv", {"heads": 2}, "head_dim"),
        ("sessa", {"heads": 2}, "head_dim"),
        ("softmax_attention", {"heads": 4}, "heads"),
        ("b2s6", {"blocks": 4}, "blocks"),
        ("mamba2", {"headdim": 8}, "headdim"),  # d_inner = 20
        ("s6", {"d_state": 0}, "d_state"),
    ],
)
def test_shape_errors_name_the_argument(name, kw, arg):
    width = 10 if arg in ("heads", "blocks", "headdim") else 6
    with pytest.raises(ValueError, match=arg):
        build_mixer(name, width, **kw)


# ----------------------------------------------------------------------------- one declaration, one contract

REQUIRED = {"bidirectional": {"mixer": {"name": "s4d"}}}  # options without a default


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_mixer_is_built_by_the_one_contract_from_its_declared_defaults(name):
    """Mixer(d_model, *, layer_idx, seq_len, **options): every registered class, called directly with the
    defaults its own signature declares (the generated schema records the same values)."""
    cls = registry.get_mixer(name)
    opts = {**defaults(cls), **REQUIRED.get(name, {})}
    schema = options_schema(cls)
    assert set(schema.get("required", [])) <= set(REQUIRED.get(name, {}))
    for k, v in defaults(cls).items():
        if k in schema["properties"] and "default" in schema["properties"][k]:
            assert schema["properties"][k]["default"] == (list(v) if isinstance(v, tuple) else v), (name, k)
    jsonschema.validate({k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}, schema)
    torch.manual_seed(0)
    m = cls(64, layer_idx=2, seq_len=16, **opts)
    x = torch.randn(1, 16, 64)
    assert run(m, x).shape == (1, 16, 64)


def test_options_are_keyword_only_and_typed():
    import inspect

    for name in OPTIONS:
        cls = registry.get_mixer(name)
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert params[0].name == "d_model" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, name
        if "fixed_options" not in cls.__dict__:  # presets forward **kw to their base class
            assert {"layer_idx", "seq_len"} <= {p.name for p in params if p.kind is p.KEYWORD_ONLY}, name


def test_unknown_or_fixed_options_are_value_errors_naming_them():
    with pytest.raises(ValueError, match=r"unknown option.*'heads_count'.*heads"):
        build_mixer("rope", 8, heads_count=2)
    with pytest.raises(ValueError, match=r"fixes \['position'\]"):
        build_mixer("rope", 8, position="alibi")
    assert "position" not in options_schema(registry.get_mixer("rope"))["properties"]
    assert set(options_schema(registry.get_mixer("sessa_nofb"))["properties"]) == {"heads", "rope_base"}


def test_layer_idx_gives_each_layer_its_own_random_angle_stream():
    """The mixer derives per-layer seeds from its own option and layer_idx (no special case in the blocks)."""
    from seqmix.models.lm import DecoderLM

    a0 = build_mixer("so2_random_qk", 8, heads=2, angle_seed=5)
    a1 = build_mixer("so2_random_qk", 8, heads=2, angle_seed=5, layer_idx=1)
    assert (a0.angle_seed, a1.angle_seed) == (5, 5 + 7919)
    x = torch.randn(1, 6, 8)
    a0.reseed(), a1.reseed()
    assert not torch.equal(a0.angles(x)[0], a1.angles(x)[0])
    lm = DecoderLM(vocab_size=10, d_model=8, n_layers=3, mixer={"name": "so2_random_qk", "heads": 2})
    assert [b.mixer.angle_seed for b in lm.blocks] == [12345 + 7919 * i for i in range(3)]


def test_model_facts_reach_only_mixers_that_declare_them():
    """vocab_size is filled in from the model for mixers that declare it (per-token angle tables), never
    by mixer name; a config value wins."""
    learned = build_mixer("so2_learned_qk", 8, heads=2, model_facts={"vocab_size": 11})
    assert learned.needs_tokens and learned.angle_table.shape[0] == 11
    given = build_mixer("so2_learned_qk", 8, heads=2, vocab_size=7, model_facts={"vocab_size": 11})
    assert given.angle_table.shape[0] == 7
    rope = build_mixer("rope", 8, heads=2, model_facts={"vocab_size": 11})
    assert not rope.needs_tokens and not hasattr(rope, "angle_table")
    hidden = build_mixer("softmax_attention", 8, heads=2, position="so2_learned", model_facts={"vocab_size": 11})
    assert not hidden.needs_tokens and hasattr(hidden, "angle_proj")  # token_angles is off unless asked for
    build_mixer("s4d", 8, d_state=3, model_facts={"vocab_size": 11})  # not declared: not passed


def test_no_component_carries_a_hand_written_schema():
    """One declaration per component: every registered mixer, model and task is validated against the schema
    generated from its signature, none keeps a config_schema dict beside it."""
    for kind in ("mixer", "model", "task"):
        for name in registry.names(kind):
            cls = registry.get(kind, name)
            assert not hasattr(cls, "config_schema"), (kind, name)
            jsonschema.Draft202012Validator.check_schema(options_schema(cls))
