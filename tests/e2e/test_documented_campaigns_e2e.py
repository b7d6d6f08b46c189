"""End to end: the campaign files the docs tell a researcher to run, run.

smoke.toml runs (both clients) in test_smoke_campaign.py, in-flight.toml and warm.toml in their own
tests. Here the two others a page shows as commands: bbr.toml (docs/campaigns.md,
docs/analysis-and-statistics.md) narrowed to one site, one network and one run plans
the four trials it names, the very trials the shared smoke campaign measures (its
Chromium half: TCP+, TCP+BBR, QUIC, QUIC+BBR on local-news under DSL), whose report
has the section the docs point to; and corpus-check.toml
(docs/recording-and-corpus.md) over a recordings folder whose `corpus/paper/` and
`corpus/today/` hold the bundled site, so it runs without `make corpus` as CI does; its rule (no replay miss
allowed) is what decides each trial.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.needs import needs_parts
from support.paths import ROOT, TESTBED

pytestmark = pytest.mark.e2e


def statuses(out: Path) -> dict[str, str]:
    db = sqlite3.connect(out / "trials.sqlite")
    try:
        return dict(db.execute("SELECT trial_id, status FROM trials"))
    finally:
        db.close()


def test_the_bbr_campaign_plans_what_the_smoke_campaign_measured_and_has_the_bbr_section(
        smoke_campaign, smoke_report):
    needs_parts()
    cp = subprocess.run(check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
                        args=[TESTBED, "run", "profiles/campaigns/bbr.toml", "--dry-run",
                              "--json", "--site", "local-news", "--network", "dsl",
                              "--runs", "1"])
    assert cp.returncode == 0, cp.stderr[-3000:]
    planned = sorted(json.loads(cp.stdout)["order"])
    want = [f"local-news+dsl+{p}+0" for p in sorted(("tcp-plus", "tcp-plus-bbr", "quic",
                                                      "quic-bbr"))]
    assert planned == want, planned
    measured = statuses(smoke_campaign)
    assert {t: measured[t] for t in want} == dict.fromkeys(want, "ok"), measured
    html = (smoke_report / "chromium" / "index.html").read_text()
    assert '<h2 id="bbr">Where BBR beats CUBIC</h2>' in html


def test_the_corpus_check_campaign_runs_over_a_corpus_folder(tmp_path, request):
    needs_parts()
    # the servers run as the testbed user: the copy in a world-readable folder
    shared = Path(tempfile.mkdtemp(prefix="tb-corpus-check-"))
    shared.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    recordings = shared / "recordings"
    # the campaign names both sets (paper/*, today/*): each holds a copy of the bundled site
    for name in ("paper", "today"):
        shutil.copytree(ROOT / "recordings" / "local-news",
                        recordings / "corpus" / name / "local-news")
    for d in (recordings, recordings / "corpus", recordings / "corpus" / "paper",
              recordings / "corpus" / "today"):
        d.chmod(0o755)
    out = tmp_path / "check"
    cp = subprocess.run(check=False, cwd=ROOT, capture_output=True, text=True, timeout=900,
                        args=[TESTBED, "--recordings", str(recordings), "run",
                              "profiles/campaigns/corpus-check.toml", "--out", str(out),
                              "--site", "local-news"])
    assert cp.returncode == 0, cp.stderr[-3000:]
    db = sqlite3.connect(out / "trials.sqlite")
    try:
        got = {r[0]: r[1:] for r in db.execute(
            "SELECT trial_id, status, reason, misses, requests, bytes FROM trials")}
    finally:
        db.close()
    assert sorted(got) == ["local-news+none+quic+0", "local-news+none+tcp+0"]
    # max_misses = 0 in force: a trial is ok with no replay miss, or failed for its misses;
    # either way the page was served from the corpus folder (requests answered, bytes sent)
    for trial, (status, reason, misses, requests, sent) in got.items():
        assert (status, reason, misses) == ("ok", None, 0) or (
            status == "failed" and reason == "replay-misses" and misses > 0), (trial, got)
        assert requests is not None and requests > misses and sent, (trial, got)
