"""load_yaml reads with libyaml's loader when PyYAML has it (issue 24 item 9: 0.07 s against 0.55 s for the
YAML a DAG parse reads) and with the pure-Python one otherwise: both give the same documents, the same
duplicate-key errors and the same file, line and column for a syntax error (libyaml words the problem its own
way)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from seqmix.config import base
from seqmix.config.base import ConfigError, load_yaml

ROOT = Path(__file__).resolve().parents[2]
LOADERS = [pytest.param(yaml.SafeLoader, id="pure")] + (
    [pytest.param(yaml.CSafeLoader, id="libyaml")] if getattr(yaml, "__with_libyaml__", False) else []
)


def test_the_c_loader_is_used_when_pyyaml_has_it():
    expected = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert base._SAFE_LOADER is expected


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")
def test_every_repo_yaml_loads_the_same_with_both_loaders():
    files = sorted([*ROOT.glob("config/**/*.yaml"), *ROOT.glob("workflow/schemas/*.yaml"), *ROOT.glob("src/**/*.yaml")])
    assert files
    for f in files:
        assert load_yaml(f, loader_class=yaml.CSafeLoader) == load_yaml(f, loader_class=yaml.SafeLoader), f


@pytest.mark.parametrize("loader", LOADERS)
def test_duplicate_key_names_file_keypath_and_lines(tmp_path, loader):
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\nb:\n  - x: 1\n  - c: 1\n    c: 2\n")
    with pytest.raises(ConfigError) as info:
        load_yaml(f, loader_class=loader)
    assert info.value.file == str(f)
    assert info.value.keypath == "b[1].c"
    assert info.value.message == "duplicate key 'c' at line 5 (first at line 4): expected each key once per mapping"


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    "text, where",
    [
        ("a: 1\nb: 2\nc: 3\nbroken: a: b\n", "line 4, column 10"),
        ("paper: heads\nexperiments:\n\texp1: {}\n", "line 3, column 1"),
        ("a: 1\nb:\n  c: [1, 2\n  d: 3\n", "line 4, column 4"),
    ],
)
def test_syntax_error_names_line_and_column(tmp_path, loader, text, where):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_yaml(f, loader_class=loader)
    assert info.value.keypath == ""
    assert re.match(rf"malformed YAML at {where}: \S", info.value.message), info.value.message


@pytest.mark.parametrize("loader", LOADERS)
def test_empty_document_is_none(tmp_path, loader):
    f = tmp_path / "c.yaml"
    f.write_text("# nothing\n")
    assert load_yaml(f, loader_class=loader) is None


def test_an_alias_bomb_is_refused_quickly(tmp_path):
    """324 bytes of nested aliases expand to 9^9 nodes: every Snakemake start stalled at 100% CPU before."""
    from seqmix.config.base import ConfigError, load_yaml

    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(8):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"expands to more than 1,000,000 nodes through its aliases"):
        load_yaml(path)  # refused by counting the first 10^6, not by expanding ~4e8


def test_a_recursive_alias_is_named_not_a_recursion_error(tmp_path):
    from seqmix.config.base import ConfigError, load_yaml

    path = tmp_path / "rec.yaml"
    path.write_text("a: &a\n  - *a\n")
    with pytest.raises(ConfigError, match=r"a\[0\]: an alias at line 1 contains itself"):
        load_yaml(path)
