"""First and warm visits side by side, and the proof that warm visits resumed.

A warm trial (column `visit` = "warm") loaded its page once, unmeasured, in the
same browser before the measured load, which then resumed the TLS / QUIC
sessions of that first load (see testbed.measure.browser_process). Stores made before
visits existed have no `visit`: their trials are first visits.

    visit_means(trials)      # network x setting x visit x metric: n, mean, median
    visit_pivot(trials)      # rows network x metric, a column per setting (its visit)
    resumption(trials)       # network x setting x visit: how many trials resumed
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from results_contract.schema import METRICS, OK, label, networks_in, settings_in

VISIT_METRICS = ("ttfb", "fcp", "plt", "si")
"""Metrics the first-vs-warm table shows (the handshake shows first in TTFB)."""

KEYS = ["network", "setting", "visit"]


def visits(trials: pd.DataFrame) -> pd.Series:
    """Each trial's visit; missing (an older store) is "first"."""
    if "visit" not in trials.columns:
        return pd.Series("first", index=trials.index, dtype="string")
    return trials["visit"].astype("string").fillna("first")


def has_warm(trials: pd.DataFrame) -> bool:
    return bool((visits(trials) == "warm").any())


def visit_means(trials: pd.DataFrame, metrics: Sequence[str] = VISIT_METRICS) -> pd.DataFrame:
    """Per network x setting x visit x metric (plt, fcp, ...) over ok trials: n, mean,
    median (ms)."""
    cols = [*KEYS, "metric", "n", "mean", "median"]
    ok = trials[trials["status"] == OK].assign(visit=visits(trials))
    metrics = [m for m in metrics if METRICS[m] in ok.columns]
    if ok.empty or not metrics:
        return pd.DataFrame(columns=cols)
    long = ok.melt(id_vars=KEYS, value_vars=[METRICS[m] for m in metrics], var_name="metric")
    long = long.dropna(subset=["value"])
    long["metric"] = long["metric"].map({METRICS[m]: m for m in metrics})
    out = (long.groupby([*KEYS, "metric"], sort=False, observed=True)["value"]
           .agg(n="count", mean="mean", median="median").reset_index())
    return _sorted(out, metrics)[cols]


def visit_pivot(trials: pd.DataFrame, metrics: Sequence[str] = VISIT_METRICS) -> pd.DataFrame:
    """Rows network x metric; one column per setting named with its visit
    ("TCP+ · first", "quic-0rtt · warm"), first visits before warm ones; cells
    "mean ms (n)"."""
    m = visit_means(trials, metrics)
    if m.empty:
        return pd.DataFrame()
    m = m.assign(column=[f"{label(p)} · {v}" for p, v in zip(m["setting"], m["visit"])],
                 cell=[f"{x:.0f} ms ({n})" for x, n in zip(m["mean"], m["n"])])
    order = list(dict.fromkeys(m.sort_values("visit", kind="stable")["column"]))
    rows = list(dict.fromkeys(zip(m["network"], m["metric"])))  # m is in the paper's order
    pivot = m.pivot(index=["network", "metric"], columns="column", values="cell")
    pivot = pivot.reindex(index=pd.MultiIndex.from_tuples(rows, names=["network", "metric"]),
                          columns=order).reset_index().rename_axis(columns=None)
    pivot["network"] = pivot["network"].map(label)
    pivot["metric"] = pivot["metric"].map(label)
    return pivot


def resumption(trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting x visit: trials, ok ones, and how many of all trials the
    servers saw resume every connection (tls_resumed), answer TLS early data over TCP
    (early_data) or 0-RTT over QUIC (quic_0rtt), and warm trials failed as not-resumed.
    Counts of 1s; a column no trial has (an older store) counts 0."""
    cols = [*KEYS, "trials", "ok", "tls_resumed", "early_data", "quic_0rtt", "not_resumed"]
    if trials.empty:
        return pd.DataFrame(columns=cols)
    t = trials.assign(visit=visits(trials), ok=trials["status"] == OK,
                      not_resumed=trials["reason"].fillna("").str.startswith("not-resumed"))
    for c in ("tls_resumed", "early_data", "quic_0rtt"):
        t[c] = (t[c] == 1) if c in t.columns else False
    out = (t.groupby(KEYS, sort=False, observed=True)
           .agg(trials=("trial_id", "count"), ok=("ok", "sum"), tls_resumed=("tls_resumed", "sum"),
                early_data=("early_data", "sum"), quic_0rtt=("quic_0rtt", "sum"),
                not_resumed=("not_resumed", "sum"))
           .reset_index())
    return _sorted(out)[cols]


def _sorted(df: pd.DataFrame, metrics: Sequence[str] = ()) -> pd.DataFrame:
    rank = {"network": {n: i for i, n in enumerate(networks_in(df["network"]))},
            "setting": {p: i for i, p in enumerate(settings_in(df["setting"]))},
            "visit": {"first": 0, "warm": 1},
            "metric": {m: i for i, m in enumerate(metrics)}}
    by = [c for c in ("network", "setting", "visit", "metric") if c in df.columns
          and (c != "metric" or metrics)]
    return df.sort_values(by, key=lambda s: s.map(lambda v: rank[s.name].get(v, len(rank[s.name]))),
                          kind="stable", ignore_index=True)
