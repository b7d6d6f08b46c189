"""Diagnostics beside the effects (analysis.statistics.diagnostics), the planner
(analysis.statistics.planner) and the 1-RTT table's intervals (analysis.statistics.design.with_intervals), on synthetic
campaigns with a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import synthetic
from analysis.statistics import planner
from analysis.statistics.design import with_intervals
from analysis.statistics.diagnostics import group_checks, position_checks, variance_checks
from analysis.statistics.stats import compare, summarize


def small(seed=0, **kw):
    return synthetic.campaign(sites=10, networks=["dsl"], settings=["tcp", "quic"], runs=10,
                              seed=seed, **kw)


def test_a_drift_over_the_campaign_is_found_and_none_is_not_invented():
    t = small(failure_rate=0.0)
    assert (group_checks(t)["drift_p"] > 0.01).all()
    hours = (pd.to_datetime(t["started_at"]) - pd.to_datetime(t["started_at"]).min())
    t["plt_ms"] *= 1 + 0.1 * hours.dt.total_seconds() / hours.dt.total_seconds().max()
    g = group_checks(t)
    assert (g["drift_p"] < 1e-3).all() and (g["drift_per_hour"] > 0).all(), g


def shuffled_blocks(t: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The settings of each site x run block in a random order (as testbed's plan
    shuffles them): started_at = the block's start + 30 s x its place."""
    rng = np.random.default_rng(seed)
    t = t.sample(frac=1, random_state=rng).reset_index(drop=True)
    place = t.groupby(["site", "network", "run"]).cumcount()
    block = t.groupby(["site", "network", "run"]).ngroup()
    start = pd.Timestamp("2024-05-01T08:00:00Z") + pd.to_timedelta(block * 120 + place * 30,
                                                                    unit="s")
    return t.assign(started_at=start.dt.strftime("%Y-%m-%dT%H:%M:%SZ"))


def test_the_first_load_of_each_block_slower_is_found():
    # with a fixed order of the settings, position and setting are one: shuffled here
    t = shuffled_blocks(small(failure_rate=0.0))
    assert position_checks(t)["p"].iloc[0] > 0.01
    first = pd.to_datetime(t["started_at"]).groupby([t["site"], t["run"]]).rank(
        method="first") == 1
    t.loc[first, "plt_ms"] *= 1.1
    p = position_checks(t).iloc[0]
    assert p["p"] < 1e-6 and p["first"] > 0.03 and p["positions"] == 2


def test_unequal_variances_failures_and_outliers():
    t = small(seed=2, failure_rate=0.1)
    quic = t["setting"] == "quic"
    mean = t.groupby(["site", "setting"])["plt_ms"].transform("mean")
    t.loc[quic, "plt_ms"] = mean[quic] + 3 * (t.loc[quic, "plt_ms"] - mean[quic])
    v = variance_checks(t, [("quic", "tcp")]).iloc[0]
    assert v["p"] < 1e-4 and v["sd_ratio"] > 2
    g = group_checks(t).set_index("setting")
    assert g["failed"].sum() == int((t["status"] != "ok").sum())
    assert (g["failed_share"] > 0).all() and (g["outlier_share"] < 0.05).all()
    t.loc[t.index[t["status"] == "ok"][:5], "plt_ms"] *= 3
    assert group_checks(t)["outlier_share"].sum() > 0


def trials_of(values: np.ndarray, rtt: float = 24.0) -> pd.DataFrame:
    m = synthetic.blocked_measurements(values, ("quic", "tcp"))
    return m.rename(columns={"value": "plt_ms"}).drop(columns="metric").assign(
        status="ok", rtt_ms=rtt)


def test_a_true_3_percent_effect_is_found_as_often_as_the_planner_predicts():
    alpha, runs = 0.05, 20
    pilot = synthetic.blocked(1, sites=50, runs=runs, effects=(0.0, 0.0), site_sd=0.0,
                              block_sd=0.0, noise_sd=0.05, seed=30)[0]
    spread = planner.pilot_spread(trials_of(pilot)).iloc[0]
    predicted = planner.power(runs, np.log(1.03), spread["sd_log"], alpha)
    assert 0.3 < predicted < 0.9  # a case where the number can be wrong either way
    v = synthetic.blocked(1, sites=1000, runs=runs, effects=(np.log(0.97), 0.0), site_sd=0.0,
                          block_sd=0.0, noise_sd=0.05, seed=31)[0]
    found = compare(synthetic.blocked_measurements(v, ("quic", "tcp")), [("quic", "tcp")],
                    alpha)
    rate = (found["outcome"] == "win").mean()
    assert abs(rate - predicted) <= 0.05, (rate, predicted)
    n = planner.runs_needed(np.log(1.03), spread["sd_log"], alpha)
    assert planner.power(int(n), np.log(1.03), spread["sd_log"], alpha) >= 0.8
    assert planner.power(int(n) - 1, np.log(1.03), spread["sd_log"], alpha) < 0.8


def test_the_plan_for_one_rtt_per_network():
    t = synthetic.campaign(sites=6, networks=["dsl", "da2gc"], settings=["tcp", "quic"],
                           runs=8, seed=4)
    p = planner.plan(t, alpha=0.01, percent=0.05, ms=100).set_index("network")
    assert list(p.index) == ["dsl", "da2gc"]
    assert p.loc["dsl", "rtt_ms"] == 24 and p.loc["da2gc", "rtt_ms"] == 262
    for net in p.index:
        r = p.loc[net]
        assert r["runs_rtt"] == planner.runs_needed(r["rtt_ms"], r["sd_ms"], 0.01)
        assert r["runs_ms"] == planner.runs_needed(100, r["sd_ms"], 0.01)
    assert p.attrs["power"] == 0.8


def test_the_1rtt_table_interval_is_welchs_and_the_one_sided_bound_decides():
    rows = []
    rng = np.random.default_rng(5)
    for protocol, mean, sd in (("tcp-plus", 1100.0, 40.0), ("quic", 1080.0, 10.0)):
        for run, v in enumerate(rng.normal(mean, sd, 12)):
            rows.append({"site": "s", "network": "dsl", "setting": protocol, "run": run,
                         "metric": "plt", "value": v})
    meas = pd.DataFrame(rows)
    summary = summarize(meas)
    a, b = (meas.loc[meas["setting"] == p, "value"] for p in ("tcp-plus", "quic"))
    design = pd.DataFrame([{"network": "dsl", "rtt_ms": 24.0, "site": "s", "tcp": "tcp-plus",
                            "quic": "quic", "metric": "plt",
                            "diff_ms": a.mean() - 24 - b.mean(),
                            "diff_rtt": (a.mean() - 24 - b.mean()) / 24}])
    out = with_intervals(design, summary).iloc[0]
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert out["diff_rtt_low"] == pytest.approx((ci.low - 24) / 24)
    assert out["diff_rtt_high"] == pytest.approx((ci.high - 24) / 24)
    upper = stats.ttest_ind(a, b, equal_var=False, alternative="less").confidence_interval(
        0.95).high
    assert out["lead_rtt_upper"] == pytest.approx(upper / 24)
    assert out["lead_under_1rtt"] == (upper < 24)
