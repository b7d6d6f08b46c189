"""Fault suite: SIGKILL the coordinator of a campaign on a local Dask cluster of two
workers while blocks are in flight, then run the same command again.

The workers die with their coordinator (Dask's processes exit when their parent's
pipe closes); the second command resumes from the store as the in-process runner
does: every planned trial stored once, none failed, every trial's files there,
and nothing of the killed run left on the host.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support.cluster import FILES, dask_workers, descendants, stored_count, wait_for
from support.kill_resume import settled_leftovers, stored
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

PROTOCOLS = ("tcp", "quic")
RUNS = 4
WORKERS_GONE_S = 60.0
"""The longest the test waits for the killed coordinator's workers to exit."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

CAMPAIGN = f"""\
description = "two settings x {RUNS} runs on the unshaped network: {RUNS} blocks of 2 trials"
sites = ["local-news"]
networks = ["none"]
protocols = {list(PROTOCOLS)!r}
runs = {RUNS}
timeout_s = 60
retries = 1
keep_video = false
seed = 5
""".replace("'", '"')


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists()]


def test_coordinator_sigkilled_mid_campaign_resumes_with_nothing_lost_or_doubled(tmp_path):
    needs_parts()
    campaign = tmp_path / "cluster.toml"
    campaign.write_text(CAMPAIGN)
    out = tmp_path / "out"
    argv = [TESTBED, "run", str(campaign), "--workers", "2", "--out", str(out)]
    planned = {f"local-news+none+{p}+{r}" for p in PROTOCOLS for r in range(RUNS)}
    db = out / "trials.sqlite"
    with (tmp_path / "first.log").open("w") as log:
        p = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for("the first stored trial", lambda: stored_count(db) >= 1, 600, p)
            # both workers with a block in flight (Browsertime and its browser under them)
            busy = wait_for("a worker measuring a block",
                         lambda: [w for w in dask_workers(p.pid) if len(descendants(w)) >= 3],
                         120, p)
            workers = dask_workers(p.pid)
            stored_at_kill = stored_count(db)
            os.kill(p.pid, signal.SIGKILL)  # no cleanup at all
            p.wait()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert busy and 0 < stored_at_kill < len(planned), stored_at_kill

    deadline = time.monotonic() + WORKERS_GONE_S
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(workers), (f"waited {WORKERS_GONE_S:.0f} s for the killed coordinator's "
                                 f"workers {_alive(workers)} to exit")

    cp = subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert cp.returncode == 0, cp.stderr[-3000:]
    ids = stored(out)
    assert len(ids) == len(set(ids)), "a trial was stored twice"
    assert set(ids) == planned, f"lost: {planned - set(ids)}, unexpected: {set(ids) - planned}"
    con = sqlite3.connect(db)
    failed = con.execute("SELECT trial_id, reason FROM trials WHERE status != 'ok'").fetchall()
    con.close()
    assert failed == [], failed
    for trial_id in ids:
        assert FILES <= {f.name for f in (out / "trials" / trial_id).iterdir()}, trial_id
    found = settled_leftovers()
    assert not found, found
    print(f"\nstored before the kill: {stored_at_kill}; after the resume: {len(ids)} "
          f"of {len(planned)}; failed: 0; leftovers: 0")
