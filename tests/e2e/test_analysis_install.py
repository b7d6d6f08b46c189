"""The analysis-only install: `pip install .[analysis]` into a fresh venv (the lock as
constraints), no mitmproxy or distributed (pydantic is in the base: the manifest's
model), then `testbed report`, `trials`,
`trial`, `export` and `compare` over the fixture and the notebook, all from that venv."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import FIXTURES, ROOT, SUPPORT

pytestmark = pytest.mark.e2e

FIXTURE = FIXTURES / "results"
WHEELS = ROOT / ".tools" / "wheels"
INSTALL_TIMEOUT = 900  # seconds for pip (a cold cache downloads ~150 MB)
RUN_TIMEOUT = 600  # seconds for one command over the fixture
MEASUREMENT_ONLY = ("mitmproxy", "distributed", "cryptography")


def _run(argv, what: str, timeout: int, cwd: Path) -> str:
    """Run argv; fail with its output, or naming what it waited for on timeout."""
    try:
        done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out after {timeout} s waiting for {what}")
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def _source_copy(dest: Path) -> Path:
    """What pip needs to build the project, copied so the build leaves no build/ here."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, dest / name)
    for package in ("testbed", "analysis", "results_contract"):
        shutil.copytree(ROOT / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _index() -> list[str]:
    """Where pip finds the packages: the image's wheels (docker/Dockerfile downloads them
    into .tools/wheels, as `make image-test` runs without a network), else the index."""
    return ["--no-index", "--find-links", str(WHEELS)] if WHEELS.is_dir() else []


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analysis-install")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], "python -m venv", 120, tmp)
    src = _source_copy(tmp / "src")
    # --no-compile: the commands below compile what they import; the rest of pandas,
    # SciPy and matplotlib need not be byte-compiled for the test
    _run([venv / "bin" / "pip", "install", "-q", "--no-compile", *_index(), "-c",
          ROOT / "setup" / "requirements.lock", f"{src}[analysis]"],
         "pip install .[analysis]", INSTALL_TIMEOUT, tmp)
    yield venv
    # ~0.5 GB in ~20,000 files, not kept among pytest's last temporary folders: removed
    # in the background while the next tests run
    subprocess.Popen(["rm", "-rf", "--", str(tmp)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


def test_the_analysis_install_has_no_measurement_package(venv):
    listed = _run([venv / "bin" / "pip", "list", "--format=freeze"], "pip list", 120, venv)
    names = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert not names & set(MEASUREMENT_ONLY)
    assert {"testbed", "nbclient", "ipykernel", "pandas"} <= names


def test_report_trials_trial_export_and_compare_run_on_it(venv, tmp_path):
    testbed = venv / "bin" / "testbed"
    (tmp_path / "report").mkdir()
    out = _run([testbed, "report", FIXTURE, "--out", tmp_path / "report"],
               "testbed report over the fixture", RUN_TIMEOUT, tmp_path)
    assert "2480 trials (2459 ok, 21 failed)" in out
    assert (tmp_path / "report" / "index.html").is_file()
    trials = _run([testbed, "trials", FIXTURE], "testbed trials", RUN_TIMEOUT, tmp_path)
    assert len(trials.splitlines()) == 2480  # one line per trial: id and status
    _run([testbed, "export", FIXTURE, "--csv", tmp_path / "trials.csv"],
         "testbed export", RUN_TIMEOUT, tmp_path)
    with open(tmp_path / "trials.csv", newline="") as f:
        assert sum(1 for _ in csv.reader(f)) == 1 + 2480
    first = trials.splitlines()[0].split("\t")[0]
    _run([testbed, "trial", FIXTURE, first, "--no-filmstrip", "--output",
          tmp_path / "trial.html"], "testbed trial", RUN_TIMEOUT, tmp_path)
    assert (tmp_path / "trial.html").is_file()
    _run([testbed, "compare", FIXTURE, tmp_path / "trials.csv"], "testbed compare",
         RUN_TIMEOUT, tmp_path)
    # a measurement command is listed and says what to install, in one line
    assert "'.[measure]'" in _run([testbed, "--help"], "testbed --help", 120, tmp_path)


def test_the_notebook_runs_on_it(venv, tmp_path):
    out = _run([venv / "bin" / "python", SUPPORT / "notebook_run.py",
                tmp_path / "executed.ipynb"], "the notebook on the fixture", RUN_TIMEOUT,
               tmp_path)
    assert out.strip().endswith("outputs")
    executed = (tmp_path / "executed.ipynb").read_text()
    assert '"image/png"' in executed and "2480 trials" in executed
