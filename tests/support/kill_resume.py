"""Kill a campaign runner with SIGKILL and resume it: the fault suite's moves and what
it checks after them (the store, the host)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support.paths import ROOT

from testbed.host.cleanup import leftovers

FIRST_TRIAL_S = 600.0
"""The longest the test waits for the first stored trial (start-up and one block take
~10 s on an idle machine)."""


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


def wait_for_first_trial(runner: subprocess.Popen, out: Path) -> None:
    """Until the runner has stored a trial in out (at most FIRST_TRIAL_S seconds)."""
    deadline = time.monotonic() + FIRST_TRIAL_S
    while not stored(out):
        if runner.poll() is not None:
            pytest.fail(f"the first runner exited with {runner.returncode} before it stored "
                        f"a trial in {out / 'trials.sqlite'}")
        if time.monotonic() > deadline:
            pytest.fail(f"waited {FIRST_TRIAL_S:.0f} s for the first runner to store a trial "
                        f"in {out / 'trials.sqlite'}; none was stored")
        time.sleep(0.1)


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


def kill_at_random(argv: list[str], out: Path, planned: set[str], rng: random.Random,
                   window: tuple[float, float], times: int) -> tuple[int, list[int]]:
    """Start the campaign and SIGKILL it (no cleanup at all) `times` times: the first
    right after its first stored trial, so every later run resumes a partly stored
    results folder however slow the machine, the others at a random moment in
    `window` seconds after the start (some before the first store, most after).
    The kills made and the trials stored after each."""
    kills, progress = 0, []
    for attempt in range(3 * times):
        if kills >= times:
            break
        runner = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            if attempt == 0:
                wait_for_first_trial(runner, out)
            else:
                runner.wait(timeout=rng.uniform(*window))
        except subprocess.TimeoutExpired:
            pass
        finally:
            if runner.poll() is None:
                os.kill(runner.pid, signal.SIGKILL)
                runner.wait()
                kills += 1
        progress.append(len(stored(out)))
        if set(stored(out)) == planned:
            break
    return kills, progress


def resume_to_the_plan(argv: list[str], out: Path, planned: set[str],
                       timeout: float) -> list[str]:
    """Run the killed campaign again to its end: exit 0, every planned trial stored once
    (none lost, none twice) with its folder, and every one measured (status ok: a kill
    must not turn a trial into a failure). The stored ids."""
    cp = subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True,
                        timeout=timeout)
    assert cp.returncode == 0, cp.stderr[-3000:]
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
