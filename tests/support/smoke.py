"""One real campaign that several end-to-end tests read: fixture `smoke_campaign`.

The smoke campaign (profiles/campaigns/smoke.toml: the bundled site under DSL, the five
settings, one run) in Chromium and in Firefox, with every capture and the videos kept.
It runs once per pytest session, the first time a test asks for it; each test that
reads it proves its own property from the stored trials:
- tests/e2e/test_smoke_campaign.py: every trial ok with every metric, the protocol
  proven per request (Chromium's log) and per origin (Firefox's log, HAR, wire);
- tests/e2e/test_telemetry_e2e.py: connection rows, initial windows, captures;
- tests/e2e/test_trial_e2e.py: the trial page's waterfall and filmstrip;
- tests/e2e/test_layout_e2e.py: the recorded layout's QUIC connections (one for the
  two hosts that share an address), against a split campaign of its own;
- tests/e2e/test_documented_campaigns_e2e.py: the report's BBR section (fixture
  `smoke_report`, the campaign's report, rendered once).
A test that needs another campaign (another network, a kill, a hang) runs its own.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.needs import need_firefox, needs_parts
from support.paths import ROOT, TESTBED

CLIENTS = ("chromium", "firefox")
CAPTURES = ("pcap", "keylog", "netlog", "qlog", "mozlog")
SETTINGS = ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr")


def campaign_text() -> str:
    """smoke.toml with both clients, every capture and the videos kept."""
    smoke = (ROOT / "profiles/campaigns/smoke.toml").read_text()
    kept = [line for line in smoke.splitlines()
            if not line.startswith(("client", "capture", "keep_video"))]
    return "\n".join([*kept, f"client = {json.dumps(list(CLIENTS))}",
                      f"capture = {json.dumps(list(CAPTURES))}", "keep_video = true", ""])


@pytest.fixture(scope="session")
def smoke_campaign(tmp_path_factory) -> Path:
    """The results folder of the shared smoke campaign (run once, exit 0 asserted)."""
    needs_parts()
    need_firefox()
    where = tmp_path_factory.mktemp("smoke")
    campaign = where / "smoke-shared.toml"
    campaign.write_text(campaign_text())
    out = where / "out"
    cp = subprocess.run([TESTBED, "run", str(campaign), "--out", str(out)], cwd=ROOT,
                        capture_output=True, text=True, timeout=1800, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def smoke_report(smoke_campaign, tmp_path_factory) -> Path:
    """`testbed report` of the shared smoke campaign (one report per client: the
    folder's chromium/ and firefox/), rendered once; exit 0 asserted."""
    out = tmp_path_factory.mktemp("smoke-report") / "report"
    cp = subprocess.run([TESTBED, "report", str(smoke_campaign), "--out", str(out)],
                        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return out
