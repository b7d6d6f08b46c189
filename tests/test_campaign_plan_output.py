"""`testbed run --dry-run` (plan and estimate, no root, nothing started) and the
one-line-per-trial log used when the output is not a terminal."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from testbed.campaign import estimate
from testbed.campaign.progress import TrialLines
from testbed.campaign.store import Row
from testbed.cli import cli


def test_dry_run_prints_the_plan_and_an_estimate(tmp_path):
    done = CliRunner().invoke(cli, ["run", "profiles/campaigns/paper.toml", "--dry-run",
                                    "--out", str(tmp_path / "res")])
    assert done.exit_code == 0, done.output
    assert "trials: 1 x 4 x 5 x 31 = 620" in done.output
    assert "local-news+" in done.output and "estimated duration:" in done.output
    assert not (tmp_path / "res").exists()  # nothing started, nothing written


def test_estimate_model_by_hand():
    page = estimate.Page(bytes=1_000_000, requests=30, origins=1)
    link = estimate.Link(rtt_ms=100, downlink_mbit=8, loss_percent=0)
    # TCP: (2 + 4) RTT = 0.6 s, + 1 MB at 8 Mbit/s = 1 s
    assert estimate.load_s(page, link, quic=False) == pytest.approx(1.6)
    assert estimate.load_s(page, link, quic=True) == pytest.approx(1.5)
    lossy = estimate.Link(rtt_ms=0, downlink_mbit=8, loss_percent=50)
    assert estimate.load_s(page, lossy, quic=True) == pytest.approx(2.0)
    total = estimate.campaign_s({"s": page}, {"n": link}, {"tcp": False, "quic": True}, runs=3)
    assert total == pytest.approx(3 * (2 * estimate.FIXED_S + 1.6 + 1.5))
    assert estimate.duration(3 * 3600 + 65) == "3 h 01 min"
    assert estimate.duration(75) == "1 min 15 s"


def row(status, plt):
    return Row(trial_id="s+dsl+tcp+0", campaign="c", site="s", network="dsl", protocol="tcp",
               run=0, status=status, reason=None if status == "ok" else "timeout", attempt=1,
               started_at="", wall_s=1.0, plt_ms=plt, fvc_ms=None, lvc_ms=None, vc85_ms=None,
               si_ms=None, ttfb_ms=None, requests=None, bytes=None, misses=None,
               protocols=None, rtt_ms=24.0, origins=1)


def test_trial_lines_give_id_status_plt_and_eta():
    now = iter([0.0, 10.0, 20.0])
    lines = TrialLines(4, clock=lambda: next(now))
    assert lines.line(row("ok", 1234.4)) == "trial 1/4 s+dsl+tcp+0 ok PLT 1234 ms ETA 0:00:30"
    assert lines.line(row("failed", None)) == ("trial 2/4 s+dsl+tcp+0 failed (timeout) PLT – "
                                               "ETA 0:00:20")
