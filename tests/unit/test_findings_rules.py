"""The findings' verdict rules (analysis.statistics.claims, analysis.campaign.findings), each
proved on a synthetic campaign with a known truth: a directional finding against the
paper's figure (reproduced, smaller or larger than the paper, contradicted), a "no
difference" finding at the margin the paper's own figures give, the Holm correction,
and the figures themselves against the paper's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import analyse, synthetic
from analysis.campaign.findings import derived_margin, evaluate, load_findings
from analysis.campaign.model import Config
from analysis.statistics import claims

FAST = Config(resamples=200, mixed_metrics=())
METRICS = ("plt_ms", "fvc_ms", "lvc_ms", "vc85_ms", "si_ms")


def pair_campaign(network: str, a: str, b: str, effects: list[float], runs: int = 10,
                  noise: float = 0.03, seed: int = 3) -> pd.DataFrame:
    """`b` as the synthetic model makes it on `network`, one site per entry of
    `effects`; `a` is `b`'s very runs times (1 + the site's effect) times log-normal
    noise (`noise` a trial): the truth is each site's effect."""
    t = synthetic.campaign(sites=len(effects), networks=[network], settings=[b], runs=runs,
                           seed=seed, failure_rate=0.0)
    rng = np.random.default_rng(seed)
    twin = t.assign(setting=a)
    factor = 1 + twin["site"].map(dict(zip(sorted(t["site"].unique()), effects)))
    scale = factor.to_numpy(float) * rng.lognormal(0, noise, len(twin))
    for c in METRICS:
        twin[c] = twin[c].to_numpy() * scale
    return synthetic.trials(pd.concat([t, twin]).drop(columns="trial_id"))


def row(rows: pd.DataFrame, fid: str, network: str, metric: str = "plt") -> pd.Series:
    m = rows[(rows["id"] == fid) & (rows["network"] == network) & (rows["metric"] == metric)]
    assert len(m) == 1, m
    return m.iloc[0]


def test_a_true_minus_3_percent_where_the_paper_says_minus_8_is_smaller_than_the_paper():
    rows = evaluate(analyse(pair_campaign("lte", "tcp-plus", "tcp", [-0.03] * 38), FAST))
    r = row(rows, "tcp-plus-vs-tcp", "lte")
    assert r["paper"] == "−8 %" and r["figure"] == -0.08
    assert r["verdict"] == "reproduced, smaller than the paper", r["why"]
    assert -0.08 < r["low"] < r["value"] < r["high"] < 0 and r["p_holm"] < 0.01
    # FVC, VC85 and SI: the paper gives no figure, so the direction alone decides
    for metric in ("fvc", "vc85", "si"):
        assert row(rows, "tcp-plus-vs-tcp", "lte", metric)["verdict"] == "reproduced"


def test_a_true_minus_12_percent_where_the_paper_says_minus_8_is_larger_than_the_paper():
    rows = evaluate(analyse(pair_campaign("lte", "tcp-plus", "tcp", [-0.12] * 38), FAST))
    assert row(rows, "tcp-plus-vs-tcp", "lte")["verdict"] == "reproduced, larger than the paper"


def test_a_true_plus_3_percent_is_contradicted_when_shown_and_smaller_when_not():
    """The issue's "a true +3 % gives 'smaller than the paper'" holds only while +3 % is
    not significant: once the campaign shows a slower, the opposite of the paper's
    direction is established, and that is a contradiction, not a size."""
    rows = evaluate(analyse(pair_campaign("lte", "tcp-plus", "tcp", [0.03] * 38), FAST))
    r = row(rows, "tcp-plus-vs-tcp", "lte")
    assert r["verdict"] == "contradicted" and 0 < r["low"], r["why"]
    # six sites whose effects average +3 % and spread: not significant, but the interval
    # rules out the paper's -8 %
    few = pair_campaign("lte", "tcp-plus", "tcp", [0.07, -0.01, 0.05, 0.0, 0.06, 0.01],
                        runs=4)
    r = row(evaluate(analyse(few, FAST)), "tcp-plus-vs-tcp", "lte")
    assert r["verdict"] == "smaller than the paper", r["why"]
    assert -0.08 < r["low"] < 0 < r["high"] and not r["p_holm"] < 0.01


