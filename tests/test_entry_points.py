"""Mixers and tasks from other packages: a distribution declaring an entry point in ``seqmix.mixers`` /
``seqmix.tasks`` is found by the registry, built by name, and validated from its typed options, without
editing seqmix. The distribution here is fake: a ``*.dist-info`` with an ``entry_points.txt`` and a module
in a temporary directory put on ``sys.path`` (what ``pip install`` leaves in site-packages).

Guards: on main the registry imports only its own ``_MODULES``, so ``get_mixer("plugin_shift")`` raised
UnknownName."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
import torch

from seqmix import registry

PLUGIN_MODULE = '''
"""A tiny causal mixer and a task a third-party package might ship."""
from typing import Annotated

import torch
from torch import nn

from seqmix.options import Opt


class ShiftMixer(nn.Module):
    """y_t = w * x_{t-lag}: causal, one parameter."""

    def __init__(self, d_model, *, layer_idx=0, seq_len=None, lag: Annotated[int, Opt(minimum=1)] = 1):
        super().__init__()
        self.lag = lag
        self.w = nn.Parameter(torch.ones(()))

    def forward(self, x):  # (B, T, d) -> (B, T, d)
        shifted = torch.nn.functional.pad(x, (0, 0, self.lag, 0))[:, : x.shape[1]]
        return self.w * shifted


class ConstantTask:
    def __init__(self, *, width: int = 3):
        self.width = width
'''

ENTRY_POINTS = """
[seqmix.mixers]
plugin_shift = seqmix_fake_plugin:ShiftMixer

[seqmix.tasks]
plugin_constant = seqmix_fake_plugin:ConstantTask
"""


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch):
    """A fake installed distribution on sys.path; the registry's tables are restored afterwards so other
    tests (e.g. the mixer contract's 'every mixer is covered') never see the plugin."""
    (tmp_path / "seqmix_fake_plugin.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    info = tmp_path / "seqmix_fake_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: seqmix-fake-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    registry.load_all()  # seqmix's own components first, so the snapshot below holds them
    saved = {kind: dict(table) for kind, table in registry._TABLES.items()}
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    yield tmp_path
    for kind, table in registry._TABLES.items():
        table.clear()
        table.update(saved[kind])
    sys.modules.pop("seqmix_fake_plugin", None)


def test_entry_point_mixer_is_registered_and_builds(fake_distribution):
    from seqmix.mixers.base import build_mixer

    assert "plugin_shift" in registry.names("mixer")
    assert "plugin_constant" in registry.names("task")
    mixer = build_mixer("plugin_shift", 4, lag=2)
    x = torch.arange(12.0).reshape(1, 3, 4)
    y = mixer(x)
    assert torch.equal(y[0, 2], x[0, 0]) and torch.equal(y[0, :2], torch.zeros(2, 4))


def test_entry_point_mixer_options_are_validated_from_its_signature(fake_distribution, tmp_path):
    from seqmix.config.base import ConfigError
    from seqmix.config.components import validate_options

    cls = registry.get_mixer("plugin_shift")
    validate_options(tmp_path / "p.yaml", "experiments.e.base.model.mixer", cls, {"name": "plugin_shift", "lag": 3})
    with pytest.raises(ConfigError, match=r"model\.mixer\.lag: 0 is less than the minimum of 1"):
        validate_options(tmp_path / "p.yaml", "experiments.e.base.model.mixer", cls, {"lag": 0})


def test_plugins_stay_out_without_the_distribution():
    """The fixture's cleanup works: without the fake distribution the names are unknown again."""
    with pytest.raises(registry.UnknownName, match="plugin_shift"):
        registry.get_mixer("plugin_shift")


def test_a_broken_entry_point_is_named(fake_distribution):
    info = fake_distribution / "seqmix_fake_plugin-0.1.dist-info"
    (info / "entry_points.txt").write_text("[seqmix.mixers]\nbroken = seqmix_fake_plugin:NoSuchClass\n")
    importlib.invalidate_caches()
    with pytest.raises(registry.PluginError, match="'broken'.*seqmix.mixers.*cannot be loaded"):
        registry.load_all()


def test_a_plugin_cannot_take_a_builtin_name(fake_distribution):
    info = fake_distribution / "seqmix_fake_plugin-0.1.dist-info"
    (info / "entry_points.txt").write_text("[seqmix.mixers]\nmha = seqmix_fake_plugin:ShiftMixer\n")
    importlib.invalidate_caches()
    with pytest.raises(registry.PluginError, match="'mha'.*registered twice"):
        registry.load_all()


def test_out_of_tree_paper_is_found_through_its_entry_point(tmp_path, monkeypatch):
    """A paper kept out of tree: its package declared in the group ``seqmix.papers`` is where the registry
    looks for its artefacts and its analysis schema (found without importing the package)."""
    pkg = tmp_path / "my_papers" / "toy_outside"
    pkg.mkdir(parents=True)
    (tmp_path / "my_papers" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        "def note(spec, out):\n    (out / 'note.md').write_text('hi')\n\nARTEFACTS = {'note': note}\n"
    )
    (pkg / "analysis.schema.yaml").write_text("type: object\n")
    info = tmp_path / "my_papers-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-papers\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[seqmix.papers]\ntoy_outside = my_papers.toy_outside\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        assert registry.paper_module("toy_outside") == "my_papers.toy_outside"
        assert registry.paper_module("heads") == "seqmix.papers.heads"  # in-tree papers need no entry point
        assert registry.paper_dir("toy_outside") == pkg
        assert "my_papers.toy_outside" not in sys.modules  # found without importing the paper package
        fn = registry.artefact_function("toy_outside", "note")
        fn({}, tmp_path)
        assert (tmp_path / "note.md").read_text() == "hi"
        with pytest.raises(LookupError, match="unknown artefact 'nope' of paper toy_outside"):
            registry.artefact_function("toy_outside", "nope")
    finally:
        for name in ("my_papers", "my_papers.toy_outside"):
            sys.modules.pop(name, None)
