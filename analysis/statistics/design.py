"""Protocol design impact: how much of QUIC's lead is its 1-RTT handshake (paper's Table 3).

QUIC connects in one RTT, TCP + TLS 1.3 in two. On single-origin sites (one
connection), subtracting one RTT from a tuned TCP's FVC, FCP and PLT removes
the handshake's share; what is left between it and QUIC, divided by the RTT,
says how much of the difference lies beyond the handshake. FVC comes from the
screen recording (steps of one video frame), FCP from the browser's paint
timing (1 ms steps): beside each other they show how much of a sub-frame lead
the video rounds away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis.statistics.stats import sort_table
from results_contract import profiles_meta
from results_contract.load import ok_trials

DESIGN_METRICS = ("fvc", "fcp", "plt")
"""Metrics of the 1-RTT table, in its order (a metric without values is left out)."""

COLUMNS = ["network", "rtt_ms", "site", "tcp", "quic", "metric", "tcp_ms", "tcp_minus_rtt_ms",
           "quic_ms", "diff_ms", "diff_rtt"]
INTERVAL_COLUMNS = ["diff_rtt_low", "diff_rtt_high", "lead_rtt_upper", "lead_under_1rtt"]
"""Added by `with_intervals`."""


def single_origin_sites(trials: pd.DataFrame) -> list[str]:
    """Sites whose recording has exactly one origin."""
    origins = trials.groupby("site", observed=True)["origins"].max()
    return sorted(origins[origins == 1].index)


def network_rtts(trials: pd.DataFrame) -> pd.Series:
    """Each network profile's minimum RTT in ms (the median over its trials)."""
    return trials.groupby("network", observed=True)["rtt_ms"].median()


def design_impact(trials: pd.DataFrame, summary: pd.DataFrame,
                  pairs: Sequence[tuple[str, str]] | None = None,
                  metrics: Sequence[str] = DESIGN_METRICS) -> pd.DataFrame:
    """Per network x single-origin site x pair x metric (FVC, FCP, PLT); `pairs`: (TCP
    setting, QUIC setting) with the same tuning, None: the profiles' stack twins
    (profiles/comparisons.toml; the first, TCP+ and QUIC, is the paper's Table 3):

    tcp_minus_rtt_ms = mean(TCP setting) - RTT; diff_ms = tcp_minus_rtt_ms -
    mean(QUIC setting); diff_rtt = diff_ms / RTT. Positive: QUIC is still
    ahead after crediting TCP with one RTT; negative: the TCP setting is
    then faster. Networks with RTT 0 get NaN for diff_rtt. Means come from
    `summary` (ok trials only); pairs absent from the campaign are skipped.
    """
    pairs = profiles_meta.current().stack_twins if pairs is None else pairs
    sites = single_origin_sites(ok_trials(trials))
    rtts = network_rtts(trials)
    means = summary[summary["site"].isin(sites) & summary["metric"].isin(metrics)]
    means = means.set_index(["site", "network", "setting", "metric"])["mean"]
    rows = []
    for (site, network, protocol, metric), tcp_ms in means.items():
        for tcp, quic in pairs:
            if protocol != tcp or (site, network, quic, metric) not in means.index:
                continue
            rtt = float(rtts[network])
            quic_ms = float(means[(site, network, quic, metric)])
            diff = tcp_ms - rtt - quic_ms
            rows.append((network, rtt, site, tcp, quic, metric, tcp_ms, tcp_ms - rtt, quic_ms,
                         diff, diff / rtt if rtt > 0 else float("nan")))
    out = pd.DataFrame(rows, columns=COLUMNS).rename(columns={"tcp": "a", "quic": "b"})
    out = sort_table(out).rename(columns={"a": "tcp", "b": "quic"})
    return with_intervals(out, summary)


def welch(design: pd.DataFrame, summary: pd.DataFrame) -> tuple[Any, Any]:
    """Per row of `design` (site, network, its `tcp` and `quic` settings, metric): the
    standard error (ms) of the difference of the two groups' means and its Welch degrees
    of freedom, from the groups' n and std in `summary` (NumPy arrays)."""
    import numpy as np

    g = summary.set_index(["site", "network", "setting", "metric"])
    ka = list(zip(design["site"], design["network"], design["tcp"], design["metric"]))
    kb = list(zip(design["site"], design["network"], design["quic"], design["metric"]))
    na, sa = g.loc[ka, "n"].to_numpy(float), g.loc[ka, "std"].to_numpy(float)
    nb, sb = g.loc[kb, "n"].to_numpy(float), g.loc[kb, "std"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        va, vb = sa**2 / na, sb**2 / nb
        return np.sqrt(va + vb), (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


def with_intervals(design: pd.DataFrame, summary: pd.DataFrame,
                   confidence: float = 0.95) -> pd.DataFrame:
    """`design` with Welch intervals from the groups' n and std in `summary`: diff_rtt_low
    and diff_rtt_high, the `confidence` interval of diff_rtt; lead_rtt_upper, the
    one-sided `confidence` upper bound of QUIC's lead (TCP - QUIC) in RTTs, and
    lead_under_1rtt, whether that bound is below one RTT (the claim "QUIC's lead is
    less than its saved round trip" is then supported at 1 - confidence)."""
    import numpy as np
    from scipy import stats

    if design.empty:
        return design.assign(**{c: pd.Series(dtype=float) for c in INTERVAL_COLUMNS})
    se, df = welch(design, summary)
    with np.errstate(divide="ignore", invalid="ignore"):
        rtt = design["rtt_ms"].to_numpy(float)
        rtt = np.where(rtt > 0, rtt, np.nan)
        half = stats.t.isf((1 - confidence) / 2, df) * se / rtt
        upper = (design["diff_ms"].to_numpy(float) + rtt) / rtt + stats.t.isf(
            1 - confidence, df) * se / rtt
    return design.assign(diff_rtt_low=design["diff_rtt"] - half,
                         diff_rtt_high=design["diff_rtt"] + half, lead_rtt_upper=upper,
                         lead_under_1rtt=upper < 1)