def test_no_difference_rows_a_true_zero_is_equivalent_and_a_true_10_percent_contradicted():
    margin = next(f for f in load_findings() if f.id == "bbr-vs-cubic-lossless").margin
    same = pair_campaign("lte", "quic-bbr", "quic", [0.0] * 38)
    rows = evaluate(analyse(same, FAST))
    for metric in ("plt", "fvc", "vc85", "si"):
        r = rows[(rows["id"] == "bbr-vs-cubic-lossless") & (rows["a"] == "quic-bbr")
                 & (rows["network"] == "lte") & (rows["metric"] == metric)].iloc[0]
        assert r["verdict"] == "equivalent", r["why"]
        assert -margin < r["low"] < r["high"] < margin
    faster = pair_campaign("lte", "quic-bbr", "quic", [-0.10] * 38)
    r = evaluate(analyse(faster, FAST))
    r = r[(r["id"] == "bbr-vs-cubic-lossless") & (r["a"] == "quic-bbr")
          & (r["network"] == "lte") & (r["metric"] == "plt")].iloc[0]
    assert r["verdict"] == "contradicted" and r["high"] < -margin, r["why"]
    # a true 2 % (within the paper's margin, outside the former ±2 %) is not contradicted
    near = pair_campaign("lte", "quic-bbr", "quic", [-0.02] * 38)
    r = evaluate(analyse(near, FAST))
    r = r[(r["id"] == "bbr-vs-cubic-lossless") & (r["a"] == "quic-bbr")
          & (r["network"] == "lte") & (r["metric"] == "plt")].iloc[0]
    assert r["verdict"] == "equivalent", r["why"]


def test_the_margin_is_the_largest_gap_between_figures_the_paper_calls_alike():
    table = {f.id: f for f in load_findings()}
    # Fig. 3's legends, DSL: QUIC -0.09 and QUIC+BBR -0.05, which Sect. 4 calls similar
    expected = (1 - 0.05) / (1 - 0.09) - 1
    assert table["bbr-vs-cubic-lossless"].margin == pytest.approx(expected)
    assert derived_margin([("quic-bbr-vs-tcp", "quic-vs-tcp")], table) == pytest.approx(expected)
    # TCP+BBR and TCP+: DSL -0.05 and -0.05, LTE -0.09 and -0.08 (one step of the figures)
    assert derived_margin([("tcp-plus-bbr-vs-tcp", "tcp-plus-vs-tcp")], table) == \
        pytest.approx(1 - (1 - 0.09) / (1 - 0.08))


def test_holm_corrects_every_tested_row_together():
    rows = evaluate(analyse(pair_campaign("lte", "tcp-plus", "tcp", [-0.03] * 38), FAST))
    tested = rows[np.isfinite(rows["p"].to_numpy(float))]
    assert len(tested) >= 4
    assert (tested["p_holm"] >= tested["p"] - 1e-15).all()
    assert np.allclose(np.sort(tested["p_holm"]), np.sort(claims.holm(tested["p"])))
    # a p of 0.004 among five tests is not significant at 0.01 once corrected
    corrected = claims.holm([0.004, 0.5, 0.6, 0.7, 0.8])
    assert corrected[0] == pytest.approx(0.02) and not corrected[0] < 0.01
    untested = rows[~np.isfinite(rows["p"].to_numpy(float))]
    assert untested["p_holm"].isna().all()


@pytest.mark.parametrize("figure, half", [(-0.05, 0.005), (-0.36, 0.005), (-87, 0.5),
                                          (-8364.8, 0.05), (-2091.5, 0.05), (-0.1, 0.05)])
def test_a_figure_stands_for_its_last_printed_digit(figure, half):
    assert claims.resolution(figure) == pytest.approx(half)


