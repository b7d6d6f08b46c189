"""Kill a campaign runner with SIGKILL and resume it: the fault suite's moves and what
it checks after them (the store, the host).

    log = kill_at_moments(argv, out)    # one SIGKILL at each of MOMENTS, in turn
    ids = resume_to_the_plan(argv, out, planned, timeout=600)

A kill lands at a chosen moment of the runner's work, seen from outside (its
descendants, its namespaces, its store), not at a random time: each kill tests a
different moment, however fast or busy the machine.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from support.paths import ROOT
from testbed.host.cleanup import leftovers


def stored(out: Path) -> list[str]:
    """The trial ids stored in `out` (none before the store or its table exists)."""
    if not (out / "trials.sqlite").exists():
        return []
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT trial_id FROM trials")]
    except sqlite3.OperationalError:  # killed before the table was made
        return []
    finally:
        db.close()


def settled_leftovers() -> list[str]:
    """What testbed runs left on the host, once given up to 5 s to go (processes of
    a killed run may still be exiting)."""
    found = leftovers()
    for _ in range(20):
        if not found:
            break
        time.sleep(0.25)
        found = leftovers()
    return found


def resume_to_the_plan(argv: list[str], out: Path, planned: set[str],
                       timeout: float) -> list[str]:
    """Run the killed campaign again to its end: exit 0, every planned trial stored once
    (none lost, none twice) with its folder, and every one measured (status ok: a kill
    must not turn a trial into a failure); the run says it skipped what the killed ones
    stored. The stored ids."""
    before = len(stored(out)) if (out / "trials.sqlite").exists() else 0
    cp = subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True,
                        timeout=timeout)
    assert cp.returncode == 0, cp.stderr[-3000:]
    if before:
        assert f"{before} already stored" in cp.stderr, cp.stderr[-3000:]
    ids = stored(out)
    assert len(ids) == len(set(ids)), "a trial was stored twice"
    assert set(ids) == planned, f"lost: {planned - set(ids)}, unexpected: {set(ids) - planned}"
    on_disk = {p.name for p in (out / "trials").iterdir()}
    assert on_disk == planned, on_disk ^ planned
    failed = not_ok(out)
    assert failed == [], f"{len(failed)} stored trials are not ok: {failed[:5]}"
    return ids


def not_ok(out: Path) -> list[tuple[str, str, str]]:
    """The stored trials whose status is not ok: (trial id, status, reason)."""
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute("SELECT trial_id, status, reason FROM trials "
                          "WHERE status IS NOT 'ok'").fetchall()
    finally:
        db.close()


MOMENT_S = 300.0
"""The longest one attempt waits for its moment (start-up and a trial take ~10 s on an
idle machine)."""
BROWSERS = ("chromium", "chrome", "firefox-esr", "firefox")
"""A browser's program name in a process's command line (its first word's basename)."""


class Runner:
    """What one runner shows from outside while it works: its descendants' command lines,
    the network namespaces made since it started, and its results folder's store."""

    def __init__(self, proc: subprocess.Popen, out: Path) -> None:
        self.proc, self.out = proc, out
        self.namespaces = _namespaces()
        self.stored = len(stored(out))

    def commands(self) -> list[list[str]]:
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        found = []
        for child in children:
            try:
                found.append(child.cmdline())
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def browsing(self) -> bool:
        return any(c and os.path.basename(c[0]) in BROWSERS for c in self.commands())

    def new_namespaces(self) -> set[str]:
        return _namespaces() - self.namespaces

    def stored_more(self) -> bool:
        return len(stored(self.out)) > self.stored


def _namespaces() -> set[str]:
    """The named network namespaces (ip netns's folder, read without running ip)."""
    try:
        return set(os.listdir("/run/netns"))
    except FileNotFoundError:
        return set()


MOMENTS: dict[str, Callable[[Runner], bool]] = {
    # right after a trial's row was committed (the next run resumes a store with rows)
    "row stored": Runner.stored_more,
    # start-up: its first namespaces made, no browser yet, nothing stored
    "start-up": lambda r: bool(r.new_namespaces()) and not r.browsing()
    and not r.stored_more(),
    # a page load under way: a browser runs
    "mid-load": Runner.browsing,
    # a load finished, its row not yet stored: the visual metrics of its video run
    "load done, row not stored": lambda r: any(
        any("visualmetrics" in w for w in c) for c in r.commands()) and not r.stored_more(),
}
"""The moments a kill lands at, each a test of what the runner's owner undoes and what
the resume redoes, in the order kill_at_moments takes them."""


def kill_at_moments(argv: list[str], out: Path,
                    moments: tuple[str, ...] = tuple(MOMENTS)) -> list[tuple[str, int, int]]:
    """Start the campaign and SIGKILL it (no cleanup at all) once at each of `moments`,
    starting it again after each kill: (moment, trials stored before, after) per kill.
    Fails naming the moment if the campaign ends before it or it does not come within
    MOMENT_S seconds."""
    log = []
    for moment in moments:
        reached = MOMENTS[moment]
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        runner = Runner(proc, out)
        deadline = time.monotonic() + MOMENT_S
        try:
            while not reached(runner):
                if proc.poll() is not None:
                    pytest.fail(f"the campaign ended (exit {proc.returncode}) before the "
                                f"moment {moment!r}; kills so far: {log}")
                if time.monotonic() > deadline:
                    pytest.fail(f"waited {MOMENT_S:.0f} s for the moment {moment!r}; kills "
                                f"so far: {log}")
                time.sleep(0.02)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.append((moment, runner.stored, len(stored(out))))
    return log
