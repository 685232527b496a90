"""The mixer contract, for every registered causal mixer: schema, shapes, causality, float64 gradcheck, step
decoding == parallel forward (where a recurrent form exists), clear ValueErrors, reported backend."""

from __future__ import annotations

import jsonschema
import pytest
import torch

from seqmix import registry
from seqmix.mixers.base import Mixer, build_mixer
from seqmix.ops.backends import backend_report
from seqmix.options import defaults, options_schema

D = 8  # tiny width: every mixer's head/state sizes below divide it
T = 6

# Every registered mixer with its own small options (Mixer clause 2): a new mixer needs no edit here.
OPTIONS = {n: dict(getattr(registry.get_mixer(n), "example_options", None) or {}) for n in registry.names("mixer")}
CAUSAL = sorted(n for n in OPTIONS if getattr(registry.get_mixer(n), "causal", None) is True)
CONTRACT = "see the contract in seqmix.mixers.base.Mixer"


def clause(n: int) -> str:
    return f"{CONTRACT}, clause {n}"


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


def test_the_docstring_states_the_clauses_this_module_checks():
    """The contract is Mixer's docstring: its numbered clauses are exactly those the tests here check."""
    import re

    stated = {int(n) for n in re.findall(r"^\s{4}(\d+)\. ", Mixer.__doc__, flags=re.M)}
    assert stated == {1, 2, 3, 4, 5, 6}, f"clauses {sorted(stated)}: update the tests of {__name__} with the docstring"
    assert "init_state(batch, dtype=torch.float32, device=None)" in Mixer.__doc__


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_example_options_are_declared(name):
    cls = registry.get_mixer(name)
    assert isinstance(getattr(cls, "example_options", None), dict), f"{name}: no example_options dict ({clause(2)})"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_causal_is_declared(name):
    assert isinstance(getattr(registry.get_mixer(name), "causal", None), bool), f"{name}: no bool causal ({clause(3)})"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_backend_is_a_string(name):
    m = make(name)
    run(m, torch.randn(1, T, D, dtype=torch.float64))
    assert isinstance(getattr(m, "backend", None), str), f"{name}: no str backend after a forward ({clause(5)})"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_step_mode_is_whole_and_has_the_documented_signature(name):
    import inspect

    cls = registry.get_mixer(name)
    has = (hasattr(cls, "init_state"), hasattr(cls, "step"))
    assert has[0] == has[1], f"{name}: init_state and step come together ({clause(6)})"
    if has[0]:
        assert cls.causal, f"{name}: step mode is for causal mixers ({clause(6)})"
        params = list(inspect.signature(cls.init_state).parameters.values())[1:]
        got = [(p.name, p.default) for p in params]
        want = [("batch", inspect.Parameter.empty), ("dtype", torch.float32), ("device", None)]
        assert got == want, f"{name}: init_state{tuple(p.name for p in params)} ({clause(6)})"


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_schema_is_valid_and_accepts_the_example_options(name):
    cls = registry.get_mixer(name)
    schema = options_schema(cls)
    jsonschema.Draft202012Validator.check_schema(schema)
    try:
        jsonschema.validate(OPTIONS[name], schema)
    except jsonschema.ValidationError as e:
        why = f"{name}: example_options {OPTIONS[name]} fail its schema: {e.message} ({clause(2)})"
        raise AssertionError(why) from None


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_shape_and_dtype(name):
    for dtype in (torch.float32, torch.float64):
        m = make(name, dtype)
        y = run(m, torch.randn(2, T, D, dtype=dtype))
        assert y.shape == (2, T, D) and y.dtype == dtype and torch.isfinite(y).all(), f"{name}: {clause(4)}"


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
        assert (y2[:, :t0] - y[:, :t0]).abs().max() <= 1e-12, f"{name}: the past sees the future ({clause(3)})"
        assert (y2[:, t0] - y[:, t0]).abs().max() > 1e-6, f"{name}: output t ignores input t ({clause(3)})"


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
    ok = torch.autograd.gradcheck(lambda inp: run(m, inp), (x,), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert ok, f"{name}: {clause(4)}"


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
    assert err <= {torch.float64: 1e-10, torch.float32: 1e-4}[dtype], f"{name}: step != forward, {err} ({clause(6)})"


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
    assert run(m, x).shape == (1, 16, 64), f"{name}: {clause(1)}"


def test_options_are_keyword_only_and_typed():
    import inspect

    for name in OPTIONS:
        cls = registry.get_mixer(name)
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        first = params[0].name == "d_model" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert first, f"{name}: {clause(1)}"
        assert all(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params[1:]), f"{name}: {clause(1)}"
        if "fixed_options" not in cls.__dict__:  # presets forward **kw to their base class
            kw_only = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
            assert {"layer_idx", "seq_len"} <= kw_only, f"{name}: {clause(1)}"


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
