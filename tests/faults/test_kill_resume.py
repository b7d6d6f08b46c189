"""Fault suite: SIGKILL the campaign runner at random moments, resume each time.

The store must end with exactly the planned trials (none lost, none
duplicated), each trial's files once, and nothing left behind on the host.
"""

from __future__ import annotations

import random

import pytest
from support.kill_resume import kill_at_random, resume_to_the_plan, settled_leftovers
from support.paths import TESTBED

KILLS = 6
"""Kills a run of the test survives: each lands at a random moment (the first after the
first stored trial), so six cover start-up, mid-block and mid-store moments; ten took
three minutes of CI's 35 for little more."""
PROTOCOLS = ("tcp", "quic")
RUNS = 16
"""32 trials: enough that KILLS kills land before the campaign ends. With 12 (24 trials)
the faster trials of 25 November finished it after 7 kills (stored after each: 2, 8, 10,
14, 18, 18, 22, 24)."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path):
    campaign = tmp_path / "faults.toml"
    campaign.write_text(
        'sites = ["local-news"]\nnetworks = ["none"]\n'
        f"protocols = {list(PROTOCOLS)!r}\nruns = {RUNS}\n".replace("'", '"')
        + "retries = 1\ntimeout_s = 60\nseed = 11\n")
    out = tmp_path / "results"
    argv = [TESTBED, "run", str(campaign), "--out", str(out)]
    planned = {f"local-news+none+{p}+{r}" for p in PROTOCOLS for r in range(RUNS)}
    rng = random.Random(20261122)
    # start-up takes ~8 s
    kills, progress = kill_at_random(argv, out, planned, rng, (3.0, 20.0), times=KILLS)
    assert kills >= KILLS, f"only {kills} kills before the campaign ended: {progress}"
    assert 0 < progress[0] < len(planned), f"the first kill did not land mid-way: {progress}"

    ids = resume_to_the_plan(argv, out, planned, timeout=1200)
    found = settled_leftovers()
    assert not found, found
    print(f"\nkills survived: {kills}; stored after each: {progress}; "
          f"trials lost: {len(planned - set(ids))}; duplicated: {len(ids) - len(set(ids))}; "
          f"leftovers: {len(found)}")
