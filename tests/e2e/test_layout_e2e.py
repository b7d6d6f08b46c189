"""End to end: a replay's layout decides how many QUIC connections a page opens
(testbed.replay.layout, docs/layout.md).

The bundled site local-news serves www.local-news.test and static.local-news.test
from one recorded address with one certificate. A campaign of it over QUIC (DSL, one
run, Chromium and Firefox) in the default layout has Chromium pool the two names onto
one connection: the connections table (filled from the QUIC servers' figures) has one
row for that address, whose origin names both. The same campaign with
`layout = "split"` serves every host on an address of its own with a certificate of
its own: each browser opens one QUIC connection per host, at the host's new address,
and none to the shared one.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from support.needs import need_firefox, needs_parts
from support.paths import ROOT, TESTBED

from testbed.formats import recording
from testbed.replay import layout

pytestmark = pytest.mark.e2e

SITE = "local-news"
SHARED_IP = "10.78.0.1"
SHARED = ("static.local-news.test", "www.local-news.test")


def run(tmp_path: Path, layout_name: str | None) -> Path:
    """The results folder of a QUIC campaign of the site in `layout_name` (None: the key
    left out), exit 0 asserted."""
    needs_parts()
    need_firefox()
    camp = tmp_path / f"{layout_name or 'default'}.toml"
    camp.write_text("\n".join([
        f'sites = ["{SITE}"]', 'networks = ["dsl"]', 'protocols = ["quic"]',
        'client = ["chromium", "firefox"]', "runs = 1", "timeout_s = 60", "retries = 1",
        "seed = 1", *([f'layout = "{layout_name}"'] if layout_name else []), ""]))
    out = tmp_path / f"out-{layout_name or 'default'}"
    cp = subprocess.run([TESTBED, "run", str(camp), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=1200, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return out


def rows(out: Path) -> list[dict]:
    """Every connection row with its trial's client (both trials ok asserted)."""
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    try:
        trials = {r["client"]: dict(r) for r in db.execute("SELECT * FROM trials")}
        conns = [dict(r) for r in db.execute(
            "SELECT c.*, t.client FROM connections c JOIN trials t USING (trial_id)")]
    finally:
        db.close()
    assert set(trials) == {"chromium", "firefox"}
    assert all(t["status"] == "ok" for t in trials.values()), trials
    return conns


def test_recorded_layout_pools_the_shared_hosts_onto_one_connection(tmp_path):
    conns = rows(run(tmp_path, None))
    chromium = [c for c in conns if c["client"] == "chromium"]
    assert chromium and all(c["transport"] == "quic" for c in chromium)
    shared = [c for c in chromium if c["server_ip"] == SHARED_IP]
    assert len(shared) == 1, chromium
    assert shared[0]["origin"] == ",".join(SHARED)


def test_split_layout_opens_one_quic_connection_per_host(tmp_path):
    out = run(tmp_path, "split")
    conns = rows(out)
    served = layout.apply(recording.load(SITE), "split")
    address = {g.hosts[0]: g.ip for g in layout.addresses(served)}
    assert len(address) == len(layout.addresses(served)) == 4
    for client in ("chromium", "firefox"):
        mine = [c for c in conns if c["client"] == client]
        assert mine and all(c["transport"] == "quic" for c in mine), (client, mine)
        # every connection serves one host, at that host's own address
        assert all(c["origin"] in address and c["server_ip"] == address[c["origin"]]
                   for c in mine), (client, mine)
        per_host = Counter(c["origin"] for c in mine)
        assert per_host == Counter(dict.fromkeys(address, 1)), (client, mine)
        assert SHARED_IP not in {c["server_ip"] for c in mine}
        assert {address[h] for h in SHARED} == {"10.254.0.1", "10.254.0.2"}
    # the manifest says how the trials were served
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["campaign"]["settings"]["layout"] == "split"
    assert doc["recordings"][SITE]["addresses"] == 4
