"""The mixer contract: every numbered clause of the docstring of seqmix.mixers.base.Mixer, checked for every
registered mixer, and no rule the clauses do not state. A test that checks clause N is named test_clause_N_...
(the first test holds the clauses stated and the clauses tested equal). What a check needs of a mixer it reads
from the class (example_options, causal, fixed_length, init_state/step, the options its signature declares),
so a new mixer needs no edit here: `pytest tests/mixers/test_contract.py -k my_mixer` runs the contract on it,
as tests/workflow/test_toy_paper_dag.py does on a throwaway mixer. The last section holds what build_mixer,
register_preset and particular mixers promise beyond the clauses."""

from __future__ import annotations

import inspect
import re

import jsonschema
import pytest
import torch

from seqmix import registry
from seqmix.capabilities import RandomAngles, StepMode
from seqmix.mixers.base import Mixer, build_mixer
from seqmix.ops.backends import backend_report
from seqmix.ops.dispatch import BACKEND_NAMES
from seqmix.options import declared_options, defaults, options_schema

D = 8  # tiny width: every mixer's example head/state sizes divide it
T = 6

NAMES = registry.names("mixer")


def declared(name: str, attr: str, default=None):
    """A class attribute of mixer ``name``; one missing fails the test of its clause, not the collection."""
    return getattr(registry.get_mixer(name), attr, default)


def example(name: str) -> dict:
    return dict(declared(name, "example_options") or {})


CAUSAL = [n for n in NAMES if declared(n, "causal") is True]
NON_CAUSAL = [n for n in NAMES if declared(n, "causal") is False]
STEPPERS = [n for n in CAUSAL if declared(n, "init_state") and declared(n, "step")]
# (name, default) of init_state's parameters after self, as the StepMode capability declares them
STEP_SIGNATURE = [(p.name, p.default) for p in list(inspect.signature(StepMode.init_state).parameters.values())[1:]]


def clause(n: int) -> str:
    return f"see the contract in seqmix.mixers.base.Mixer, clause {n}"


def make(name: str, dtype=torch.float64, seed=0) -> torch.nn.Module:
    """Mixer ``name`` at width D and length T from its example_options. Every all-zero parameter is moved off
    zero: a zero-initialised path (learned rotation angles start at plain RoPE) would otherwise be invisible
    to the causality and gradient checks, and the clauses hold for any parameter values."""
    torch.manual_seed(seed)
    m = build_mixer(name, D, seq_len=T, **example(name)).to(dtype)
    with torch.no_grad():
        for p in m.parameters():
            if not p.any():
                p.normal_(0, 0.5)
    return m


