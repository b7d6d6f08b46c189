"""Fault suite: SIGKILL the campaign runner at each chosen moment of its work (right
after a stored row, start-up, mid-load, a finished load before its row), resume each
time.

The store must end with exactly the planned trials (none lost, none duplicated, every
one ok), each trial's files once, and nothing left behind on the host.
"""

from __future__ import annotations

import pytest
from support.kill_resume import MOMENTS, kill_at_moments, resume_to_the_plan, settled_leftovers
from support.paths import TESTBED

PROTOCOLS = ("tcp", "quic")
RUNS = 3
"""6 trials: one is stored during the kills (the first moment), the resume measures the
rest. Random kills needed 32 trials so that six landed before the campaign ended."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def test_sigkill_at_each_moment_loses_and_duplicates_nothing(tmp_path):
    campaign = tmp_path / "faults.toml"
    campaign.write_text(
        'sites = ["local-news"]\nnetworks = ["none"]\n'
        f"protocols = {list(PROTOCOLS)!r}\nruns = {RUNS}\n".replace("'", '"')
        + "retries = 1\ntimeout_s = 60\nseed = 11\n")
    out = tmp_path / "results"
    argv = [TESTBED, "run", str(campaign), "--out", str(out)]
    planned = {f"local-news+none+{p}+{r}" for p in PROTOCOLS for r in range(RUNS)}
    kills = kill_at_moments(argv, out)
    assert [k[0] for k in kills] == list(MOMENTS)
    assert 0 < kills[-1][2] < len(planned), f"the resume has nothing stored or nothing left: {kills}"

    ids = resume_to_the_plan(argv, out, planned, timeout=1200)
    found = settled_leftovers()
    assert not found, found
    print(f"\nkills (moment, stored before, after): {kills}; trials lost: "
          f"{len(planned - set(ids))}; duplicated: {len(ids) - len(set(ids))}; "
          f"leftovers: {len(found)}")
