"""`make unit`, `make e2e`, `make faults` and `make test-long` together select every test
exactly once: a test no target selects never runs, and one two targets select runs twice.
A `make test-long` test names the `make test` test it strengthens, which must exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from support.paths import ROOT

TARGETS = ("unit", "e2e", "faults", "test-long")
FAST = ("unit", "e2e", "faults")
"""The targets `make test` runs."""

PLUGIN = '''
import json, os

def pytest_collection_modifyitems(items):
    with open(os.environ["COLLECTED"], "w") as f:
        json.dump([[i.nodeid, sorted({m.name for m in i.iter_markers()}),
                   [m.kwargs.get("strengthens") for m in i.iter_markers("long")]]
                  for i in items], f)
'''


def selections() -> dict[str, tuple[str, list[str]]]:
    """Each target's marker expression and the paths it collects, from the Makefile."""
    text = (ROOT / "Makefile").read_text()
    found = {}
    for target in TARGETS:
        body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
        assert body, f"Makefile: no {target}: target"
        line = next(ln for ln in body.group(1).splitlines() if "-m pytest" in ln)
        got = re.search(r' -m "([^"]+)" (?:\$\(JUNIT\) )?(\S+(?: \S+)*)$', line)
        assert got, f"Makefile: {target}: expected -m \"EXPR\" then the paths: {line}"
        found[target] = (got.group(1), got.group(2).split())
    return found


def collected(tmp_path: Path) -> list[tuple[str, set[str], list[str | None]]]:
    """Every test under tests/ with its markers and the tests its `long` marks strengthen,
    as pytest collects them."""
    (tmp_path / "collect_markers.py").write_text(PLUGIN)
    out = tmp_path / "collected.json"
    env = {**os.environ, "COLLECTED": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    cp = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                         "-p", "no:cacheprovider", "-p", "collect_markers", "tests"],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                        check=False)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    return [(node, set(marks), strengthens)
            for node, marks, strengthens in json.loads(out.read_text())]


@pytest.fixture(scope="module")
def items(tmp_path_factory) -> list[tuple[str, set[str], list[str | None]]]:
    """One collection of the whole tree for this module's tests."""
    return collected(tmp_path_factory.mktemp("collect"))


def chosen_by(targets: dict[str, tuple[str, list[str]]], node: str, marks: set[str]) -> list[str]:
    """The targets whose paths hold `node` and whose marker expression selects `marks`."""
    return [t for t, (expr, paths) in targets.items()
            if any(node == p or node.startswith(p.rstrip("/") + "/") for p in paths)
            and Expression.compile(expr).evaluate(lambda name, m=marks: name in m)]


def test_the_make_targets_select_every_test_exactly_once(items):
    targets = selections()
    assert len(items) > 1000, len(items)
    wrong = {}
    for node, marks, _ in items:
        chosen = chosen_by(targets, node, marks)
        if len(chosen) != 1:
            wrong[node] = chosen
    assert not wrong, f"tests not selected exactly once by {TARGETS}: {wrong}"


def test_each_long_test_strengthens_a_test_make_test_runs(items):
    """The second tier only by rule: a `make test-long` test names (mark `long`,
    `strengthens=`) the test of `make test` that proves the same property at its smallest
    size; that test exists and one of make test's targets selects it."""
    targets = selections()
    marks_of = {node: marks for node, marks, _ in items}
    long_tests = [(node, strengthens) for node, marks, strengthens in items if "long" in marks]
    assert long_tests, "no make test-long test found"
    bad = {}
    for node, strengthens in long_tests:
        named = [s for s in strengthens if s]
        if len(named) != 1:
            bad[node] = "expected one long(strengthens=\"tests/...::test_name\")"
        elif named[0] not in marks_of:
            bad[node] = f"strengthens {named[0]}, which is not a test"
        elif not set(chosen_by(targets, named[0], marks_of[named[0]])) & set(FAST):
            bad[node] = f"strengthens {named[0]}, which make test does not run"
    assert not bad, bad


def test_a_faults_test_outside_the_faults_folder_would_be_found(tmp_path):
    """The check itself: a test marked e2e and faults outside tests/faults is selected by
    no target (e2e leaves out faults; faults collects tests/faults alone)."""
    targets = selections()
    assert chosen_by(targets, "tests/test_x.py::test_y", {"e2e", "faults"}) == []
    # and a long test is make test-long's alone, wherever it lives
    assert chosen_by(targets, "tests/e2e/test_x.py::test_y", {"e2e", "long"}) == ["test-long"]


def test_every_test_finds_its_fixtures():
    """`pytest --setup-plan` resolves every test's fixtures without running any: a fixture
    a test names but no conftest, plugin or module defines fails here, not only when the
    test's own stage runs (collection alone does not resolve them)."""
    cp = subprocess.run([sys.executable, "-m", "pytest", "--setup-plan", "-q",
                         "-p", "no:cacheprovider", "tests"],
                        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    missing = sorted(set(re.findall(r"fixture '([^']+)' not found", cp.stdout)))
    assert not missing, f"fixtures no test can find: {missing}"
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
