"""Fault suite: a trial that fails on its own is stored failed with its reason, and
the campaign goes on.

- A page that never finishes loading (its inline script never ends): the trial
  is stored `failed` with reason `timeout`; the next trial (another site) is ok.
- The HTTP/3 server or uWSGI killed with SIGKILL, then (in the same campaign, the
  servers started again) stopped with SIGSTOP, while a page load is under way: each
  such trial is stored `failed`, its reason naming the server and what happened to it;
  the trial after each (servers started again) is ok.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

from testbed.campaign.plan import plan
from testbed.validate.site import exchange, write

IP = "203.0.113.10"  # a documentation address: exists only in the test's namespaces

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

HANG = b"""<!doctype html><html><head><meta charset="utf-8"><title>never loads</title></head>
<body><h1>This page never finishes loading</h1><script>for (;;) {}</script></body></html>"""

# The parser waits for the script (5 s of the page's load), then fetches the images:
# a server killed during those 5 s is missing for the rest of the load.
SLOW = b"""<!doctype html><html><head><meta charset="utf-8"><title>slow</title>
<script>var end = performance.now() + 5000; while (performance.now() < end) {}</script></head>
<body><h1>A slow page</h1><img src="/a.svg" width="300" height="120">
<img src="/b.svg" width="300" height="120"></body></html>"""


def svg(color: str) -> bytes:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="300" height="120">'
            f'<rect width="300" height="120" fill="{color}"/></svg>').encode()


@pytest.fixture
def sites(readable_tmp):
    """A world-readable folder for the test's recordings (the servers run as testbed)."""
    return readable_tmp


def campaign(path: Path, **keys) -> Path:
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()))
    return path


def rows(out: Path) -> dict[str, dict]:
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return {r["trial_id"]: dict(r) for r in db.execute("SELECT * FROM trials")}
    finally:
        db.close()


def evidence(out: Path, trial_id: str) -> dict:
    return json.loads((out / "trials" / trial_id / "trial.json").read_text())["evidence"]


def test_a_page_that_never_finishes_times_out_and_the_campaign_goes_on(sites, tmp_path):
    needs_parts()
    hang = write(sites, "hang", "https://www.hang.test/", [
        exchange("https://www.hang.test/", IP, HANG, "text/html; charset=utf-8")])
    # a seed that puts the hanging site first: the other site's trial comes after it
    seed = next(s for s in range(100)
                if plan.blocks(["hang", "local-news"], ["none"], ["tcp"], 1, s)[0].site == "hang")
    toml = campaign(tmp_path / "hang.toml", sites=[str(hang), "local-news"], networks=["none"],
                    protocols=["tcp"], runs=1, retries=0, timeout_s=10, seed=seed)
    out = tmp_path / "results"
    cp = subprocess.run([TESTBED, "run", str(toml), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    got = rows(out)
    hung, normal = got["hang+none+tcp+0"], got["local-news+none+tcp+0"]
    assert (hung["status"], hung["reason"]) == ("failed", "timeout"), hung
    assert hung["plt_ms"] is None
    assert evidence(out, hung["trial_id"])["timed_out"] is True
    assert (normal["status"], normal["reason"]) == ("ok", None), normal
    assert normal["started_at"] > hung["started_at"]  # it ran after the timeout
    assert normal["plt_ms"] > 0


def server_pids(run_dir: Path, server: str) -> list[int]:
    """The run's processes named `server` (their command line names the run's state)."""
    mark = f"{run_dir}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(argv[0].decode(errors="replace")).name == server and mark in b" ".join(argv):
            found.append(int(entry.name))
    return found


def signal_during_a_load(runner: subprocess.Popen, server: str, sig: int,
                         seen: set[Path]) -> int:
    """Wait for a page load of the campaign's whose go file is not in `seen` (added),
    send `server` sig (SIGKILL: it dies; SIGSTOP: it stays, answering nothing) while it
    runs; its pid."""
    run_dir = Path("/run/testbed") / str(runner.pid)
    deadline = time.monotonic() + 240
    go: list[Path] = []
    while not go:
        assert runner.poll() is None, "the campaign ended before a page load was seen"
        assert time.monotonic() < deadline, "no new page load started within 240 s"
        go = sorted(set(run_dir.glob("campaign/block-*/ctl/go-*.json")) - seen)
        time.sleep(0.05)
    seen.update(go)
    time.sleep(1.5)  # the page's HTML is in; its script holds the load for 5 s
    pids = server_pids(run_dir, server)
    assert len(pids) == 1, f"{server} processes of the run: {pids}"
    done = go[0].with_name(go[0].name.replace("go-", "done-"))
    assert not done.exists(), "the load ended before the server got the signal"
    os.kill(pids[0], sig)
    return pids[0]


@pytest.mark.parametrize(("protocol", "server"), [("quic", "h3server"), ("tcp", "uwsgi")])
def test_a_server_killed_or_stopped_mid_trial_fails_that_trial_and_the_next_works(
        sites, tmp_path, protocol, server):
    """Run 0: the server SIGKILLed mid-load; run 1: the server (started again) SIGSTOPped
    mid-load: alive to waitpid but answering nothing, the health check after the load
    finds it stopped; run 2: ok. Each failed trial names the server and what happened
    to it; the servers are started again after each."""
    needs_parts()
    slow = write(sites, "slow", "https://www.slow.test/", [
        exchange("https://www.slow.test/", IP, SLOW, "text/html; charset=utf-8"),
        exchange("https://www.slow.test/a.svg", IP, svg("navy"), "image/svg+xml"),
        exchange("https://www.slow.test/b.svg", IP, svg("olive"), "image/svg+xml")])
    toml = campaign(tmp_path / "kill.toml", sites=[str(slow)], networks=["none"],
                    protocols=[protocol], runs=3, retries=0, timeout_s=15, seed=3)
    out = tmp_path / "results"
    runner = subprocess.Popen([TESTBED, "run", str(toml), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: set[Path] = set()
    try:
        killed = signal_during_a_load(runner, server, signal.SIGKILL, seen)
        stopped = signal_during_a_load(runner, server, signal.SIGSTOP, seen)
        _, err = runner.communicate(timeout=400)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 0, err[-3000:]
    assert killed != stopped  # started again after the kill
    assert not Path(f"/proc/{killed}").exists()
    assert not Path(f"/proc/{stopped}").exists()  # the stopped server was ended
    got = rows(out)
    first, second, third = (got[f"slow+none+{protocol}+{run}"] for run in range(3))
    assert first["started_at"] < second["started_at"] < third["started_at"]
    died = f"replay server {server} ({protocol} stack) exited with status -9 (SIGKILL)"
    assert (first["status"], first["reason"]) == ("failed", f"server-died: {died}"), first
    assert evidence(out, first["trial_id"])["server_error"] == died
    why = f"replay server {server} ({protocol} stack) stopped answering: process {stopped} " \
          "is stopped"
    assert (second["status"], second["reason"]) == ("failed", f"server-died: {why}"), second
    assert evidence(out, second["trial_id"])["server_error"] == why
    assert (third["status"], third["reason"]) == ("ok", None), third
    want = "h3" if protocol == "quic" else "h2"
    assert list(json.loads(third["http_versions"])) == [want], third
