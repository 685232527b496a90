"""load_schema parses a schema file once per version and hands out copies."""

from __future__ import annotations

import os

from seqmix.config import base


def test_copies_not_the_cached_object():
    a, b = base.load_schema("paper"), base.load_schema("paper")
    assert a == b and a is not b
    a["$defs"].clear()  # a caller's change stays its own
    assert base.load_schema("paper") == b


def test_an_edited_schema_file_is_read_again(tmp_path):
    path = tmp_path / "thing.schema.yaml"
    path.write_text("type: object\n")
    assert base.load_schema("thing", tmp_path) == {"type": "object"}
    path.write_text("type: array\nitems: {type: integer}\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a later version even on a coarse clock
    assert base.load_schema("thing", tmp_path) == {"type": "array", "items": {"type": "integer"}}


def test_a_missing_schema_names_the_file(tmp_path):
    import pytest

    with pytest.raises(base.ConfigError, match="does not exist"):
        base.load_schema("absent", tmp_path)
