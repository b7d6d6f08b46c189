"""Fault suite: SIGKILL a campaign measured in two lanes (`testbed run --lanes 2`) at
each chosen moment of its work (support.kill_resume.MOMENTS), resume each time.

The lanes are processes of a local Dask cluster; killed with their coordinator,
they leave namespaces, servers and folders that the next `testbed run` sweeps. The
store must end with exactly the planned trials (none lost, none duplicated, each
with its lane), each trial's files once, the plan the same before and after the
kills (the dry run's order), and nothing left behind on the host.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest
from support.kill_resume import MOMENTS, kill_at_moments, resume_to_the_plan, settled_leftovers
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

PROTOCOLS = ("tcp", "quic")
RUNS = 4
"""8 trials in 4 blocks of 2: the two lanes each take blocks after the kills."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def _plan(argv: list[str]) -> list[str]:
    cp = subprocess.run([*argv, "--dry-run", "--json"], cwd=ROOT, check=True,
                        capture_output=True, text=True)
    return json.loads(cp.stdout)["order"]


def test_sigkill_of_two_lanes_at_each_moment_loses_and_duplicates_nothing(tmp_path):
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
    kills = kill_at_moments(argv, out)
    assert [k[0] for k in kills] == list(MOMENTS)
    assert 0 < kills[-1][2] < len(planned), f"nothing stored or nothing left: {kills}"

    assert _plan(argv) == plan_before, "the resumed campaign has another plan"
    ids = resume_to_the_plan(argv, out, planned, timeout=1200)
    con = sqlite3.connect(out / "trials.sqlite")
    lanes = {r[0] for r in con.execute("SELECT lane FROM trials")}
    con.close()
    assert lanes == {0, 1}, lanes
    found = settled_leftovers()
    assert not found, found
    print(f"\nkills (moment, stored before, after): {kills}; "
          f"trials lost: {len(planned - set(ids))}; duplicated: {len(ids) - len(set(ids))}; "
          f"leftovers: {len(found)}")
