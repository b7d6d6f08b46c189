"""`testbed run --dry-run` (plan and estimate, no root, nothing started) and the
one-line-per-trial log used when the output is not a terminal."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from support.paths import ROOT

from testbed.campaign.plan import estimate
from testbed.campaign.run.progress import TrialLines
from testbed.campaign.store.store import Row
from testbed.cli import cli
from testbed.console import duration


def test_dry_run_prints_the_plan_and_an_estimate(tmp_path, monkeypatch, bundled_only):
    # paper.toml's sites are paper/*: here one recording in the corpus's paper set.
    shutil.copytree(ROOT / "recordings" / "local-news",
                    tmp_path / "recs" / "corpus" / "paper" / "local-news")
    monkeypatch.setenv("TESTBED_RECORDINGS", str(tmp_path / "recs"))
    done = CliRunner().invoke(cli, ["run", "profiles/campaigns/paper.toml", "--dry-run",
                                    "--out", str(tmp_path / "res")])
    assert done.exit_code == 0, done.output
    assert "trials: 1 x 4 x 5 x 31 = 620" in done.output
    assert "local-news+" in done.output and "estimated duration:" in done.output
    assert not (tmp_path / "res").exists()  # nothing started, nothing written


def test_estimate_model_by_hand():
    page = estimate.Page(bytes=965_500, requests=30, origins=1)  # 1 MB on the wire
    link = estimate.Link(rtt_ms=100, downlink_mbit=8, loss_percent=0)
    tcp, quic = estimate.transport("tcp", "cubic"), estimate.transport("quic", "bbr2")
    # TCP: (2 + 4) RTT = 0.6 s, + 1 MB at 8 Mbit/s = 1 s
    assert estimate.load_s(page, link, tcp) == pytest.approx(1.6, abs=1e-3)
    assert estimate.load_s(page, link, quic) == pytest.approx(1.5, abs=1e-3)
    # random loss: BBR loses only the lost share of the rate ...
    lossy = estimate.Link(rtt_ms=100, downlink_mbit=8, loss_percent=4)
    assert estimate.load_s(page, lossy, quic) == pytest.approx(0.5 + 1 / 0.96, abs=1e-3)
    # ... CUBIC is held to Mathis's rate: 2.44 x 1448 B / 100 ms / sqrt(0.04) = 1.41 Mbit/s
    mathis = 2.44 * 1448 * 8 / 0.1 / 0.2
    assert estimate.load_s(page, lossy, tcp) == pytest.approx(0.6 + 965_500 * 8 / mathis)
    unshaped = estimate.Link(rtt_ms=0, downlink_mbit=None, loss_percent=0)
    assert estimate.load_s(page, unshaped, tcp) == 0
    total = estimate.campaign_s({"s": page}, {"n": link}, {"tcp": tcp, "quic": quic}, runs=3)
    assert total == pytest.approx(3 * (2 * estimate.FIXED_S + (1 + estimate.LOAD_SHARE) * (1.6 + 1.5)),
                                  abs=1e-2)
    assert duration(3 * 3600 + 65) == "3 h 01 min"
    assert duration(75) == "1 min 15 s"
    assert duration(2 * 86400 + 4 * 3600 + 59) == "2 d 4 h 00 min"


def test_estimate_is_within_30_percent_of_the_measured_campaign(tmp_path, monkeypatch,
                                                               bundled_only):
    """The model against the campaign it was fitted on (estimate.MEASURED: paper.toml with
    1 run over local-news alone, each network's 5 trials' wall times summed): every
    network and the total within +-30 %. Before the loss and congestion control terms
    the model said 4 min 23 s for 9 min 12 s measured (mss: 72 s for 285 s)."""
    from testbed.campaign.plan import config

    # paper.toml's sites are paper/*; it was measured when local-news was its one site
    shutil.copytree(ROOT / "recordings" / "local-news",
                    tmp_path / "recs" / "corpus" / "paper" / "local-news")
    monkeypatch.setenv("TESTBED_RECORDINGS", str(tmp_path / "recs"))

    measured = estimate.MEASURED["seconds"]
    campaign = config.load(estimate.MEASURED["campaign"])
    lines = estimate.plan_text(campaign, estimate.MEASURED["runs"])
    got = {}
    for line in lines:
        name, _, text = line.strip().partition(": ")
        if name in measured:
            minutes, seconds = text.split(" (")[0].replace(" min", "").replace(" s", "").split()
            got[name] = 60 * int(minutes) + int(seconds)
    assert set(got) == set(measured)
    for name, secs in measured.items():
        assert abs(got[name] / secs - 1) <= 0.30, (name, got[name], secs)
    assert abs(sum(got.values()) / sum(measured.values()) - 1) <= 0.30
    assert lines[-1].startswith("  based on: per trial 2.5 s + 1.15 x the page load")


def row(status, plt):
    return Row(trial_id="s+dsl+tcp+0", campaign="c", site="s", network="dsl", setting="tcp",
               run=0, status=status, reason=None if status == "ok" else "timeout", attempt=1,
               started_at="", wall_s=1.0, plt_ms=plt, fvc_ms=None, lvc_ms=None, vc85_ms=None,
               si_ms=None, ttfb_ms=None, requests=None, bytes=None, misses=None,
               http_versions=None, rtt_ms=24.0, origins=1)


def test_trial_lines_give_id_status_plt_and_eta():
    now = iter([0.0, 10.0, 20.0])
    lines = TrialLines(4, clock=lambda: next(now))
    assert lines.line(row("ok", 1234.4)) == "trial 1/4 s+dsl+tcp+0 ok PLT 1234 ms ETA 0 min 30 s"
    assert lines.line(row("failed", None)) == ("trial 2/4 s+dsl+tcp+0 failed (timeout) PLT – "
                                               "ETA 0 min 20 s")


def test_expected_runs_of_adaptive_groups():
    """The simulated stopping: a quiet network stops at the minimum, a noisy one at the
    maximum, more settings need more runs, and a precision in ms for a fast page."""
    quiet = estimate.expected_runs(0.005, 5, 10, 31, 2.0)
    assert quiet == 10
    assert estimate.expected_runs(0.5, 5, 10, 31, 2.0) == 31
    one, five = (estimate.expected_runs(0.037, k, 10, 31, 2.0) for k in (1, 5))
    assert 10 < one < five < 31
    # ±2 % of 1000 ms is 20 ms: the same rule in ms
    assert estimate.expected_runs(0.037, 5, 10, 31, None, ms=20, mean_ms=1000) == \
        pytest.approx(five, abs=1.0)


def test_dry_run_says_how_far_the_estimate_was_off(tmp_path, monkeypatch, bundled_only):
    """With a store, each network's stored wall time against the model's for the same
    trials, and the elapsed time from the first start to the last end; adaptive runs show
    the expected runs with the noise's source (here measured from the store)."""
    import datetime as dt

    from results_contract import schema
    from testbed.campaign.plan import config
    from testbed.campaign.store.store import Store

    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["dsl", "mss"]\nprotocols = ["tcp", "quic"]\n'
        'runs = { min = 3, max = 9, precision = "2%" }\n')
    c = config.load(tmp_path / "c.toml")
    model = estimate.plan(c)
    per_trial = {x["name"]: x["trial_s"] for x in model["per_network"]}
    assert {x["name"]: x["video_fps"] for x in model["per_network"]} == {"dsl": 60, "mss": 10}
    assert [x["lanes"] for x in model["per_network"]] == [1, 1]
    t0 = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
    made_up = {schema.TEXT_KIND: "x", schema.INTEGER_KIND: 1, schema.REAL_KIND: 1.0}
    clock = 0.0
    with Store(tmp_path / "out" / "trials.sqlite") as store:
        for run in range(4):
            for network, factor in (("dsl", 1.0), ("mss", 2.0)):
                for k, protocol in enumerate(("tcp", "quic")):
                    row = {col.name: made_up[col.kind] for col in schema.TRIALS if col.required}
                    wall = factor * per_trial[network]  # dsl as modelled, mss twice as long
                    row.update(trial_id=f"local-news+{network}+{protocol}+{run}",
                               site="local-news", network=network, setting=protocol, run=run,
                               status="ok", wall_s=wall,
                               plt_ms=1000 * (1 + 0.03 * ((run + k) % 3 - 1)),
                               started_at=(t0 + dt.timedelta(seconds=clock)).isoformat())
                    clock += wall
                    store.db.execute(f"INSERT INTO trials ({', '.join(row)}) VALUES "
                                     f"({', '.join('?' * len(row))})", list(row.values()))
    done = CliRunner().invoke(cli, ["run", str(tmp_path / "c.toml"), "--dry-run",
                                    "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "measured so far" in text
    assert "dsl: 8 trials took" in text and "+0 % against the model" in text
    assert "mss: 8 trials took" in text and "+100 % against the model" in text
    assert "measured: this campaign's stored trials" in text
    # trials back to back: elapsed = the stored wall times (dsl as modelled, mss twice)
    d, m = per_trial["dsl"], per_trial["mss"]
    assert "elapsed from the first start to the last end" in text
    assert f"{100 * ((d + 2 * m) / (d + m) - 1):+.0f} % against the model" in text
