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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_smoke_campaign import needs_parts

ROOT = Path(__file__).resolve().parent.parent
TESTBED = str(ROOT / ".venv/bin/testbed")
FILES = {"browsertime.json", "browsertime.har.gz", "visualmetrics.json", "trial.json"}

pytestmark = pytest.mark.e2e


def two_setting_campaign(runs: int, seed: int) -> str:
    """TCP and QUIC on the unshaped network, `runs` blocks of 2 trials."""
    return f"""\
description = "two settings x {runs} runs on the unshaped network: {runs} blocks of 2 trials"
sites = ["local-news"]
networks = ["none"]
protocols = ["tcp", "quic"]
runs = {runs}
timeout_s = 60
retries = 1
keep_video = false
seed = {seed}
"""


CAMPAIGN = two_setting_campaign(10, 3)


def _children(pid: int) -> list[int]:
    """Processes whose parent is pid (whichever of its threads started them)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    out, todo = [], _children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def _workers(coordinator: int) -> list[int]:
    """The coordinator's Dask worker processes (multiprocessing children)."""
    found = []
    for p in _children(coordinator):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmd:
            found.append(p)
    return found


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _wait(what: str, cond, timeout_s: float, proc: subprocess.Popen):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        if proc.poll() is not None:
            pytest.fail(f"the campaign ended (status {proc.returncode}) while waiting for {what}")
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"waited {timeout_s:.0f} s for {what}")


@contextmanager
def running_campaign(tmp_path: Path, text: str, *options: str) -> Iterator[subprocess.Popen]:
    """`testbed run` of the campaign `text` with `options`, its results in tmp_path/out
    and its output in tmp_path/run.log; killed if it still runs on exit."""
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(text)
    with (tmp_path / "run.log").open("w") as log:
        p = subprocess.Popen([TESTBED, "run", str(campaign), *options, "--out",
                              str(tmp_path / "out")],
                             cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield p
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_two_workers_twenty_trials_one_worker_killed_mid_block(tmp_path):
    needs_parts()
    out = tmp_path / "out"
    with running_campaign(tmp_path, CAMPAIGN, "--workers", "2") as p:
        db = out / "trials.sqlite"
        _wait("2 stored trials", lambda: _stored(db) >= 2, 600, p)
        # a worker with a block in flight: Browsertime (and its browser) under it
        victim = _wait("a worker measuring a block",
                       lambda: next((w for w in _workers(p.pid) if len(_descendants(w)) >= 3),
                                    None), 120, p)
        stored_at_kill = _stored(db)
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