def test_magnitude_against_the_papers_figure():
    assert claims.magnitude(-0.086, -0.039, -0.05) == "reaches"
    assert claims.magnitude(-0.075, -0.035, -0.08) == "reaches"  # -0.08 is -0.085..-0.075
    assert claims.magnitude(-0.07, -0.035, -0.08) == "smaller"
    assert claims.magnitude(-0.02, 0.04, -0.09) == "smaller"
    assert claims.magnitude(-0.13, -0.06, -0.05) == "larger"
    assert claims.magnitude(-82, -5, -216) == "smaller"
    assert claims.magnitude(math.nan, 1, -0.05) == ""


PAPER = {  # ../shared/PAPER.md: the paper's figures, by finding, network and metric
    "tcp-plus-vs-tcp": {"dsl": {"plt": -0.05}, "lte": {"plt": -0.08}},
    "tcp-plus-bbr-vs-tcp": {"dsl": {"plt": -0.05}, "lte": {"plt": -0.09}},
    "quic-vs-tcp": {"dsl": {"plt": -0.09}, "lte": {"plt": -0.08}},
    "quic-bbr-vs-tcp": {"dsl": {"plt": -0.05}, "lte": {"plt": -0.09}},
    "quic-vs-tcp-plus-si": {"dsl": {"si": -87}, "lte": {"si": -216}, "mss": {"si": -8364.8}},
    "quic-vs-tcp-plus-lossy": {"mss": {"plt": -0.36}, "da2gc": {"plt": -0.14}},
    "quic-bbr-vs-tcp-plus-bbr-lossy": {"mss": {"plt": -0.18}, "da2gc": {"plt": -0.10}},
    "quic-bbr-vs-tcp-plus-bbr-si-mss": {"mss": {"si": -2091.5}},
    "tcp-plus-bbr-vs-tcp-plus-mss": {"mss": {"plt": -0.26}},
    "tcp-plus-bbr-vs-tcp-plus-fvc-mss": {"mss": {"fvc": -2866.2}},
}


def test_every_figure_is_the_papers_own_with_a_citation():
    table = load_findings()
    figures = {f.id: f.paper_values for f in table if f.paper_values}
    assert figures == PAPER
    assert all(f.cite.startswith(("Fig. ", "Table ", "Sect. ")) for f in table)
    bounds = {f.id: f.bound_rtt for f in table if f.kind == "one_rtt"}
    assert bounds == {"one-rtt-lossless": 1.0, "one-rtt-mss": 1.4, "one-rtt-mss-bbr": 1.0}
    # every metric the paper's CDFs show, for each setting against TCP
    for fid in ("tcp-plus-vs-tcp", "tcp-plus-bbr-vs-tcp", "quic-vs-tcp", "quic-bbr-vs-tcp"):
        assert set(next(f for f in table if f.id == fid).metrics) == {"plt", "fvc", "vc85", "si"}


def test_a_same_finding_needs_figures_to_derive_its_margin(tmp_path):
    from analysis.campaign.findings import TABLE, FindingsError

    text = TABLE.read_text(encoding="utf-8").replace(
        'margin_from = [["tcp-plus-bbr-vs-tcp", "tcp-plus-vs-tcp"], ["quic-bbr-vs-tcp", '
        '"quic-vs-tcp"]]\nnetworks = ["dsl", "lte"]', 'networks = ["dsl", "lte"]', 1)
    bad = tmp_path / "findings.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(FindingsError, match=r"\.margin_from: expected the pairs"):
        load_findings(bad)


def test_a_metric_the_campaign_lacks_is_not_tested_saying_why():
    t = pair_campaign("lte", "tcp-plus", "tcp", [-0.03] * 6, runs=3)
    t = synthetic.trials(t.drop(columns="trial_id").assign(fvc_ms=np.nan))
    r = row(evaluate(analyse(t, FAST)), "tcp-plus-vs-tcp", "lte", "fvc")
    assert r["verdict"] == "not tested" and "No FVC values" in r["why"], r["why"]