def run(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    if isinstance(m, RandomAngles):
        m.reseed()  # random rotations: the same angles on every call
    return m(x)


def test_the_docstring_states_exactly_the_clauses_tested_here():
    stated = {int(n) for n in re.findall(r"^\s{4}(\d+)\. ", Mixer.__doc__, flags=re.M)}
    tested = {int(m.group(1)) for t in list(globals()) if (m := re.match(r"test_clause_(\d+)_", t))}
    assert stated == tested, f"clauses stated {sorted(stated)}, tested {sorted(tested)}: make them agree"
    shown = ", ".join(n if d is inspect.Parameter.empty else f"{n}={d!r}" for n, d in STEP_SIGNATURE)
    assert f"init_state({shown})" in Mixer.__doc__, "clause 6 states another signature than StepMode's"


# ----------------------------------------------------------------------------- clause 1: the constructor


@pytest.mark.parametrize("name", NAMES)
def test_clause_1_d_model_is_the_one_positional_parameter_and_options_are_typed(name):
    cls = registry.get_mixer(name)
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    first = params[0].name == "d_model" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert first, f"{name}: d_model first ({clause(1)})"
    rest = {p.kind for p in params[1:]} <= {inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD}
    assert rest, f"{name}: every parameter after d_model is keyword-only ({clause(1)})"
    if "fixed_options" not in cls.__dict__:  # presets forward **kw to their base class
        got = {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert {k: got.get(k, "absent") for k in ("layer_idx", "seq_len")} == {"layer_idx": 0, "seq_len": None}, (
            f"{name}: layer_idx=0 and seq_len=None keyword-only ({clause(1)})"
        )
    declared_options(cls)  # a TypeError names an option without a type


@pytest.mark.parametrize("name", NAMES)
def test_clause_1_builds_from_its_declared_defaults_at_width_64(name):
    """The defaults the signature declares (recorded as such in the generated schema), and the required
    options (no default) as example_options gives them."""
    cls = registry.get_mixer(name)
    required = {o.name for o in declared_options(cls) if o.required}
    opts = {**defaults(cls), **{k: v for k, v in example(name).items() if k in required}}
    schema = options_schema(cls)
    for k, v in defaults(cls).items():
        if k in schema["properties"] and "default" in schema["properties"][k]:
            assert schema["properties"][k]["default"] == (list(v) if isinstance(v, tuple) else v), (name, k)
    jsonschema.validate({k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}, schema)
    torch.manual_seed(0)
    m = cls(64, layer_idx=2, seq_len=16, **opts)
    assert run(m, torch.randn(1, 16, 64)).shape == (1, 16, 64), f"{name}: {clause(1)}"


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
def test_clause_1_option_values_it_cannot_build_with_are_value_errors_naming_them(name, kw, arg):
    width = 10 if arg in ("heads", "blocks", "headdim") else 6
    with pytest.raises(ValueError, match=arg):
        build_mixer(name, width, **kw)


def test_clause_1_layer_idx_gives_each_layer_its_own_random_angle_stream():
    """Per-layer values derive from layer_idx inside the mixer (no special case in the blocks)."""
    from seqmix.models.lm import DecoderLM

    a0 = build_mixer("so2_random_qk", 8, heads=2, angle_seed=5)
    a1 = build_mixer("so2_random_qk", 8, heads=2, angle_seed=5, layer_idx=1)
    assert (a0.angle_seed, a1.angle_seed) == (5, 5 + 7919)
    x = torch.randn(1, 6, 8)
    a0.reseed(), a1.reseed()
    assert not torch.equal(a0.angles(x)[0], a1.angles(x)[0])
    lm = DecoderLM(vocab_size=10, d_model=8, n_layers=3, mixer={"name": "so2_random_qk", "heads": 2})
    assert [b.mixer.angle_seed for b in lm.blocks] == [12345 + 7919 * i for i in range(3)]


# ----------------------------------------------------------------------------- clause 2: example_options


@pytest.mark.parametrize("name", NAMES)
def test_clause_2_example_options_are_a_declared_dict(name):
    assert isinstance(declared(name, "example_options"), dict), f"{name}: no example_options dict ({clause(2)})"


@pytest.mark.parametrize("name", NAMES)
def test_clause_2_example_options_fit_the_schema_and_give_every_required_option(name):
    schema = options_schema(registry.get_mixer(name))
    jsonschema.Draft202012Validator.check_schema(schema)
    try:
        jsonschema.validate(example(name), schema)  # the schema lists the options without a default as required
    except jsonschema.ValidationError as e:
        why = f"{name}: example_options {example(name)} fail its schema: {e.message} ({clause(2)})"
        raise AssertionError(why) from None


# ----------------------------------------------------------------------------- clause 3: causal


@pytest.mark.parametrize("name", NAMES)
def test_clause_3_causal_is_a_declared_bool(name):
    assert isinstance(declared(name, "causal"), bool), f"{name}: no bool causal ({clause(3)})"


@pytest.mark.parametrize("name", CAUSAL)
def test_clause_3_a_causal_output_reads_the_past_and_the_present_only(name):
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


@pytest.mark.parametrize("name", NON_CAUSAL)
def test_clause_3_a_non_causal_first_output_reads_the_last_input(name):
    m = make(name)
    x = torch.randn(2, T, D, dtype=torch.float64)
    x2 = x.clone()
    x2[:, -1] += 1
    assert (run(m, x2)[:, 0] - run(m, x)[:, 0]).abs().max() > 1e-6, f"{name}: {clause(3)}"


# ----------------------------------------------------------------------------- clause 4: forward


@pytest.mark.parametrize("name", NAMES)
def test_clause_4_shape_dtype_and_finite(name):
    for dtype in (torch.float32, torch.float64):
        m = make(name, dtype)
        y = run(m, torch.randn(2, T, D, dtype=dtype))
        assert y.shape == (2, T, D) and y.dtype == dtype and torch.isfinite(y).all(), f"{name}: {clause(4)}"


@pytest.mark.parametrize("name", NAMES)
def test_clause_4_gradcheck_float64_below_seq_len(name):
    m = make(name)
    length = T if declared(name, "fixed_length", False) else T - 1
    x = torch.randn(1, length, D, dtype=torch.float64, requires_grad=True)
    ok = torch.autograd.gradcheck(lambda inp: run(m, inp), (x,), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert ok, f"{name}: {clause(4)}"


@pytest.mark.parametrize("name", NAMES)
def test_clause_4_a_wrong_width_is_a_value_error_stating_the_width(name):
    m = make(name)
    try:
        run(m, torch.randn(1, T, D + 2, dtype=torch.float64))  # D + 2 = 10: "8" in the message is the width
    except ValueError as e:
        assert re.search(rf"\b{D}\b", str(e)), f"{name}: {e!r} does not state the width {D} ({clause(4)})"
    except Exception as e:
        raise AssertionError(f"{name}: width {D + 2} raised {e!r}, not a ValueError ({clause(4)})") from None
    else:
        raise AssertionError(f"{name}: width {D + 2} was accepted ({clause(4)})")


# ----------------------------------------------------------------------------- clause 5: backend


@pytest.mark.parametrize("name", NAMES)
def test_clause_5_backend_names_what_ran_on_cpu_and_the_report_collects_it(name):
    m = make(name)
    run(m, torch.randn(1, T, D, dtype=torch.float64))
    backend = getattr(m, "backend", None)
    assert isinstance(backend, str), f"{name}: no str backend after a forward ({clause(5)})"
    parts = backend.split("+")
    assert parts == sorted(set(parts)), f"{name}: {backend!r} is not sorted names joined by '+' ({clause(5)})"
    unknown = set(parts) - {*BACKEND_NAMES, "torch-reference"}
    assert not unknown, f"{name}: unknown backend name(s) {sorted(unknown)} ({clause(5)})"
    assert not set(parts) & {"fused", "triton"}, f"{name}: {backend!r} on CPU ({clause(5)})"
    assert backend_report(torch.nn.Sequential(m))["0"] == backend, f"{name}: {clause(5)}"


# ----------------------------------------------------------------------------- clause 6: step mode


@pytest.mark.parametrize("name", NAMES)
def test_clause_6_step_mode_is_whole_causal_and_has_the_documented_signature(name):
    cls = registry.get_mixer(name)
    has = (hasattr(cls, "init_state"), hasattr(cls, "step"))
    assert has[0] == has[1], f"{name}: init_state and step come together ({clause(6)})"
    if has[0]:
        params = list(inspect.signature(cls.init_state).parameters.values())[1:]
        got = [(p.name, p.default) for p in params]
        assert got == STEP_SIGNATURE, f"{name}: init_state{tuple(p.name for p in params)} ({clause(6)})"
        assert declared(name, "causal") is True, f"{name}: step mode is for causal mixers ({clause(6)})"


@pytest.mark.parametrize("name", STEPPERS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_clause_6_step_decoding_equals_the_parallel_forward(name, dtype):
    m = make(name, dtype)
    x = torch.randn(2, T, D, dtype=dtype)
    y = m(x)
    state, ys = m.init_state(2, dtype), []
    for t in range(T):
        yt, state = m.step(x[:, t], state)
        ys.append(yt)
    err = float((torch.stack(ys, 1) - y).detach().norm() / y.detach().norm())
    assert err <= {torch.float64: 1e-10, torch.float32: 1e-4}[dtype], f"{name}: step != forward, {err} ({clause(6)})"


# ----------------------------------------------------------------------------- beyond the clauses


def test_the_recurrent_families_keep_their_step_mode():
    """The SSM, Mamba and Sessa families have a recurrent form (their papers' step mode); losing one would
    silently drop it from clause 6's step test rather than fail it."""
    assert {"s4d", "s6", "b2s6", "mamba", "mamba2", "sessa", "sessa_nofb"} <= set(STEPPERS)


def test_bidirectional_respects_padding():
    m = make("bidirectional")
    x = torch.randn(2, T, D, dtype=torch.float64)
    y = m(x, lengths=torch.tensor([T, 4]))
    y_short = m(x[1:, :4], lengths=None)
    assert torch.allclose(y[1, :4], y_short[0], atol=1e-12)  # padding after the valid prefix is never read


def test_unknown_or_fixed_options_are_value_errors_naming_them():
    with pytest.raises(ValueError, match=r"unknown option.*'heads_count'.*heads"):
        build_mixer("rope", 8, heads_count=2)
    with pytest.raises(ValueError, match=r"fixes \['position'\]"):
        build_mixer("rope", 8, position="alibi")
    assert "position" not in options_schema(registry.get_mixer("rope"))["properties"]
    assert set(options_schema(registry.get_mixer("sessa_nofb"))["properties"]) == {"heads", "rope_base"}


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
