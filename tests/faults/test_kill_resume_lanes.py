"""Fault suite: SIGKILL a campaign measured in two lanes (`testbed run --lanes 2`) at
random moments, resume each time.

The lanes are processes of a local Dask cluster; killed with their coordinator,
they leave namespaces, servers and folders that the next `testbed run` sweeps. The
store must end with exactly the planned trials (none lost, none duplicated, each
with its lane), each trial's files once, the plan the same before and after the
kills (the dry run's order), and nothing left behind on the host.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess

import pytest
from support.kill_resume import kill_at_random, resume_to_the_plan, settled_leftovers
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

KILLS = 10
PROTOCOLS = ("tcp", "quic")
RUNS = 16
"""32 trials in 16 blocks of 2: two lanes take ~5 s a block on an idle machine, and a
killed session's start-up (the cluster's two processes) ~10 s, so KILLS kills land
before the campaign ends."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def _plan(argv: list[str]) -> list[str]:
    cp = subprocess.run([*argv, "--dry-run", "--json"], cwd=ROOT, check=True,
                        capture_output=True, text=True)
    return json.loads(cp.stdout)["order"]


def test_sigkill_of_two_lanes_at_random_moments_loses_and_duplicates_nothing(tmp_path):
    needs_parts()
    campaign = tmp_path / "lanes.toml"
    campaign.write_text(
        'sites = ["local-news"]\nnetworks = ["none"]\n'
        f"protocols = {list(PROTOCOLS)!r}\nruns = {RUNS}\n".replace("'", '"')
        + "retries = 1\ntimeout_s = 60\nseed = 13\nlanes = 2\nkeep_video = false\n")
    out = tmp_path / "results"
    argv = [TESTBED, "run", str(campaign), "--out", str(out)]
    planned = {f"local-news+none+{p}+{r}" for p in PROTOCOLS for r in range(RUNS)}
    plan_before = _plan(argv)
    rng = random.Random(20261126)
    # start-up with the lanes' cluster ~10 s
    kills, progress = kill_at_random(argv, out, planned, rng, (4.0, 22.0), times=KILLS)
    assert kills >= KILLS, f"only {kills} kills before the campaign ended: {progress}"
    assert 0 < progress[0] < len(planned), f"the first kill did not land mid-way: {progress}"

    assert _plan(argv) == plan_before, "the resumed campaign has another plan"
    ids = resume_to_the_plan(argv, out, planned, timeout=1200)
    con = sqlite3.connect(out / "trials.sqlite")
    lanes = {r[0] for r in con.execute("SELECT lane FROM trials")}
    con.close()
    assert lanes == {0, 1}, lanes
    found = settled_leftovers()
    assert not found, found
    print(f"\nkills survived: {kills}; stored after each: {progress}; "
          f"trials lost: {len(planned - set(ids))}; duplicated: {len(ids) - len(set(ids))}; "
          f"leftovers: {len(found)}")
