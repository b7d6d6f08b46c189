"""Statistics options with known answers: corrections, non-parametric tests, effect sizes
and power, on hand-made cases and synthetic groups whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis import compare, effect_sizes, measurements, synthetic, win_tie_loss
from analysis.statistics.inference import adjust, hedges_g, pvalues

RUNS = 31


def rows(site, protocol, values):
    return [{"site": site, "network": "dsl", "setting": protocol, "run": i, "plt_ms": v}
            for i, v in enumerate(values)]


def lognormal(rng, mean, cv, size):
    sigma = np.sqrt(np.log1p(cv**2))
    return rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, size)


def two_settings(seed, sites, faster, cv, base_ms=2000.0):
    rng = np.random.default_rng(seed)
    out = []
    for s in range(sites):
        out += rows(f"s{s:04d}", "tcp", lognormal(rng, base_ms, cv, RUNS))
        out += rows(f"s{s:04d}", "quic", lognormal(rng, base_ms * (1 - faster), cv, RUNS))
    return measurements(synthetic.trials(out), ["plt"])


def counts(comparisons):
    return comparisons["outcome"].value_counts().reindex(["win", "tie", "loss", "untested"],
                                                         fill_value=0)


@pytest.fixture(scope="module")
def identical():
    return two_settings(seed=11, sites=1000, faster=0.0, cv=0.08)


@pytest.mark.parametrize("test", ["anova", "mannwhitney", "kruskal"])
def test_identical_groups_bh_false_wins_at_most_one_percent(identical, test):
    c = counts(compare(identical, [("quic", "tcp")], test=test, correction="bh"))
    assert c["win"] + c["loss"] <= 10, c.to_dict()  # of 1000 sites
    raw = counts(compare(identical, [("quic", "tcp")], test=test))
    # Uncorrected at p < 0.01, about 1 % of the sites differ by chance alone.
    assert raw["win"] + raw["loss"] <= 25, raw.to_dict()
    assert raw["win"] + raw["loss"] >= c["win"] + c["loss"]


def test_bh_by_hand_and_per_family():
    got = adjust(np.array([0.01, 0.04, 0.03, 0.5, np.nan]), "bh")
    assert got[:4] == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert np.isnan(got[4])
    assert adjust(np.array([0.01, 0.2]), "none").tolist() == [0.01, 0.2]
    with pytest.raises(ValueError, match="unknown correction"):
        adjust(np.array([0.1]), "holm-ish")


def test_bh_keeps_real_differences():
    meas = two_settings(seed=12, sites=50, faster=0.05, cv=0.05)
    c = compare(meas, [("quic", "tcp")], correction="bh")
    assert (c["p_adj"] >= c["p"]).all()
    assert counts(c)["win"] >= 40 and counts(c)["loss"] == 0


def test_nonparametric_tests_equal_scipy_per_site():
    rng = np.random.default_rng(3)
    xa, xb = rng.normal(100, 10, (4, 9)), rng.normal(105, 10, (4, 12))
    for test, fn in (("mannwhitney", lambda a, b: stats.mannwhitneyu(a, b).pvalue),
                     ("kruskal", lambda a, b: stats.kruskal(a, b).pvalue),
                     ("anova", lambda a, b: stats.f_oneway(a, b).pvalue)):
        assert pvalues(xa, xb, test) == pytest.approx([fn(a, b) for a, b in zip(xa, xb)])
    same = np.full((1, 5), 7.0)
    for test in ("anova", "mannwhitney", "kruskal"):
        assert np.isnan(pvalues(same, same, test)).all()


def test_rank_test_sees_through_an_outlier_the_anova_does_not():
    """a is faster in 30 of 31 runs, but one run took 20 s: the F test ties, ranks win."""
    rng = np.random.default_rng(5)
    a = list(lognormal(rng, 1900, 0.03, RUNS - 1)) + [20000.0]
    b = lognormal(rng, 2000, 0.03, RUNS)
    meas = measurements(synthetic.trials(rows("x", "quic", a) + rows("x", "tcp", b)), ["plt"])
    assert compare(meas, [("quic", "tcp")])["outcome"].item() == "tie"
    for test in ("mannwhitney", "kruskal"):
        assert compare(meas, [("quic", "tcp")], test=test)["outcome"].item() == "win"


def test_bootstrap_ci_covers_the_true_relative_difference():
    meas = two_settings(seed=13, sites=200, faster=0.05, cv=0.05)
    e = effect_sizes(meas, [("quic", "tcp")], resamples=1000)
    assert len(e) == 200 and (e["rel_low"] < e["rel"]).all() and (e["rel"] < e["rel_high"]).all()
    covered = ((e["rel_low"] <= -0.05) & (-0.05 <= e["rel_high"])).mean()
    assert 0.88 <= covered <= 0.99, covered
    assert e["rel"].median() == pytest.approx(-0.05, abs=0.005)
    again = effect_sizes(meas, [("quic", "tcp")], resamples=1000)
    assert again.equals(e)  # seeded


@pytest.mark.parametrize("cv, expected", [(0.05, 0.91), (0.10, 0.27)])
def test_power_at_the_observed_variance(cv, expected):
    """The power to see 5 % at p < 0.01 with 31 runs: about 91 % at CV 5 %, 27 % at 10 %
    (the F test's noncentral distribution), and about as often seen in fact."""
    meas = two_settings(seed=14, sites=200, faster=0.05, cv=cv)
    e = effect_sizes(meas, [("quic", "tcp")], resamples=200)
    assert e["power"].median() == pytest.approx(expected, abs=0.05)
    wins = (compare(meas, [("quic", "tcp")])["outcome"] == "win").mean()
    assert wins == pytest.approx(e["power"].mean(), abs=0.08)
    # The difference detectable with 80 % power grows with the noise, about like the CV.
    assert e["detectable"].median() == pytest.approx(cv * 0.86, rel=0.15)


def test_hedges_g_by_hand():
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[3.0, 4.0, 5.0]])
    # means 2 and 4, pooled sd 1: d = -2, corrected by 1 - 3 / (4 * 6 - 9) = 0.8
    assert hedges_g(a, b) == pytest.approx([-1.6])


def test_win_tie_loss_follows_the_chosen_correction():
    meas = two_settings(seed=15, sites=40, faster=0.0, cv=0.08)
    w = win_tie_loss(compare(meas, [("quic", "tcp")], correction="bh")).iloc[0]
    assert w["wins"] + w["losses"] <= 1 and w["sites"] == 40
    with pytest.raises(ValueError, match="unknown test"):
        compare(meas, [("quic", "tcp")], test="t-test")
