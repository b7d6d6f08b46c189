"""Per-connection transport figures: table `connections` of a store, when it has one.

One row per transport connection per trial (TCP from the kernel's tcp_info,
QUIC from h3server's summary); unknown figures are NULL. Stores written before
the table existed, and exports, have none: `load_connections` then returns an
empty frame with the columns, and everything built on it says what is missing
instead of failing.

    conns = load_connections("results/paper")   # empty if the store has no such table
    transport_summary(conns, trials)            # per network and setting
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load import ResultsError, resolve
from analysis.schema import OK

TABLE = "connections"

TEXT_COLUMNS = ("trial_id", "transport", "origin", "server_ip", "client_ip", "cc")
COLUMNS = (
    "trial_id", "transport", "origin", "server_ip", "server_port", "client_ip", "client_port",
    "cc", "handshake_ms", "duration_ms", "srtt_ms", "min_rtt_ms", "rttvar_ms",
    "cwnd_initial_packets", "cwnd_packets", "cwnd_bytes", "ssthresh_packets", "mss_bytes",
    "bytes_sent", "bytes_acked", "bytes_retrans", "packets_sent", "packets_retrans",
    "packets_lost", "delivery_rate_bps", "pacing_rate_bps", "busy_ms", "rwnd_limited_ms",
    "sndbuf_limited_ms", "bbr_bw_bps", "bbr_min_rtt_ms", "requests",
)
"""The columns of table `connections` (the results contract's, in its order); every
one but the text ones is a number, NULL when unknown."""

FILES = ("connections.csv", "connections.csv.gz", "connections.parquet")
"""Beside an export's trials file (or in a folder without a store): the same table."""


def load_connections(source: str | Path) -> pd.DataFrame:
    """Every connection row of `source` (a results folder, .sqlite, or a folder holding
    an export with connections.csv), cast to COLUMNS; empty when it has none."""
    path = Path(source)
    store = resolve(path)
    if store.name.lower().endswith((".sqlite", ".sqlite3", ".db")):
        raw = _read_sqlite(store)
    else:
        folder = path if path.is_dir() else path.parent
        found = [folder / n for n in FILES if (folder / n).is_file()]
        if not found:
            return empty()
        raw = (pd.read_parquet(found[0]) if found[0].name.endswith(".parquet")
               else pd.read_csv(found[0], dtype={c: "string" for c in TEXT_COLUMNS},
                                keep_default_na=False, na_values=[""]))
        store = found[0]
    return normalise(raw, str(store))


def empty() -> pd.DataFrame:
    return normalise(pd.DataFrame(columns=["trial_id"]), "none")


def _read_sqlite(path: Path) -> pd.DataFrame:
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with sqlite3.connect(uri, uri=True) as db:
            has = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                             (TABLE,)).fetchone()
            if not has:
                return pd.DataFrame(columns=["trial_id"])
            return pd.read_sql_query(f"SELECT * FROM {TABLE}", db)
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as e:
        raise ResultsError(f"{path}: cannot read table {TABLE} ({e})") from e


def normalise(raw: pd.DataFrame, source: str) -> pd.DataFrame:
    """`raw` with exactly COLUMNS (missing ones all NULL), text as strings, the rest
    float64 (NaN = unknown)."""
    if "trial_id" not in raw.columns:
        raise ResultsError(f"{source}: table {TABLE}: missing column trial_id")
    out = {}
    for column in COLUMNS:
        values = raw[column] if column in raw.columns else pd.Series(
            [None] * len(raw), index=raw.index, dtype="object")
        try:
            out[column] = (values.astype("string") if column in TEXT_COLUMNS
                           else pd.to_numeric(values).astype("float64"))
        except (ValueError, TypeError) as e:
            raise ResultsError(f"{source}: table {TABLE}: column {column}: expected "
                               f"numbers ({str(e)[:80]})") from e
    return pd.DataFrame(out).reset_index(drop=True)


def with_trials(conns: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """The connections of ok trials, with their trial's site, network, protocol, run."""
    ok = trials.loc[trials["status"] == OK, ["trial_id", "site", "network", "protocol", "run"]]
    return conns.merge(ok, on="trial_id", how="inner")


def _share(part: pd.Series, whole: pd.Series) -> float:
    both = part.notna() & whole.notna()
    total = whole[both].sum()
    return float(part[both].sum() / total) if total > 0 else np.nan


def transport_summary(conns: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per network and setting, over the connections of its ok trials: how many,
    congestion control, median handshake (QUIC), retransmitted share of bytes sent,
    median final cwnd, and the share of the connections' busy time limited by the
    receiver's window or the sender's buffer (with the median ms of each)."""
    columns = ["network", "protocol", "transport", "cc", "connections", "per_trial",
               "handshake_ms", "retrans_rate", "cwnd_packets", "cwnd_bytes",
               "rwnd_limited_ms", "rwnd_limited_share", "sndbuf_limited_ms",
               "sndbuf_limited_share"]
    c = with_trials(conns, trials)
    if c.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (network, protocol), g in c.groupby(["network", "protocol"], sort=False):
        retrans = _share(g["bytes_retrans"], g["bytes_sent"])
        if np.isnan(retrans):
            retrans = _share(g["packets_retrans"], g["packets_sent"])
        rows.append({
            "network": network, "protocol": protocol,
            "transport": ", ".join(sorted(set(g["transport"].dropna()))),
            "cc": ", ".join(sorted(set(g["cc"].dropna()))),
            "connections": len(g), "per_trial": len(g) / g["trial_id"].nunique(),
            "handshake_ms": g["handshake_ms"].median(), "retrans_rate": retrans,
            "cwnd_packets": g["cwnd_packets"].median(), "cwnd_bytes": g["cwnd_bytes"].median(),
            "rwnd_limited_ms": g["rwnd_limited_ms"].median(),
            "rwnd_limited_share": _share(g["rwnd_limited_ms"], g["busy_ms"]),
            "sndbuf_limited_ms": g["sndbuf_limited_ms"].median(),
            "sndbuf_limited_share": _share(g["sndbuf_limited_ms"], g["busy_ms"]),
        })
    from analysis.stats import sort_table

    return sort_table(pd.DataFrame(rows, columns=columns))


def missing_figures(conns: pd.DataFrame) -> list[str]:
    """Columns no connection row has a value for (the transport section names them)."""
    return [c for c in COLUMNS if c not in TEXT_COLUMNS and conns[c].isna().all()]
