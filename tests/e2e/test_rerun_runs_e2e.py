"""End to end: `testbed run --rerun-runs` measures stored trials again. A campaign of
the bundled site over no network emulation with TCP, two runs; then run 0 again: its
row and folder are new, run 1's are untouched, and the manifest's new session says
which runs it replaced. Every ok trial recorded how busy the machine was during its
load (testbed.measure.load)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

from testbed.campaign.store.store import read_rows

pytestmark = pytest.mark.e2e


def started(out: Path) -> dict[str, str]:
    return {r["trial_id"]: r["started_at"] for r in read_rows(out / "trials.sqlite")
            if r["status"] == "ok"}


def check_machine_load(out: Path) -> None:
    """The machine's load of every ok trial: plausible shares and CPU times (no
    max_load_before_start: no wait). The servers' time is counted in clock ticks (10
    ms): nginx and uWSGI serving this small page over no emulated network may take
    less than one, so it is only known, not above 0."""
    ok = [r for r in read_rows(out / "trials.sqlite") if r["status"] == "ok"]
    assert ok
    for r in ok:
        assert 0 < r["cpu_busy"] <= 1 and 0 <= r["cpu_steal"] <= 1, r
        assert r["browser_cpu_s"] > 0 and r["server_cpu_s"] >= 0, r
        assert r["loadavg_1m"] >= 0 and r["load_wait_s"] is None, r
        assert r["load_over_limit"] is None, r


def test_rerun_runs_replaces_those_runs_rows_and_folders_only(tmp_path):
    needs_parts()
    (tmp_path / "c.toml").write_text('sites = ["local-news"]\nnetworks = ["none"]\n'
                                     'protocols = ["tcp"]\nruns = 2\nretries = 1\n')
    out = tmp_path / "out"
    argv = [TESTBED, "run", str(tmp_path / "c.toml"), "--out", str(out)]
    cp = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600,
                        check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    first = started(out)
    assert set(first) == {"local-news+none+tcp+0", "local-news+none+tcp+1"}
    check_machine_load(out)

    cp = subprocess.run([*argv, "--rerun-runs", "0"], cwd=ROOT, capture_output=True,
                        text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert "measuring 1 stored trials of runs 0 again" in cp.stdout + cp.stderr
    again = started(out)
    assert set(again) == set(first)
    assert again["local-news+none+tcp+0"] > first["local-news+none+tcp+0"]
    assert again["local-news+none+tcp+1"] == first["local-news+none+tcp+1"]
    assert (out / "trials" / "local-news+none+tcp+0" / "trial.json").is_file()
    doc = json.loads((out / "manifest.json").read_text())  # results_contract.manifest
    sessions = doc["sessions"]
    assert len(sessions) == 2 and "rerun" not in sessions[0]
    assert sessions[1]["rerun"] == {"runs": [0], "trials": 1}
    assert doc["schema_version"] == 2 and list(doc["networks"]) == ["none"]
    assert all(list(s["networks"]) == ["none"] for s in sessions)
    assert set(doc["server_sysctls"]) == {"tcp"} == set(sessions[1]["server_sysctls"])
