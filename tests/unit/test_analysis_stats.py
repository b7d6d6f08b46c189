"""Statistics with known answers: hand-computed cases and synthetic campaigns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import (
    compare,
    default_pairs,
    measurements,
    relative_difference,
    relative_summary,
    summarize,
    synthetic,
    win_tie_loss,
)

RUNS = 31


def rows(site, network, protocol, values, **extra):
    return [{"site": site, "network": network, "setting": protocol, "run": i, "plt_ms": v,
             **extra} for i, v in enumerate(values)]


def lognormal(rng, mean, cv, size):
    """Log-normal draws with the given mean and coefficient of variation."""
    sigma = np.sqrt(np.log1p(cv**2))
    return rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, size)


def two_settings(seed, sites, faster, cv, base_ms=2000.0):
    """`sites` independent sites: tcp with mean base_ms, quic `faster` (share) faster."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(sites):
        out += rows(f"s{s:03d}", "dsl", "tcp", lognormal(rng, base_ms, cv, RUNS))
        out += rows(f"s{s:03d}", "dsl", "quic", lognormal(rng, base_ms * (1 - faster), cv, RUNS))
    return synthetic.trials(out)


def outcomes(trials):
    comparisons = compare(measurements(trials, ["plt"]), [("quic", "tcp")])
    return comparisons["outcome"].value_counts().reindex(
        ["win", "tie", "loss", "untested"], fill_value=0)


def test_summary_by_hand():
    trials = synthetic.trials(rows("a", "dsl", "tcp", [100, 110, 120, 130]))
    s = summarize(measurements(trials, ["plt"]))
    assert len(s) == 1
    r = s.iloc[0]
    std = np.sqrt(500 / 3)  # deviations -15, -5, 5, 15; ddof = 1
    half = 3.182446305284263 * std / 2  # t(0.975, 3) from a table, / sqrt(4)
    assert (r["n"], r["mean"], r["median"]) == (4, 115, 115)
    assert r["std"] == pytest.approx(std)
    assert r["ci_low"] == pytest.approx(115 - half) and r["ci_high"] == pytest.approx(115 + half)


def test_failed_trials_and_missing_metrics_stay_out():
    trials = synthetic.trials(
        rows("a", "dsl", "tcp", [100, 200])
        + [{"site": "a", "network": "dsl", "setting": "tcp", "run": 2, "plt_ms": 90000.0,
            "status": "failed", "reason": "timeout"},
           {"site": "a", "network": "dsl", "setting": "tcp", "run": 3, "plt_ms": None}])
    s = summarize(measurements(trials, ["plt"]))
    assert s.iloc[0]["n"] == 2 and s.iloc[0]["mean"] == 150
    assert np.isnan(summarize(measurements(trials.iloc[:1], ["plt"])).iloc[0]["ci_low"])


def test_relative_difference_by_hand():
    trials = synthetic.trials(
        rows("a", "dsl", "tcp", [990, 1010]) + rows("a", "dsl", "quic", [900, 900])
        + rows("b", "dsl", "tcp", [2000, 2000]) + rows("b", "dsl", "quic", [2050, 2150])
        + rows("c", "dsl", "quic", [500, 500]))  # no baseline: left out
    rel = relative_difference(summarize(measurements(trials, ["plt"])), "tcp")
    assert rel.set_index("site")["rel"].to_dict() == pytest.approx({"a": -0.1, "b": 0.05})
    assert set(rel["setting"]) == {"quic"}
    rs = relative_summary(rel).iloc[0]
    assert (rs["sites"], rs["median"], rs["faster"]) == (2, pytest.approx(-0.025), 0.5)
    with pytest.raises(ValueError, match="baseline setting 'tcp-plus'"):
        relative_difference(summarize(measurements(trials, ["plt"])), "tcp-plus")


def test_five_percent_faster_wins_at_31_runs():
    counts = outcomes(two_settings(seed=1, sites=1, faster=0.05, cv=0.05))
    assert counts["win"] == 1


