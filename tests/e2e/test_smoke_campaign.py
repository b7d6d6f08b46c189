"""End to end: campaigns through the real replay, shells, Chromium, Firefox and Browsertime.

The CI smoke replay (the shared campaign of support/smoke.py): the bundled site under
DSL through all five protocol settings, one run each, in Chromium and in Firefox; every
trial ok with every metric and its protocol proven. And a campaign stopped with SIGTERM
cleans up after itself. (A campaign killed with SIGKILL and run again:
tests/faults/test_kill_resume.py, at four chosen moments.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.campaigns import rows
from support.needs import needs_parts
from support.paths import ROOT, TESTBED
from support.smoke import SETTINGS

from testbed.host import source

METRICS = ("plt_ms", "fvc_ms", "lvc_ms", "vc85_ms", "si_ms", "ttfb_ms", "fp_ms", "fcp_ms",
           "lcp_ms", "dcl_ms")

pytestmark = pytest.mark.e2e


def test_smoke_campaign_in_both_clients_all_ok_with_protocol_proven(smoke_campaign,
                                                                     smoke_report):
    """smoke.toml in Chromium and Firefox (one campaign, ten trials): every trial ok with
    every metric; Chromium's protocol proven from its own log per request, Firefox's for
    every origin from its HTTP log, its HAR and the wire; the report compares the
    settings within each client."""
    from testbed.formats import recording as rec
    from testbed.replay.matching import normalise_host
    from testbed.validate import firefox as proof

    out = smoke_campaign
    got = rows(out)
    settings = SETTINGS
    assert sorted((r["client"], r["setting"]) for r in got) == sorted(
        (c, p) for c in ("chromium", "firefox") for p in settings)
    for r in got:
        assert (r["status"], r["reason"]) == ("ok", None), r
        assert r["trial_id"].endswith("+firefox") == (r["client"] == "firefox")
        assert (r["network"], r["rtt_ms"], r["origins"]) == ("dsl", 24.0, 4)
        assert r["plt_ms"] > 0 and r["fcp_ms"] > 0 and r["fvc_ms"] > 0, r
        assert r["bytes"] > 0 and r["misses"] is not None
        files = out / "trials" / r["trial_id"]
        assert {"browsertime.json", "browsertime.har.gz", "visualmetrics.json", "trial.json"} <= {
            p.name for p in files.iterdir()}
    for r in (r for r in got if r["client"] == "chromium"):
        assert all(r[m] is not None and r[m] > 0 for m in METRICS), r
        want = "h3" if r["setting"].startswith("quic") else "h2"
        proven = json.loads(r["http_versions"])
        assert list(proven) == [want] and proven[want] == r["requests"] > 0, r
        # the browser's timings, in the order the browser reaches them
        assert r["ttfb_ms"] < r["dcl_ms"] and r["fp_ms"] <= r["fcp_ms"] <= r["lcp_ms"], r
    recording = rec.load("local-news")
    origins = {f"{normalise_host(o.host)}:{o.port}": o.ip for o in recording.origins}
    for r in (r for r in got if r["client"] == "firefox"):
        proven_ff = proof.trial_rows(out, r, origins)
        assert [x for x in proven_ff if x.ok is False] == [], (r["trial_id"], proven_ff)
        logged = [x for x in proven_ff if x.name.endswith("Firefox's log")]
        assert len(logged) == len(origins)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["versions"]["browsertime"] == "28.3.0"
    assert manifest["versions"]["testbed"] == source.version()  # the commit when in git
    assert manifest["campaign"]["settings"]["video_fps"] is None  # each network's own
    assert manifest["networks"]["dsl"]["video_fps"] == 60
    assert manifest["calibration"]["dsl"]["delay_ms"] >= 0
    assert set(manifest["server_sysctls"]) == set(settings)
    csv = subprocess.run(check=False, args=[TESTBED, "export", str(out), "--csv", "-"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert csv.returncode == 0 and len(csv.stdout.strip().splitlines()) == 11
    for client in ("chromium", "firefox"):
        assert (smoke_report / client / "index.html").is_file()


def test_sigterm_stops_the_campaign_after_cleaning_up(tmp_path):
    needs_parts()
    from testbed.host import netns

    campaign = tmp_path / "stopped.toml"
    campaign.write_text('sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\n'
                        'runs = 2\nretries = 0\n')
    out = tmp_path / "results"
    runner = subprocess.Popen([TESTBED, "run", str(campaign), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run_dir = Path("/run/testbed") / str(runner.pid)
    try:
        deadline = time.monotonic() + 300
        # wait until a page load is under way (Browsertime's control folder has a launch)
        while time.monotonic() < deadline and runner.poll() is None:
            if list(run_dir.glob("campaign/block-*/ctl/launch-1")):
                break
            time.sleep(0.1)
        assert runner.poll() is None
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err[-2000:]
    assert "interrupted" in err
    mine = f"tb-{runner.pid}-"
    assert not [n for n in netns.list_names() if n.startswith(mine)]
    assert not run_dir.exists()
    left = _processes_of(runner.pid)
    assert not left, [_described(pid) for pid in left]


def _described(pid: int) -> str:
    """A process as the failure message names it: pid, parent and command line."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (parent {ppid}): {cmd[:200]}"


def _processes_of(run_id: int) -> list[int]:
    """Processes tagged with the run or running from its state folder (after a grace
    for exiting ones)."""
    from testbed.host.cleanup import tagged_processes
    mark = f"/run/testbed/{run_id}/".encode()
    for _ in range(40):
        found = set(tagged_processes({str(run_id)}))
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and mark in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                continue
        if not found:
            return []
        time.sleep(0.25)
    return sorted(found)
