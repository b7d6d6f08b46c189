"""A campaign on a local Dask cluster, watched from outside: its processes, its store."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.paths import ROOT, TESTBED

FILES = {"browsertime.json", "browsertime.har.gz", "visualmetrics.json", "trial.json"}


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


def children(pid: int) -> list[int]:
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


def descendants(pid: int) -> list[int]:
    out, todo = [], children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def dask_workers(coordinator: int) -> list[int]:
    """The coordinator's Dask worker processes (multiprocessing children)."""
    found = []
    for p in children(coordinator):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmd:
            found.append(p)
    return found


def stored_count(db: Path) -> int:
    """Trials stored in the running campaign's store `db` (0 before it exists), read as
    testbed reads a store it did not make (testbed.campaign.store.store.count_where): a
    store that cannot be read is an InputError naming it, never a count of 0."""
    from testbed.campaign.store.store import count_where

    if not db.exists():
        return 0
    return count_where(db, "1 = 1")


def wait_for(what: str, cond, timeout_s: float, proc: subprocess.Popen):
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