@pytest.mark.parametrize("cv", [0.05, 0.10])
def test_win_rate_matches_the_anova_power(cv):
    """5 % faster over 200 repetitions: wins as often as the F test's power says
    (about 91 % at CV 5 %, 27 % at CV 10 %), and never a loss."""
    counts = outcomes(two_settings(seed=2, sites=200, faster=0.05, cv=cv))
    sd = cv * 2000 * 0.975  # pooled, roughly
    power = stats.ncf.sf(stats.f.isf(0.01, 1, 2 * RUNS - 2), 1, 2 * RUNS - 2,
                         RUNS / 2 * (0.05 * 2000 / sd) ** 2)
    assert counts["loss"] == 0
    assert abs(counts["win"] / 200 - power) < 0.1, (counts.to_dict(), power)
    if cv == 0.05:
        assert counts["win"] >= 170


def test_identical_distributions_tie_in_at_least_98_percent():
    counts = outcomes(two_settings(seed=3, sites=200, faster=0.0, cv=0.07))
    assert counts["tie"] >= 196, counts.to_dict()
    assert counts["untested"] == 0


def test_batched_anova_equals_scipy_per_site():
    rng = np.random.default_rng(4)
    data = []
    for s, n in enumerate([31, 31, 30, 12, 31]):  # unequal sizes take separate batches
        data += rows(f"s{s}", "lte", "tcp-plus", rng.normal(1000, 60, n))
        data += rows(f"s{s}", "lte", "quic", rng.normal(960, 60, 31 if s != 2 else 25))
    meas = measurements(synthetic.trials(data), ["plt"])
    got = compare(meas, [("quic", "tcp-plus")]).set_index("site")
    assert sorted(got.index) == [f"s{s}" for s in range(5)]
    for site, g in meas.groupby("site"):
        a = g[g.setting == "quic"]["value"].to_numpy()
        b = g[g.setting == "tcp-plus"]["value"].to_numpy()
        assert got.loc[site, "p"] == pytest.approx(stats.f_oneway(a, b).pvalue)
        assert (got.loc[site, "n_a"], got.loc[site, "n_b"]) == (len(a), len(b))
        assert got.loc[site, "diff_ms"] == pytest.approx(a.mean() - b.mean())


def test_outcomes_and_counts_by_hand():
    data = (rows("fast", "dsl", "quic", [90, 91, 89, 90]) + rows("fast", "dsl", "tcp", [100, 101, 99, 100])
            + rows("slow", "dsl", "quic", [110, 111, 109, 110]) + rows("slow", "dsl", "tcp", [100, 101, 99, 100])
            + rows("same", "dsl", "quic", [100, 100, 100]) + rows("same", "dsl", "tcp", [100, 100, 100])
            + rows("noisy", "dsl", "quic", [50, 150, 90]) + rows("noisy", "dsl", "tcp", [100, 60, 140])
            + rows("one", "dsl", "quic", [90]) + rows("one", "dsl", "tcp", [100, 100]))
    comparisons = compare(measurements(synthetic.trials(data), ["plt"]), [("quic", "tcp")])
    assert comparisons.set_index("site")["outcome"].to_dict() == {
        "fast": "win", "slow": "loss", "same": "tie", "noisy": "tie", "one": "untested"}
    w = win_tie_loss(comparisons).iloc[0]
    assert (w["sites"], w["wins"], w["ties"], w["losses"], w["untested"]) == (5, 1, 2, 1, 1)
    assert w["mean_diff_ms"] == pytest.approx(np.mean([-10, 10, 0, (290 - 300) / 3, -10]))


def test_default_pairs():
    settings = {"tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"}
    assert default_pairs(settings) == [
        ("tcp-plus", "tcp"), ("tcp-plus-bbr", "tcp"), ("quic", "tcp"), ("quic-bbr", "tcp"),
        ("quic", "tcp-plus"), ("quic-bbr", "tcp-plus-bbr")]
    assert default_pairs({"tcp", "quic"}) == [("quic", "tcp")]


def test_synthetic_campaign_reproduces_the_papers_direction():
    """On the bundled model, QUIC beats TCP on PLT in DSL on most sites (as in the paper)."""
    trials = synthetic.campaign(sites=10, networks=["dsl"], runs=RUNS, seed=5)
    meas = measurements(trials)
    w = win_tie_loss(compare(meas, [("quic", "tcp")])).set_index("metric")
    assert w.loc["plt", "wins"] >= 8 and w.loc["plt", "losses"] == 0
    rel = relative_difference(summarize(meas))
    assert rel[(rel.setting == "quic") & (rel.metric == "plt")]["rel"].median() < -0.03
    assert isinstance(rel, pd.DataFrame)
