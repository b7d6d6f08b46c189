"""End to end: a replay's layout decides how many QUIC connections a page opens
(testbed.replay.layout, docs/layout.md).

The bundled site local-news serves www.local-news.test and static.local-news.test
from one recorded address with one certificate. A campaign of it over QUIC (DSL, one
run, Chromium and Firefox) in the default layout has Chromium pool the two names onto
one connection: the connections table (filled from the QUIC servers' figures) has one
row for that address, whose origin names both. The same campaign with
`layout = "split"` serves every host on an address of its own with a certificate of
its own: each browser opens one QUIC connection for each of the two hosts, at the
host's new address, none to the shared one, and at least one to each other host
(both browsers may keep a host's anonymous CORS requests on a connection of their
own, so img.newscdn.test and api.local-news.test have one or two in either layout).
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from support.needs import need_firefox, needs_parts
from support.paths import ROOT, TESTBED

from results_contract.load import load_manifest

pytestmark = pytest.mark.e2e

SITE = "local-news"
SHARED_IP = "10.78.0.1"
SHARED = ("static.local-news.test", "www.local-news.test")
SPLIT = {"static.local-news.test": "10.254.0.1", "www.local-news.test": "10.254.0.2",
         "img.newscdn.test": "10.78.0.2", "api.local-news.test": "10.78.0.3"}
"""Each host's address in the split layout (docs/layout.md: the shared address's hosts
get fresh private ones in name order; the others keep theirs)."""


def run(tmp_path: Path, layout_name: str) -> Path:
    """The results folder of a QUIC campaign of the site in `layout_name` ("default":
    the key left out), exit 0 asserted."""
    needs_parts()
    need_firefox()
    camp = tmp_path / f"{layout_name}.toml"
    camp.write_text("\n".join([
        f'sites = ["{SITE}"]', 'networks = ["dsl"]', 'protocols = ["quic"]',
        'client = ["chromium", "firefox"]', "runs = 1", "timeout_s = 60", "retries = 1",
        "seed = 1", *([f'layout = "{layout_name}"'] if layout_name != "default" else []),
        ""]))
    out = tmp_path / f"out-{layout_name}"
    cp = subprocess.run([TESTBED, "run", str(camp), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=1200, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return out


def rows(out: Path) -> list[dict]:
    """Every connection row with its trial's client (both trials ok asserted)."""
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    try:
        trials = {r["client"]: dict(r) for r in db.execute(
            "SELECT * FROM trials WHERE setting = 'quic'")}
        conns = [dict(r) for r in db.execute(
            "SELECT c.*, t.client FROM connections c JOIN trials t USING (trial_id) "
            "WHERE t.setting = 'quic'")]
    finally:
        db.close()
    assert set(trials) == {"chromium", "firefox"}
    assert all(t["status"] == "ok" for t in trials.values()), trials
    return conns


@pytest.fixture(scope="module")
def outs(smoke_campaign, tmp_path_factory) -> dict[str, Path]:
    """Each layout's results folder: "default" (the key left out) is the shared smoke
    campaign's (local-news, DSL, QUIC among its settings, both clients), "split" run
    here once."""
    where = tmp_path_factory.mktemp("layout")
    return {"default": smoke_campaign, "split": run(where, "split")}


@pytest.fixture(scope="module")
def connections(outs) -> dict[str, list[dict]]:
    return {name: rows(out) for name, out in outs.items()}


def by_host(conns: list[dict], client: str) -> Counter:
    return Counter(c["origin"] for c in conns if c["client"] == client)


def test_recorded_layout_pools_the_shared_hosts_onto_one_connection(connections):
    for client in ("chromium", "firefox"):
        mine = [c for c in connections["default"] if c["client"] == client]
        assert mine and all(c["transport"] == "quic" for c in mine), (client, mine)
        shared = [c for c in mine if c["server_ip"] == SHARED_IP]
        assert len(shared) == 1, (client, mine)
        assert shared[0]["origin"] == ",".join(SHARED)


def test_split_layout_opens_one_quic_connection_per_host(connections):
    """The shared hosts get one connection each; every other host at least one (a
    browser may keep a host's anonymous CORS requests, a font or a fetch, on a
    connection of their own, in either layout)."""
    address = SPLIT  # written out, not computed: the test must not share the code's slip
    for client in ("chromium", "firefox"):
        mine = [c for c in connections["split"] if c["client"] == client]
        assert mine and all(c["transport"] == "quic" for c in mine), (client, mine)
        # every connection serves one host, at that host's own address
        assert all(c["origin"] in address and c["server_ip"] == address[c["origin"]]
                   for c in mine), (client, mine)
        assert SHARED_IP not in {c["server_ip"] for c in mine}
        split = by_host(mine, client)
        assert {h: split[h] for h in SHARED} == dict.fromkeys(SHARED, 1), (client, mine)
        assert set(split) == set(address), (client, mine)


def test_the_manifest_records_the_layout(outs):
    for name, out in outs.items():
        doc = load_manifest(out)  # the file leaves a default out; the model reads it in
        assert doc is not None and doc.campaign is not None
        split = name == "split"
        assert doc.campaign.settings.layout == ("split" if split else "recorded")
        assert doc.recordings[SITE].addresses == (4 if split else 3)
