"""`make unit`, `make e2e` and `make faults` together select every test exactly once: a
test no target selects never runs in CI, and one two targets select runs twice."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from _pytest.mark.expression import Expression
from support.paths import ROOT

TARGETS = ("unit", "e2e", "faults")

PLUGIN = '''
import json, os

def pytest_collection_modifyitems(items):
    with open(os.environ["COLLECTED"], "w") as f:
        json.dump([[i.nodeid, sorted({m.name for m in i.iter_markers()})] for i in items], f)
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


def collected(tmp_path: Path) -> list[tuple[str, set[str]]]:
    """Every test under tests/ with its markers, as pytest collects them."""
    (tmp_path / "collect_markers.py").write_text(PLUGIN)
    out = tmp_path / "collected.json"
    env = {**os.environ, "COLLECTED": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    cp = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                         "-p", "no:cacheprovider", "-p", "collect_markers", "tests"],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                        check=False)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    return [(node, set(marks)) for node, marks in json.loads(out.read_text())]


def test_the_make_targets_select_every_test_exactly_once(tmp_path):
    targets = selections()
    items = collected(tmp_path)
    assert len(items) > 1000, len(items)
    wrong = {}
    for node, marks in items:
        chosen = [t for t, (expr, paths) in targets.items()
                  if any(node == p or node.startswith(p.rstrip("/") + "/") for p in paths)
                  and Expression.compile(expr).evaluate(lambda name, m=marks: name in m)]
        if len(chosen) != 1:
            wrong[node] = chosen
    assert not wrong, f"tests not selected exactly once by {TARGETS}: {wrong}"


def test_a_faults_test_outside_the_faults_folder_would_be_found(tmp_path):
    """The check itself: a test marked e2e and faults outside tests/faults is selected by
    no target (e2e leaves out faults; faults collects tests/faults alone)."""
    targets = selections()
    node, marks = "tests/test_x.py::test_y", {"e2e", "faults"}
    chosen = [t for t, (expr, paths) in targets.items()
              if any(node.startswith(p.rstrip("/") + "/") for p in paths)
              and Expression.compile(expr).evaluate(lambda name: name in marks)]
    assert chosen == []


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
