"""``python -m seqmix --help`` as a person reads it: the people's commands first, the rules' steps marked, every
flag of every command with help, every flag of a people's command with an example, and every example a
command line the parser takes as printed.

Guards (issue 26 item 5): user commands came after eleven pipeline stages and many flags had no help."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from seqmix.cli.common import EXAMPLE, RULE, examples_of
from seqmix.cli.main import build_parser, people_commands
from tests.conftest import ROOT

PARSER = build_parser()
SUB = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction))
COMMANDS = dict(SUB.choices)
PEOPLE = people_commands()
# the --help line of each command, in the order --help lists them
LISTED = {a.dest: a.help for a in SUB._get_subactions()}


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _name(action: argparse.Action) -> str:
    return action.option_strings[-1] if action.option_strings else action.dest


def test_people_commands_come_first():
    assert {"list", "validate", "where", "progress", "ui", "claims-summary", "archive", "claims-export"} <= set(PEOPLE)
    assert list(LISTED)[: len(PEOPLE)] == list(PEOPLE), list(LISTED)
    assert list(LISTED) == list(COMMANDS) and len(COMMANDS) > len(PEOPLE)


def test_rule_commands_are_marked_and_are_the_ones_the_rules_run():
    """The split is what the workflow does: a [rule] command is run by a rule, a people's command by none."""
    rules = "\n".join(p.read_text() for p in sorted((ROOT / "workflow" / "rules").glob("*.smk")))
    run_by_rules = set(re.findall(r"\{params\.cli\} ([a-z-]+)", rules))
    for name, line in LISTED.items():
        assert line.startswith(RULE) == (name not in PEOPLE), (name, line)
        assert (name in run_by_rules) == (name not in PEOPLE), (name, sorted(run_by_rules))


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_every_option_has_help(cmd):
    for action in _options(COMMANDS[cmd]):
        text = action.help or ""
        assert text.strip() and text != argparse.SUPPRESS, f"seqmix {cmd} {_name(action)}: no help"
    assert COMMANDS[cmd].description, f"seqmix {cmd}: no description"


@pytest.mark.parametrize("cmd", PEOPLE)
def test_every_option_of_a_people_command_has_an_example(cmd):
    """An option is exemplified when an example of its command uses it, or its help shows it after 'e.g.'."""
    parser = COMMANDS[cmd]
    examples = [shlex.split(line)[len(shlex.split(EXAMPLE)) :] for line in examples_of(parser)]
    assert examples, f"seqmix {cmd}: no examples in its --help"
    for action in _options(parser):
        shown = [s for s in re.findall(r"e\.g\. ([^,;)]+)", action.help)]
        if action.option_strings:
            used = any(set(action.option_strings) & set(words) for words in examples)
            said = any(s.split()[0] in action.option_strings for s in shown)
        else:  # a positional: a value it takes, in an example or after 'e.g. <command>'
            used = any(set(action.choices or ()) & set(words[1:]) for words in examples)
            said = any(s.split()[0] == cmd and len(s.split()) > 1 for s in shown)
        assert used or said, f"seqmix {cmd} {_name(action)}: no example ({action.help!r})"


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_examples_in_help_name_the_option_they_are_the_help_of(cmd):
    """'e.g. --paper heads' in the help of --scale would send a reader to the wrong flag."""
    for action in _options(COMMANDS[cmd]):
        for shown in re.findall(r"e\.g\. ([^,;)]+)", action.help):
            first = shown.split()[0]
            assert first in action.option_strings or (not action.option_strings and first == cmd), (
                f"seqmix {cmd} {_name(action)}: help's example {shown!r} names another flag"
            )
            if action.option_strings and action.choices and len(shown.split()) > 1:
                assert shown.split()[1] in action.choices, (cmd, shown)


@pytest.mark.parametrize("cmd", PEOPLE)
def test_examples_parse_as_printed(cmd):
    """Each example line of a command's --help is taken by the parser as that command (an example with a
    misspelt or removed flag fails here)."""
    for line in examples_of(COMMANDS[cmd]):
        argv = shlex.split(line)[len(shlex.split(EXAMPLE)) :]
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"the example {line!r} of seqmix {cmd} --help does not parse")
        assert args.cmd == cmd, line


def test_help_prints_the_examples(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["progress", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  python -m seqmix progress --paper heads\n" in out  # one per line, as printed
