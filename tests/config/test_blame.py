"""A config error in a value given on the command line (Snakemake's --config) names it, not the file."""

from __future__ import annotations

from seqmix.config.base import ConfigError
from seqmix.config.loading import blame_command_line


def test_a_command_line_value_is_named_and_a_file_value_keeps_the_file(tmp_path):
    f = tmp_path / "config.yaml"
    f.write_text("scale: tiny\npapers: []\n")
    err = ConfigError(f, "scale", "'huge' is not one of ['tiny', 'cpu', 'paper']")
    msg = blame_command_line(err, {"scale": "huge", "papers": []}, f)
    assert msg.startswith("--config scale=huge (command line, over ") and "'huge' is not one of" in msg
    same = ConfigError(f, "papers", "bad")
    assert blame_command_line(same, {"scale": "huge", "papers": []}, f) == str(same)  # the file's own value
    listed = ConfigError(f, "papers[0]", "no paper 'x'")
    assert blame_command_line(listed, {"scale": "tiny", "papers": ["x"]}, f).startswith('--config papers=["x"]')
