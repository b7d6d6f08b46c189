"""End to end: a campaign on a local Dask cluster of two workers, through the real
replay, shells, Chromium and Browsertime; one worker SIGKILLed while it measures.

One run (to keep the machine's time short) checks both: 20 trials stored once
each, none failed, both workers used, every trial's files present, after one
worker was killed mid-block (its block ran again on a worker; nothing of the
killed worker's run is left once the campaign ends).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess

import pytest
from support.cluster import (
    FILES,
    dask_workers,
    descendants,
    running_campaign,
    stored_count,
    two_setting_campaign,
    wait_for,
)
from support.needs import needs_parts

pytestmark = pytest.mark.e2e


CAMPAIGN = two_setting_campaign(10, 3)


def test_two_workers_twenty_trials_one_worker_killed_mid_block(tmp_path):
    needs_parts()
    out = tmp_path / "out"
    with running_campaign(tmp_path, CAMPAIGN, "--workers", "2") as p:
        db = out / "trials.sqlite"
        wait_for("2 stored trials", lambda: stored_count(db) >= 2, 600, p)
        # a worker with a block in flight: Browsertime (and its browser) under it
        victim = wait_for("a worker measuring a block",
                       lambda: next((w for w in dask_workers(p.pid) if len(descendants(w)) >= 3),
                                    None), 120, p)
        stored_at_kill = stored_count(db)
        os.kill(victim, signal.SIGKILL)
        p.wait(timeout=900)
    text = (tmp_path / "run.log").read_text()
    assert p.returncode == 0, text[-3000:]
    assert stored_at_kill < 20
    con = sqlite3.connect(db)
    rows = con.execute("SELECT trial_id, status, reason, attempt, worker FROM trials").fetchall()
    con.close()
    ids = [r[0] for r in rows]
    assert len(rows) == 20 and len(set(ids)) == 20
    assert [r for r in rows if r[1] != "ok"] == [], "failed trials"
    workers = {r[4] for r in rows}
    assert len(workers) == 2 and all(w and "/" in w for w in workers), workers
    for trial_id in ids:
        assert FILES <= {f.name for f in (out / "trials" / trial_id).iterdir()}, trial_id
    left = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True).stdout
    assert f"tb-{victim}-" not in left, "the killed worker's namespaces are still there"
