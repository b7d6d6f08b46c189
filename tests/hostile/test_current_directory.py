"""Root imports nothing from the folder it stands in.

A researcher may `cd` into a shared folder (a recording, a results folder, /tmp)
before running the testbed as root. Another account can put `argparse.py`, a
`testbed/` package or an `http/` package there. Every Python process the testbed
starts (`testbed.host.enter` before it drops to the testbed user, the readiness
probe, the doctor's web server and its NumPy check, the calibration's UDP probe,
the phase gate) must import none of them: each planted module writes a marker
when imported, and none may appear.
"""

from __future__ import annotations

import ast
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.paths import ROOT, TESTBED

from testbed.host import proc

MODULES = ("argparse", "json", "socket", "ssl", "runpy", "selectors", "numpy", "PIL",
           "signal", "struct", "time")
"""Modules the testbed's child processes import first (runpy: what `-m` itself runs)."""
PACKAGES = {"testbed": ("host", "replay", "emulate", "measure"), "http": ()}
"""Packages that would shadow the testbed and `-m http.server` (with their subpackages)."""


def _marker(marks: Path) -> str:
    return ("import os\n"
            f"open(os.path.join({str(marks)!r}, __name__ + '-uid' + str(os.getuid())), 'w')"
            ".close()\n")


@pytest.fixture
def planted() -> Iterator[tuple[Path, Path]]:
    """(a folder of nobody's full of planted modules, the folder their markers go to).
    Both are in a fresh folder of /tmp every account may pass through, as a shared
    folder is."""
    top = Path(tempfile.mkdtemp(prefix="cwd-", dir="/tmp"))
    try:
        top.chmod(0o755)
        marks = top / "marks"
        marks.mkdir()
        marks.chmod(0o1777)  # whoever imports a planted module can say so
        here = top / "here"
        here.mkdir()
        code = _marker(marks)
        for name in MODULES:
            (here / f"{name}.py").write_text(code)
        for package, subs in PACKAGES.items():
            for sub in ("", *subs):
                d = here / package / sub
                d.mkdir(parents=True, exist_ok=True)
                (d / "__init__.py").write_text(code)
            (here / package / "server.py").write_text(code)
        nobody = pwd.getpwnam("nobody")
        for p in [here, *here.rglob("*")]:
            os.chown(p, nobody.pw_uid, nobody.pw_gid)
        yield here, marks
    finally:
        shutil.rmtree(top, ignore_errors=True)


def imported(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


# -- the helper and where it is used ------------------------------------------------------

def test_the_python_helper_imports_nothing_from_the_current_directory(planted):
    """proc.python's interpreter, started by any account in a planted folder, imports
    the testbed's own modules and none of the folder's."""
    if os.geteuid() != 0:
        pytest.skip("runs the interpreter as nobody (runuser)")
    here, marks = planted
    probe = ("import argparse, json, socket, ssl, numpy, testbed.host.proc, http.server; "
             "print(testbed.host.proc.__file__)")
    for user in ("root", "nobody"):
        cp = subprocess.run(["runuser", "-u", user, "--", *proc.python("-c", probe)],
                            cwd=here, capture_output=True, text=True, check=False, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(here)})
        assert cp.returncode == 0, cp.stderr
        assert cp.stdout.strip() == str(ROOT / "testbed/host/proc.py")
    assert imported(marks) == []


INTERPRETER = re.compile(r"(str\()?(sys\.executable|([\w.]+\.)?PYTHON)\)?")
"""sys.executable or the testbed's PYTHON (paths.PYTHON, browsertime.PYTHON), str() or not."""


def _python_argv_by_hand(path: Path) -> list[int]:
    """Lines of `path` that build an interpreter's command line without proc.python:
    a list holding sys.executable or a PYTHON path."""
    return sorted(node.lineno for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.List)
                  and any(INTERPRETER.fullmatch(ast.unparse(e)) for e in node.elts))


def test_every_python_child_is_started_by_the_one_helper():
    """One way to start the testbed's Python (testbed.host.proc.python): no module of
    testbed/, analysis/, results_contract/ or bench/ builds its own interpreter command line."""
    found = {}
    for top in ("testbed", "analysis", "results_contract", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == ROOT / "testbed/host/proc.py":
                continue
            lines = _python_argv_by_hand(path)
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    assert found == {}


# -- the commands, as root, from the planted folder ---------------------------------------

@pytest.mark.e2e
def test_replay_imports_nothing_from_the_current_directory(planted):
    """`testbed replay` as root from the planted folder: the namespace entry of every
    server and of CMD (testbed.host.enter, root until it drops privileges) and the
    readiness probe; CMD runs in that folder as the testbed user."""
    here, marks = planted
    cp = subprocess.run([TESTBED, "replay", "local-news", "--stack", "tcp", "--", "true"],
                        cwd=here, capture_output=True, text=True, check=False, timeout=180,
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert imported(marks) == []


@pytest.mark.e2e
def test_doctor_checks_import_nothing_from_the_current_directory(planted, monkeypatch):
    """The doctor's own children as root: its web server (`-m http.server`) in the
    lab's namespace and the NumPy/Pillow check of visual metrics."""
    from testbed.commands import doctor
    from testbed.host import runstate

    here, marks = planted
    monkeypatch.chdir(here)
    try:
        row = doctor.check_visual_metrics()
        with doctor.lab() as topo:
            served = proc.run(topo.client.exec(["curl", "-s", "-m", "5",
                                                f"http://{doctor.PROBE_IP}/"]), check=False)
    finally:
        runstate.release()
    assert row.ok, row.observed
    assert "doctor-ok" in served.stdout
    assert imported(marks) == []


@pytest.mark.e2e
def test_calibration_probe_imports_nothing_from_the_current_directory(planted, monkeypatch):
    """The calibration's UDP probe server (root, in the server namespace)."""
    from testbed.emulate.probesite import ProbeSite
    from testbed.host import runstate

    here, marks = planted
    monkeypatch.chdir(here)
    try:
        with ProbeSite() as site, site.probe_server():
            pass
    finally:
        runstate.release()
    assert imported(marks) == []
