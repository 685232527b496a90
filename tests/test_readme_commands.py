"""Every command the README prints runs as printed (issue 26, "Done when").

The commands are read from the README's fenced shell blocks (```bash, ```sh, ```console) and its inline
``.venv/bin/...`` spans, and each gets a KIND, checked by its own check:

- cheap ones run for real from the repository root (``seqmix list``, ``seqmix where``, ``make help``), with
  ``.venv/bin/`` the checkout's venv (the running interpreter's where the checkout has none) and the
  checkout's ``src`` first on the path;
- ``make <target>`` is dry-run (``make -n``), and every Snakemake, seqmix and pytest line it would run is
  parsed by that program's own parser, with Snakemake's ``--config`` values validated as the Snakefile does;
- ``snakemake ... -n`` is parsed and validated in the unit lane, and run as a dry run with ``results=<tmp>``
  added to its ``--config`` in the integration lane (a minute of DAG building on two busy cores);
- commands that need a run (``progress``, ``ui``) run as printed in a small results tree; servers
  (``mlflow ui|server``) have their flags parsed by mlflow's click commands.

A command no KIND matches fails ``test_every_readme_command_has_a_kind``: a new README command forces a
decision. The seqmix commands the other docs show are checked against the parser
(``test_seqmix_commands_in_the_docs_exist``)."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from seqmix.cli.main import build_parser
from tests.conftest import ROOT

SHELL_FENCE = re.compile(r"^```(bash|sh|console)[ \t]*\n(.*?)^```", re.M | re.S)
ANY_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SEQMIX = [".venv/bin/python", "-m", "seqmix"]


# ----------------------------------------------------------------------------------------- extraction


def strip_comment(line: str) -> str:
    """``line`` without its shell comment (a ``#`` outside quotes, at the start or after a blank)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def fenced_commands(text: str) -> list[str]:
    """The commands of a markdown text's shell blocks, as printed: continuation lines joined, comments and
    blank lines dropped; in a console block only the ``$ `` lines."""
    commands = []
    for lang, body in SHELL_FENCE.findall(text):
        for line in re.sub(r"[ \t]*\\\n[ \t]*", " ", body).splitlines():
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if strip_comment(line):
                commands.append(strip_comment(line))
    return commands


def inline_spans(text: str) -> list[str]:
    """The inline code spans outside fenced blocks."""
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", ANY_FENCE.sub("", text))]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    inline = [s for s in inline_spans(text) if s.startswith(".venv/bin/")]
    return fenced_commands(text) + inline


COMMANDS = readme_commands()

# what each command is, tried in order: (kind, pattern the whole command matches)
KINDS = [
    ("seqmix-list", r"\.venv/bin/python -m seqmix list( .*)?"),
    ("seqmix-where", r"\.venv/bin/python -m seqmix where( .*)?"),
    ("seqmix-progress", r"\.venv/bin/python -m seqmix progress .*"),
    ("seqmix-ui", r"\.venv/bin/python -m seqmix ui"),
    ("seqmix-writes-docs", r"\.venv/bin/python -m seqmix claims-summary .*"),
    ("seqmix-claims-page", r"\.venv/bin/python -m seqmix claims-page .*"),
    ("make-help", r"make help"),
    ("make", r"make [a-z-]+( [A-Z_]+=\S+)*"),
    ("snakemake-dry-run", r"\.venv/bin/snakemake .*(-n|--dry-run)( .*)?"),
    ("mlflow-server", r"(\.venv/bin/)?mlflow (ui|server) .*"),
    ("export", r"export [A-Z_]+=.*"),
]


def kind_of(command: str) -> str | None:
    return next((k for k, pattern in KINDS if re.fullmatch(pattern, command)), None)


# ----------------------------------------------------------------------------------------- helpers


def exe(word: str) -> str:
    """A ``.venv/bin/`` path as printed: the checkout's venv, or the running interpreter's without one."""
    if not word.startswith(".venv/bin/"):
        return word
    printed = ROOT / word
    return str(printed if printed.exists() else Path(sys.executable).parent / Path(word).name)


def run(argv: list[str], cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    # under `make test` the outer make's flags and command-line variables (SCALE=...) would reach an inner make
    # and its variables set on the command line (make test PYTEST_ARGS=...), which make exports to recipes
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env = {k: v for k, v in env.items() if k not in makefile_variables()}
    env.update(PYTHONPATH=path, MPLBACKEND="Agg")
    proc = subprocess.run([exe(argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


@functools.cache
def makefile_variables() -> frozenset[str]:
    """The Makefile's settable variables (``NAME ?= ...``)."""
    return frozenset(re.findall(r"^([A-Z_]+) \?=", (ROOT / "Makefile").read_text(), re.M))


def seqmix_argv(command: str) -> list[str]:
    """The arguments after ``python -m seqmix`` of a command line."""
    words = shlex.split(command)
    assert words[1:3] == ["-m", "seqmix"], command
    return words[3:]


def parses_as_seqmix(argv: list[str]):
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"python -m seqmix {shlex.join(argv)}: the parser refuses it")


@functools.cache
def validate_snakemake(argv: tuple[str, ...]) -> None:
    """Snakemake's own parser takes ``argv`` (from the root, so the profile resolves), and the config it would
    run is valid: config/config.yaml under its ``--config`` values, loaded as the Snakefile loads it."""
    from snakemake.cli import parse_args, parse_config
    from snakemake.utils import update_config

    from seqmix.config.base import ConfigError, load_yaml
    from seqmix.config.loading import load_all

    here, said = os.getcwd(), io.StringIO()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stderr(said):  # its usage runs to a hundred lines: only the error is kept
            _, args = parse_args(list(argv))
    except SystemExit:
        pytest.fail(f"snakemake {shlex.join(argv)}: {said.getvalue().strip().splitlines()[-1]}")
    finally:
        os.chdir(here)
    config = load_yaml(ROOT / "config" / "config.yaml")
    update_config(config, parse_config(args.config or []))
    try:
        load_all(config, ROOT)
    except ConfigError as e:
        pytest.fail(f"snakemake {shlex.join(argv)}: config error: {e}")


@functools.cache
def pytest_help() -> str:
    return run([sys.executable, "-m", "pytest", "--help"]).stdout


def check_pytest_line(argv: list[str]) -> None:
    """The options exist (xdist's among them) and a -m expression names registered markers only."""
    import tomllib

    known = pytest_help()
    for word in argv:
        if word.startswith("-") and word != "-m":
            # --name=value -> --name; a short option with its value attached (-ra, -n2) -> -r, -n
            option = word.split("=")[0] if word.startswith("--") else word[:2]
            assert re.search(rf"(^|[\s,]){re.escape(option)}\b", known, re.M), f"pytest has no option {word}"
    if "-m" in argv:
        markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
        registered = {m.split(":")[0] for m in markers}
        names = set(re.findall(r"[a-z_]+", argv[argv.index("-m") + 1])) - {"not", "and", "or"}
        assert names <= registered, names - registered


def mlflow_parses(argv: list[str]) -> None:
    """mlflow's click command takes the flags (it is a server: never started here)."""
    import click
    from mlflow.cli import cli

    command = cli.get_command(click.Context(cli), argv[1])
    assert command is not None, f"mlflow has no command {argv[1]!r}"
    try:
        command.make_context(argv[1], [os.path.expandvars(w) for w in argv[2:]])
    except click.ClickException as e:
        pytest.fail(f"{shlex.join(argv)}: {e.format_message()}")


# ----------------------------------------------------------------------------------------- checks per kind


def check_seqmix_list(command: str) -> None:
    from seqmix.config.loading import discover_papers

    proc = run(shlex.split(command))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("| paper ") and all(f"| {p} " in proc.stdout for p in discover_papers(ROOT))


def check_seqmix_where(command: str) -> None:
    from seqmix.results import scale_roots

    proc = run(shlex.split(command))
    if scale_roots(ROOT / "results") or (ROOT / "results" / "mlflow.db").exists():
        assert proc.returncode == 0 and "seqmix: outputs" in proc.stdout, proc.stderr
    else:  # a fresh clone: a message, not a traceback
        assert proc.returncode == 1 and "run the DAG first (make reproduce)" in proc.stderr, proc.stderr


def check_seqmix_progress(command: str, tmp_path: Path) -> None:
    """As printed, in a results tree holding one evaluated leaf of the experiment it names; the metrics it
    asks for are ones the paper's claims read from that experiment."""
    from seqmix.config.loading import load_paper
    from seqmix.io import write_json

    args = parses_as_seqmix(seqmix_argv(command))
    metrics = args.metrics.split(",")
    claims = load_paper(ROOT / "config" / "papers" / f"{args.paper}.yaml", args.scale)["claims"]
    read = {c["ours"]["metric"] for c in claims if (c.get("ours") or {}).get("table") == args.experiment}
    assert set(metrics) <= read, f"{args.paper} {args.experiment} claims read no {set(metrics) - read}"
    paper = Path("results") / args.scale / args.paper
    leaf = paper / args.experiment / "v" / "-" / "seed0"
    write_json(tmp_path / leaf / "metrics.json", {"hash": "h", "metrics": {m: 0.5 for m in metrics}})
    leaves = [{"id": "v/-/seed0", "hash": "h", "out_dir": str(leaf), "config": {"train": {"steps": 10}}}]
    write_json(tmp_path / paper / "run" / f"{args.experiment}.v-0.json", {"leaves": leaves})
    (tmp_path / "config").symlink_to(ROOT / "config")  # the paper and experiment are checked against it
    proc = run(shlex.split(command), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, _, row = proc.stdout.splitlines()[:3]
    assert [c.strip() for c in header.strip("|").split("|")] == ["leaf", "status", *metrics]
    assert [c.strip() for c in row.strip("|").split("|")] == ["v/-/seed0", "evaluated"] + ["0.5"] * len(metrics)


def check_seqmix_ui(command: str, tmp_path: Path) -> None:
    """It runs the README's ``mlflow ui`` line (on the default port): shown with --print on a results tree."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "mlflow.db").write_bytes(b"")
    proc = run([*shlex.split(command), "--print"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = shlex.split(proc.stdout)
    line = next(c for c in COMMANDS if c.startswith(".venv/bin/mlflow ui "))
    readme = shlex.split(line)
    assert Path(printed[0]).resolve() == Path(exe(readme[0])).resolve()
    assert printed[1:] == [*readme[1:], "--port", "5000"]


def check_claims_summary(command: str) -> None:
    """Not run (it rewrites a committed file from results/): it parses, and that file says it was made by
    exactly this command."""
    args = parses_as_seqmix(seqmix_argv(command))
    first = (ROOT / args.out).read_text().splitlines()[0]
    printed = command.removeprefix(".venv/bin/")
    assert first.startswith(f"<!-- Generated by `{printed}` "), first


def check_claims_page(command: str, tmp_path: Path) -> None:
    """Run as printed in a directory holding a copy of the archive it reads (it writes beside the command's
    working directory, so not in the checkout): the page is written and names the archive's paper."""
    import shutil

    args = parses_as_seqmix(seqmix_argv(command))
    shutil.copytree(ROOT / Path(args.csv).parent, tmp_path / Path(args.csv).parent)
    proc = run(shlex.split(command), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / args.out).read_text()
    assert "<table" in page and Path(args.csv).parts[-3] in page, page[:500]


def check_make(command: str) -> None:
    """``make -n`` as printed: the target exists, and each Snakemake, seqmix or pytest line it would run is
    taken by that program's parser."""
    argv = shlex.split(command)
    proc = run(["make", "-n", *argv[1:]])
    assert proc.returncode == 0, proc.stderr
    recipe = proc.stdout.replace("\\\n", " ")
    snakemake = re.findall(r"\.venv/bin/snakemake [^;\n]*", recipe)
    for line in snakemake:
        validate_snakemake(tuple(shlex.split(line)[1:]))
    for line in re.findall(r"\.venv/bin/python -m seqmix [^;\n]*", recipe):
        parses_as_seqmix(seqmix_argv(line))
    pytest_lines = re.findall(r"\.venv/bin/python -m pytest [^;\n]*", recipe)
    for line in pytest_lines:
        check_pytest_line(shlex.split(line)[3:])
    target = argv[1]
    if target in ("reproduce", "report", "dryrun"):
        assert snakemake, recipe
    if target.startswith("test"):
        assert pytest_lines, recipe
    if target == "clean-results":
        assert "rm -rf results .snakemake" in recipe


def check_make_help(command: str) -> None:
    """It lists every make target the README shows, and each line it prints dry-runs."""
    proc = run(shlex.split(command))
    assert proc.returncode == 0, proc.stderr
    listed = [ln.split("#")[0].strip() for ln in proc.stdout.splitlines() if ln.startswith("make ")]
    readme_targets = {shlex.split(c)[1] for c in COMMANDS if kind_of(c) == "make"}
    assert readme_targets <= {shlex.split(ln)[1] for ln in listed}, readme_targets
    for line in listed:
        check_make(line)


def check_snakemake_dry_run(command: str) -> None:
    """Parsed and validated; the real dry run is the integration test below."""
    validate_snakemake(tuple(shlex.split(command)[1:]))


def check_mlflow(command: str) -> None:
    argv = shlex.split(command)
    if argv[0].startswith(".venv/bin/"):
        assert Path(exe(argv[0])).exists(), argv[0]
    mlflow_parses(argv)


def check_export(command: str) -> None:
    """A shell assignment, of a variable mlflow's auth app reads."""
    import importlib.util

    assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0, command
    name = command.split()[1].split("=")[0]
    auth = Path(importlib.util.find_spec("mlflow").origin).parent / "server" / "auth"
    assert any(name in p.read_text() for p in auth.rglob("*.py")), f"mlflow's auth never reads {name}"


CHECKS = {
    "seqmix-list": check_seqmix_list,
    "seqmix-where": check_seqmix_where,
    "seqmix-progress": check_seqmix_progress,
    "seqmix-ui": check_seqmix_ui,
    "seqmix-writes-docs": check_claims_summary,
    "seqmix-claims-page": check_claims_page,
    "make-help": check_make_help,
    "make": check_make,
    "snakemake-dry-run": check_snakemake_dry_run,
    "mlflow-server": check_mlflow,
    "export": check_export,
}
NEEDS_TMP = {"seqmix-progress", "seqmix-ui", "seqmix-claims-page"}


# ----------------------------------------------------------------------------------------- tests


def test_every_readme_command_has_a_kind():
    assert {"make reproduce", "make test"} <= set(COMMANDS), COMMANDS
    unknown = [c for c in COMMANDS if kind_of(c) is None]
    assert not unknown, f"README commands with no check (add a KIND and its check here): {unknown}"
    assert set(CHECKS) == {k for k, _ in KINDS}


@pytest.mark.parametrize("command", COMMANDS, ids=COMMANDS)
def test_readme_command_runs_as_printed(command, tmp_path):
    kind = kind_of(command)
    if kind is None:
        pytest.fail(f"no check for {command!r}")
    if kind in NEEDS_TMP:
        CHECKS[kind](command, tmp_path)
    else:
        CHECKS[kind](command)


@pytest.mark.integration
@pytest.mark.parametrize("command", [c for c in COMMANDS if kind_of(c) == "snakemake-dry-run"])
def test_readme_snakemake_dry_run(command, tmp_path):
    """The printed dry run builds the whole DAG, with the results root moved to a temporary directory."""
    argv = shlex.split(command)
    assert "--config" in argv, "a dry run whose results root cannot be moved would touch results/"
    proc = run([*argv, f"results={tmp_path / 'results'}"], timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "This was a dry-run" in proc.stdout + proc.stderr
    assert "train" in proc.stdout + proc.stderr  # the whole DAG, training included (tests/workflow/test_static.py)
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


def readme_dry_run_scales() -> set[str]:
    """The scales whose whole-DAG dry run the README prints, every paper selected (run above as printed):
    tests/workflow/test_static.py dry-runs only the other scales, instead of a second run of the same DAG."""
    scales = set()
    for command in COMMANDS:
        argv = shlex.split(command)
        if kind_of(command) == "snakemake-dry-run" and not any(a.startswith("papers=") for a in argv):
            scales |= {a.split("=", 1)[1] for a in argv if a.startswith("scale=")}
    return scales


# ------------------------------------------------------------------- seqmix commands in the other docs


DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS += sorted((ROOT / "docs" / "papers").glob("*.md"))  # not docs/measured/history: records of old commands
MENTION = re.compile(r"^(?:\S*python3? -m )?seqmix ([a-z][a-z-]*)\b(.*)$")


def check_mention(text: str, full: bool) -> None:
    """``seqmix <command> ...`` names an existing command and only its flags; ``full``: the parser takes it
    whole (a fenced command, pasted as is)."""
    m = MENTION.match(text)
    assert m, text
    commands = dict(next(a for a in build_parser()._actions if a.dest == "cmd").choices)
    assert m[1] in commands, f"{text!r}: no command {m[1]!r} (commands: {', '.join(commands)})"
    flags = {s for a in commands[m[1]]._actions for s in a.option_strings}
    for word in shlex.split(m[2]):
        flag = word.split("=")[0]
        assert not flag.startswith("-") or flag in flags, f"{text!r}: seqmix {m[1]} has no flag {flag}"
    if full:
        parses_as_seqmix([m[1], *shlex.split(m[2])])


def doc_mentions() -> list[tuple[str, str, bool]]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for command in fenced_commands(text):
            command = re.sub(r"^\S*python3? -m seqmix ", "seqmix ", command)
            if MENTION.match(command):
                found.append((doc.relative_to(ROOT).as_posix(), command, True))
        for span in inline_spans(text):
            span = re.sub(r"^\S*python3? -m seqmix ", "seqmix ", span)
            if MENTION.match(span):
                found.append((doc.relative_to(ROOT).as_posix(), span, False))
    return found


MENTIONS = doc_mentions()


@pytest.mark.parametrize("doc, text, full", MENTIONS, ids=[f"{d}: {t}" for d, t, _ in MENTIONS])
def test_seqmix_commands_in_the_docs_exist(doc, text, full):
    check_mention(text, full)


def test_the_docs_show_seqmix_commands_and_a_wrong_one_is_caught():
    docs = {d for d, _, _ in MENTIONS}
    assert {"README.md", "docs/configuration.md", "docs/architecture.md"} <= docs, docs
    assert sum(full for _, _, full in MENTIONS) >= 5
    with pytest.raises(AssertionError, match="seqmix claims-export has no flag --results"):
        check_mention("seqmix claims-export --results results/cpu --paper b2s6", full=False)  # an old flag
    with pytest.raises(AssertionError, match="no command 'lsit'"):
        check_mention("seqmix lsit papers", full=False)
    with pytest.raises(pytest.fail.Exception, match="the parser refuses it"):
        check_mention("seqmix progress --scale cpu", full=True)  # --paper is required
