"""CI's script runs exactly `make setup` and `make test`'s stages, each pytest stage keeps
its per-test durations, and the summary reads them back."""

from __future__ import annotations

import re
import runpy
import subprocess
import tomllib
from pathlib import Path

from support.paths import ROOT

SUMMARY = ROOT / ".ci/summary.py"


def _make_test_stages() -> list[str]:
    line = re.search(r"^test:(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert line, "Makefile: no test: target"
    return line.group(1).split()


def test_ci_runs_the_stages_of_make_test_in_order():
    run = (ROOT / ".ci/run").read_text()
    stages = re.search(r"^STAGES=\((.*)\)$", run, re.MULTILINE)
    assert stages, ".ci/run: no STAGES=(...) line"
    assert stages.group(1).split() == _make_test_stages()
    assert re.search(r"^timed setup make setup$", run, re.MULTILINE)
    assert "export CI=true" in run


def test_every_pytest_stage_writes_junit_xml():
    text = (ROOT / "Makefile").read_text()
    for stage in ("unit", "e2e", "faults"):
        body = re.search(rf"^{stage}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
        assert body, f"Makefile: no {stage}: target"
        pytest_lines = [ln for ln in body.group(1).splitlines() if "-m pytest" in ln]
        assert pytest_lines and all("$(JUNIT)" in ln for ln in pytest_lines), stage


def test_every_test_has_a_timeout():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert 0 < int(options["ini_options"]["timeout"]) <= 1800


def _junit(path: Path, cases: list[tuple[str, float, str]]) -> None:
    rows = []
    for name, seconds, outcome in cases:
        inner = {"passed": "", "failed": "<failure message='x'/>",
                 "skipped": "<skipped message='y'/>"}[outcome]
        rows.append(f"<testcase classname='tests.m' name='{name}' time='{seconds}'>"
                    f"{inner}</testcase>")
    path.write_text(f"<testsuites><testsuite name='pytest'>{''.join(rows)}"
                    "</testsuite></testsuites>")


def test_summary_names_the_slowest_tests_and_counts_outcomes(tmp_path, capsys):
    (tmp_path / "stages.tsv").write_text("setup\t600.0\tok\nunit\t300.0\tok\ne2e\t12.0\tfailed\n")
    _junit(tmp_path / "unit.xml", [(f"t{i}", float(i), "passed") for i in range(20)])
    _junit(tmp_path / "e2e.xml", [("slow", 99.0, "failed"), ("skip", 0.1, "skipped")])
    runpy.run_path(str(SUMMARY), run_name="summary")["main"](tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "total: 20 passed, 1 failed, 1 skipped"
    slow = [ln for ln in out if ln.startswith("  ") and " s  " in ln and "::" in ln]
    assert len(slow) == 15
    assert "e2e" in slow[0] and "tests.m::slow" in slow[0]
    assert "tests.m::t19" in slow[1] and slow[-1].endswith("tests.m::t6")
    assert any("e2e" in ln and "failed" in ln for ln in out)
    assert any(ln.split()[:2] == ["whole", "912"] for ln in out)
    durations = (tmp_path / "durations.tsv").read_text().splitlines()
    assert len(durations) == 22 and durations[0].startswith("99.00\te2e\t")


def test_summary_runs_without_the_virtual_environment(tmp_path):
    """After a failed `make setup` there is no .venv: the summary needs only python3."""
    (tmp_path / "stages.tsv").write_text("setup\t5.0\tfailed\n")
    cp = subprocess.run(["python3", "-I", str(SUMMARY), str(tmp_path)], capture_output=True,
                        text=True, timeout=60, check=True)
    assert cp.stdout.splitlines()[-1] == "total: 0 passed, 0 failed, 0 skipped"
    assert "setup" in cp.stdout and "failed" in cp.stdout
