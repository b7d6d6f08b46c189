"""The campaign results contract as the analysis reads it, and display names.

One row per finished trial; `trials.sqlite`, its CSV export and its Parquet
export all have exactly these columns. The loader casts every source to the
dtypes below, so the three read back as identical DataFrames.
"""

from __future__ import annotations

from collections.abc import Iterable

TEXT = ("trial_id", "campaign", "site", "network", "protocol", "status", "reason",
        "started_at", "protocols", "max_in_flight")
"""Text columns (pandas "string" dtype, missing = <NA>)."""

INTEGER = ("run", "attempt", "origins")
"""Integer columns that every row has."""

NULLABLE_INTEGER = ("requests", "bytes", "misses")
"""Integer columns that are NULL when failed or unavailable."""

REAL = ("wall_s", "plt_ms", "fvc_ms", "lvc_ms", "vc85_ms", "si_ms", "ttfb_ms", "rtt_ms")
"""Real columns (float64, missing = NaN)."""

COLUMNS = ("trial_id", "campaign", "site", "network", "protocol", "run", "status", "reason",
           "attempt", "started_at", "wall_s", "plt_ms", "fvc_ms", "lvc_ms", "vc85_ms", "si_ms",
           "ttfb_ms", "requests", "bytes", "misses", "protocols", "rtt_ms", "origins",
           "max_in_flight")
"""Every column of table `trials`, in the contract's order.

`protocols` and `max_in_flight` are JSON objects: protocol -> requests, and host ->
the most requests to that host on the wire at the same time (from the trial's HAR
timings, from sending the request to the response's last byte; see
testbed.measure.trial_har.max_in_flight)."""

ADDED = ("max_in_flight",)
"""Columns newer than the first stores and exports: missing (all NULL) in older ones."""

DTYPES = {
    **{c: "string" for c in TEXT},
    **{c: "int64" for c in INTEGER},
    **{c: "Int64" for c in NULLABLE_INTEGER},
    **{c: "float64" for c in REAL},
}

OK = "ok"
"""The only status whose trials enter statistics."""

METRICS = {
    "plt": "plt_ms",
    "fvc": "fvc_ms",
    "lvc": "lvc_ms",
    "vc85": "vc85_ms",
    "si": "si_ms",
    "ttfb": "ttfb_ms",
}
"""Metric name -> column (all in milliseconds)."""

METRIC_LABELS = {"plt": "PLT", "fvc": "FVC", "lvc": "LVC", "vc85": "VC85", "si": "SI",
                 "ttfb": "TTFB"}

METRIC_NAMES = {"plt": "Page Load Time", "fvc": "First Visual Change",
                "lvc": "Last Visual Change", "vc85": "Visual Complete 85 %", "si": "Speed Index",
                "ttfb": "Time To First Byte"}
"""Metric name -> its name spelled out (the report says each once, then abbreviates)."""

ANALYSED_METRICS = ("plt", "fvc", "lvc", "vc85", "si")
"""Metrics with statistics by default (the paper's five)."""

PLOTTED_METRICS = ("plt", "fvc", "vc85", "si")
"""Metrics plotted by default: LVC is computed but, as in the paper, not plotted."""

SETTING_LABELS = {"tcp": "TCP", "tcp-plus": "TCP+", "tcp-plus-bbr": "TCP+BBR",
                  "quic": "QUIC", "quic-bbr": "QUIC+BBR"}
"""Protocol setting name -> display label, in the paper's order."""

NETWORK_LABELS = {"dsl": "DSL", "lte": "LTE", "da2gc": "DA2GC", "mss": "MSS", "none": "none"}
"""Network profile name -> display label, in the paper's order."""


def label(name: str) -> str:
    """Display label of a setting, network or metric name (the name itself if unknown)."""
    return SETTING_LABELS.get(name) or NETWORK_LABELS.get(name) or METRIC_LABELS.get(name) or name


def full_name(metric: str) -> str:
    """A metric spelled out with its abbreviation: 'Page Load Time (PLT)'."""
    return f"{METRIC_NAMES[metric]} ({label(metric)})" if metric in METRIC_NAMES else metric


def ordered(names: Iterable[str], preferred: Iterable[str]) -> list[str]:
    """Distinct `names`, those in `preferred` first in its order, the rest sorted."""
    names = set(names)
    preferred = list(preferred)
    first = [n for n in preferred if n in names]
    return first + sorted(names - set(first))


def settings_in(names: Iterable[str]) -> list[str]:
    return ordered(names, SETTING_LABELS)


def networks_in(names: Iterable[str]) -> list[str]:
    return ordered(names, NETWORK_LABELS)
