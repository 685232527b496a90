"""Entry points the warm-worker tests run inside the server (tests/pipeline/test_warm.py)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def report(argv: list[str]) -> None:
    """Print what the job sees (argv, directory, one variable) and exit with the status argv[0] asks for."""
    print(f"argv={argv} cwd={os.getcwd()} var={os.environ.get('WARM_TEST_VAR')} pid={os.getpid()}")
    print("to stderr", file=sys.stderr)
    raise SystemExit(int(argv[0]))


def crash(argv: list[str]) -> None:
    raise RuntimeError("the job failed")


def linger(argv: list[str]) -> None:
    """Write a pid file, then sleep until killed (the server must kill it when its client goes away)."""
    Path(argv[0]).write_text(str(os.getpid()))
    time.sleep(120)
    Path(argv[0]).write_text("outlived its client")
