"""The registry finds its own components by walking the component packages, so a new mixer, model or task
module needs no edit to a shared list. Guards: ``registry._MODULES`` was a hand-kept tuple that every new task
file had to be added to; a module left out of it silently could not be named in a config."""

from __future__ import annotations

import re
from pathlib import Path

from seqmix import registry

SRC = Path(registry.__file__).resolve().parent


def test_every_registering_module_is_discovered():
    registering = set()
    for pkg in registry.COMPONENT_PACKAGES:
        folder = SRC / pkg.split(".", 1)[1]
        for path in folder.glob("*.py"):
            if re.search(r"^@register_(mixer|model|task)\b", path.read_text(), flags=re.M):
                registering.add(f"{pkg}.{path.stem}")
    assert registering, "no registering module found: the scan above is broken"
    assert registering <= set(registry.component_modules())


def test_a_new_module_in_a_component_package_registers_without_edits(tmp_path, monkeypatch):
    import seqmix.tasks

    (tmp_path / "discovery_probe_task.py").write_text(
        "from seqmix.registry import register_task\n\n\n"
        "@register_task('discovery_probe')\n"
        "def build(**kw):\n    return kw\n"
    )
    monkeypatch.setattr(seqmix.tasks, "__path__", [*seqmix.tasks.__path__, str(tmp_path)])
    try:
        assert "seqmix.tasks.discovery_probe_task" in registry.component_modules()
        registry.load_all()
        assert registry.get_task("discovery_probe")(a=1) == {"a": 1}
    finally:
        registry._TABLES["task"].pop("discovery_probe", None)
        import sys

        sys.modules.pop("seqmix.tasks.discovery_probe_task", None)
