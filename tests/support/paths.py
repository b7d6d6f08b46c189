"""Where the checkout's parts are, for every test: one place to find the CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
"""The checkout."""
TESTS = ROOT / "tests"
SUPPORT = TESTS / "support"
FIXTURES = TESTS / "fixtures"
SITE = TESTS / "site"
"""The generated test site (sitegen, its server and harness: run as scripts, imported
by path)."""
BENCH = ROOT / "bench"
"""The benchmarks: scripts that import each other by name from their folder."""
VENV_PYTHON = ROOT / ".venv/bin/python"
TESTBED = str(ROOT / ".venv/bin/testbed")
"""The installed command line, as users run it (`make setup` installs it)."""


def run_testbed(*args: object, timeout: float, **options) -> subprocess.CompletedProcess:
    """`testbed ARGS` as a user runs it, from the checkout, its output captured as text and
    read on a wide terminal (COLUMNS=200, so tables do not wrap); `options` go to
    subprocess.run (env= replaces the environment)."""
    options.setdefault("env", {**os.environ, "COLUMNS": "200"})
    options.setdefault("cwd", ROOT)
    return subprocess.run([TESTBED, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False, **options)
