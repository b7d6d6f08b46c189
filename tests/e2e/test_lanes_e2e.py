"""End to end: a campaign measured in lanes (`testbed run --lanes 2`), alone and on a
local Dask cluster of two workers (`--workers 2 --lanes 2`), through the real replay,
shells, Chromium and Browsertime.

Each stores every planned trial once, ok, with the lane that measured it (one lane per
Browsertime session); blocks of different lanes overlap in time (they ran at once); the manifest records the lanes
per network; nothing is left on the host.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest
from support.campaigns import rows as stored_rows
from support.cluster import FILES, running_campaign, two_setting_campaign
from support.kill_resume import settled_leftovers
from support.needs import needs_parts

pytestmark = pytest.mark.e2e

RUNS = 4


def _span(rows: list[dict]) -> tuple[float, float]:
    starts = [dt.datetime.fromisoformat(r["started_at"]).timestamp() for r in rows]
    return min(starts), max(s + r["wall_s"] for s, r in zip(starts, rows))


def _check(tmp_path, lanes_per_worker: int, workers: int) -> list[dict]:
    out = tmp_path / "out"
    rows = stored_rows(out)
    planned = {f"local-news+none+{p}+{r}" for p in ("tcp", "quic") for r in range(RUNS)}
    ids = [r["trial_id"] for r in rows]
    assert len(ids) == len(set(ids)) and set(ids) == planned, ids
    assert [r["trial_id"] for r in rows if r["status"] != "ok"] == []
    for r in rows:
        assert FILES <= {f.name for f in (out / "trials" / r["trial_id"]).iterdir()}
        assert r["lane"] in range(lanes_per_worker), r["lane"]
        assert r["worker"].rsplit("/", 1)[1] in {str(w) for w in range(workers)}, r["worker"]
    # the trials one Browsertime session measured share one lane (a block's trials
    # that failed and run again, or that a stopped session never reached, are a new
    # block that any free lane may take); blocks of two lanes ran at once
    by_session: dict[str, set] = {}
    for r in rows:
        trial = json.loads((out / "trials" / r["trial_id"] / "trial.json").read_text())
        session = trial["evidence"]["browsertime_log"]
        assert session, r["trial_id"]
        by_session.setdefault(session, set()).add((r["worker"], r["lane"]))
    assert all(len(v) == 1 for v in by_session.values()), (
        by_session, [(r["trial_id"], r["attempt"], r["worker"], r["lane"]) for r in rows])
    slots: dict[tuple, list[dict]] = {}
    for r in rows:
        slots.setdefault((r["worker"], r["lane"]), []).append(r)
    assert len(slots) >= 2, slots.keys()
    spans = sorted(_span(v) for v in slots.values())
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), f"no lanes overlapped: {spans}"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["lanes"] == {"none": {"lanes": lanes_per_worker, "from": "campaign"}}
    assert not settled_leftovers()
    return rows


def test_two_lanes_measure_blocks_at_once_each_trial_once_with_its_lane(tmp_path):
    needs_parts()
    with running_campaign(tmp_path, two_setting_campaign(RUNS, 7), "--lanes", "2") as p:
        p.wait(timeout=900)
    assert p.returncode == 0, (tmp_path / "run.log").read_text()[-3000:]
    rows = _check(tmp_path, 2, 1)
    assert {r["lane"] for r in rows} == {0, 1}


def test_lanes_compose_with_two_workers(tmp_path):
    needs_parts()
    with running_campaign(tmp_path, two_setting_campaign(RUNS, 8), "--workers", "2",
                          "--lanes", "2") as p:
        p.wait(timeout=900)
    assert p.returncode == 0, (tmp_path / "run.log").read_text()[-3000:]
    rows = _check(tmp_path, 2, 2)
    # both workers measured (a cluster whose second worker never took a block passes
    # every check above)
    assert {r["worker"].rsplit("/", 1)[1] for r in rows} == {"0", "1"}, \
        sorted({r["worker"] for r in rows})
