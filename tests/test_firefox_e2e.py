"""End to end: the smoke campaign in both clients through the real replay, shells,
Chromium, Firefox, geckodriver and Browsertime; every trial ok, every Firefox trial's
protocol proven for every origin from Firefox's own HTTP log, its HAR and the wire;
the report compares the settings within each client."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from needs import need, need_root

ROOT = Path(__file__).resolve().parent.parent
TESTBED = [str(ROOT / ".venv/bin/testbed")]

pytestmark = pytest.mark.e2e


def needs_parts():
    from testbed.host import firefox
    from testbed.measure import browsertime
    need(browsertime.missing())
    need(firefox.missing())
    need_root()


def test_smoke_campaign_in_both_clients_all_ok_with_firefoxs_protocol_proven(tmp_path):
    needs_parts()
    from testbed.formats import recording as rec
    from testbed.replay.matching import normalise_host
    from testbed.validate import firefox as proof

    smoke = (ROOT / "profiles/campaigns/smoke.toml").read_text()
    text = "\n".join(line for line in smoke.splitlines() if not line.startswith("client"))
    campaign = tmp_path / "smoke-clients.toml"
    campaign.write_text(text + '\nclient = ["chromium", "firefox"]\n'
                        'capture = ["pcap", "mozlog"]\n')
    out = tmp_path / "out"
    cp = subprocess.run([*TESTBED, "run", str(campaign), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=1200, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM trials ORDER BY trial_id")]
    db.close()
    assert len(rows) == 10
    assert sorted((r["client"], r["protocol"]) for r in rows) == sorted(
        (c, p) for c in ("chromium", "firefox")
        for p in ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"))
    for r in rows:
        assert (r["status"], r["reason"]) == ("ok", None), r
        assert r["trial_id"].endswith("+firefox") == (r["client"] == "firefox")
        assert r["plt_ms"] > 0 and r["fcp_ms"] > 0 and r["fvc_ms"] > 0, r
    recording = rec.load("local-news")
    origins = {f"{normalise_host(o.host)}:{o.port}": o.ip for o in recording.origins}
    for r in rows:
        if r["client"] != "firefox":
            continue
        proven = proof.trial_rows(out, r, origins)
        assert [x for x in proven if x.ok is False] == [], (r["trial_id"], proven)
        logged = [x for x in proven if x.name.endswith("Firefox's log")]
        assert len(logged) == len(origins)
    report = subprocess.run([*TESTBED, "report", str(out), "--out", str(tmp_path / "report")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert report.returncode == 0, report.stderr[-3000:]
    for client in ("chromium", "firefox"):
        assert (tmp_path / "report" / client / "index.html").is_file()
