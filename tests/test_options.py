"""Option declarations (seqmix.options): option groups declared once, flat in configs and schemas."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pytest

from seqmix import registry
from seqmix.models.option_groups import BlockOptions, Stack
from seqmix.options import OptionGroup, PosInt, declared_options, defaults, grouped, options_schema
from seqmix.tasks.option_groups import DataFiles, DataSplits, Evaluation


@dataclass(frozen=True, kw_only=True)
class Sizes(OptionGroup):
    n: PosInt = 3
    m: PosInt = 5


class Thing:
    @grouped
    def __init__(self, *, name: str = "a", sizes: Sizes = Sizes(m=7)):
        self.name, self.sizes = name, sizes


def test_a_group_is_flat_options_with_the_default_instance_defaults():
    assert [o.name for o in declared_options(Thing)] == ["name", "n", "m"]
    assert defaults(Thing) == {"name": "a", "n": 3, "m": 7}
    schema = options_schema(Thing)
    assert schema["properties"]["m"] == {"type": "integer", "maximum": 2**31 - 1, "minimum": 1, "default": 7}
    assert list(inspect.signature(Thing).parameters) == ["name", "n", "m"]


def test_flat_keywords_fold_into_the_group():
    assert Thing().sizes == Sizes(n=3, m=7)
    assert Thing(n=4).sizes == Sizes(n=4, m=7)
    assert Thing(sizes=Sizes(n=9)).sizes == Sizes(n=9, m=5)
    with pytest.raises(TypeError, match="not both"):
        Thing(sizes=Sizes(), n=2)
    with pytest.raises(TypeError):
        Thing(q=1)


def test_an_option_declared_twice_is_an_error_when_the_class_is_defined():
    with pytest.raises(TypeError, match="declared twice"):

        class Twice:
            @grouped
            def __init__(self, *, n: int = 1, sizes: Sizes = Sizes()):
                pass


@pytest.mark.parametrize("name", ["lra_listops", "lra_text", "lra_retrieval", "lra_image", "lra_pathfinder"])
def test_the_lra_tasks_take_their_shared_options_from_the_groups(name):
    """Split sizes, evaluation and data paths are declared once (tasks/option_groups.py), not per task."""
    cls = registry.get_task(name)
    own = inspect.signature(inspect.unwrap(cls.__init__)).parameters
    shared = {f for g in (DataSplits, Evaluation, DataFiles) for f in g.field_names()}
    assert not shared & set(own), f"{name} redeclares {sorted(shared & set(own))}"
    assert shared <= {o.name for o in declared_options(cls)}


@pytest.mark.parametrize("name", ["decoder_lm", "sequence_classifier", "lra_classifier"])
def test_the_model_stacks_take_width_depth_and_mixer_from_one_group(name):
    cls = registry.get_model(name)
    own = set(inspect.signature(inspect.unwrap(cls.__init__)).parameters)
    assert not set(Stack.field_names()) & own
    assert {"d_model", "n_layers", "mixer"} <= set(options_schema(cls)["required"])
    if name != "lra_classifier":
        assert not set(BlockOptions.field_names()) & own
