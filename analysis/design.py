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

import pandas as pd

from analysis.load import ok_trials
from analysis.stats import sort_table

DESIGN_PAIRS = (("tcp-plus", "quic"), ("tcp-plus-bbr", "quic-bbr"))
"""(TCP setting, QUIC setting) pairs with the same tuning; the first is the paper's Table 3."""

DESIGN_METRICS = ("fvc", "fcp", "plt")
"""Metrics of the 1-RTT table, in its order (a metric without values is left out)."""

COLUMNS = ["network", "rtt_ms", "site", "tcp", "quic", "metric", "tcp_ms", "tcp_minus_rtt_ms",
           "quic_ms", "diff_ms", "diff_rtt"]


def single_origin_sites(trials: pd.DataFrame) -> list[str]:
    """Sites whose recording has exactly one origin."""
    origins = trials.groupby("site", observed=True)["origins"].max()
    return sorted(origins[origins == 1].index)


def network_rtts(trials: pd.DataFrame) -> pd.Series:
    """Each network profile's minimum RTT in ms (the median over its trials)."""
    return trials.groupby("network", observed=True)["rtt_ms"].median()


def design_impact(trials: pd.DataFrame, summary: pd.DataFrame,
                  pairs: Sequence[tuple[str, str]] = DESIGN_PAIRS,
                  metrics: Sequence[str] = DESIGN_METRICS) -> pd.DataFrame:
    """Per network x single-origin site x pair x metric (FVC, FCP, PLT):

    tcp_minus_rtt_ms = mean(TCP setting) - RTT; diff_ms = tcp_minus_rtt_ms -
    mean(QUIC setting); diff_rtt = diff_ms / RTT. Positive: QUIC is still
    ahead after crediting TCP with one RTT; negative: the TCP setting is
    then faster. Networks with RTT 0 get NaN for diff_rtt. Means come from
    `summary` (ok trials only); pairs absent from the campaign are skipped.
    """
    sites = single_origin_sites(ok_trials(trials))
    rtts = network_rtts(trials)
    means = summary[summary["site"].isin(sites) & summary["metric"].isin(metrics)]
    means = means.set_index(["site", "network", "protocol", "metric"])["mean"]
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
    return sort_table(out).rename(columns={"a": "tcp", "b": "quic"})
