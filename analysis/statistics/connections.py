"""Per-connection transport figures: table `connections` of a store, when it has one.

One row per transport connection per trial (TCP from the kernel's tcp_info,
QUIC from h3server's summary); unknown figures are NULL. Stores written before
the table existed, and exports, have none: `load_connections` then returns an
empty frame with the columns, and everything built on it says what is missing
instead of failing.

    conns = connections_of("results/paper")     # empty if the store has no such table
    transport_summary(conns, trials)            # per network and setting
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from results_contract.load import ResultsError, load_connections, resolve
from results_contract.schema import CONNECTION_COLUMNS, CONNECTION_DTYPES, CONNECTIONS_TABLE, OK

TABLE = CONNECTIONS_TABLE
COLUMNS = CONNECTION_COLUMNS
"""The columns of table `connections` (results_contract.schema.CONNECTIONS, in its order); every
one but the text ones is a number, NULL when unknown."""
TEXT_COLUMNS = tuple(c for c, d in CONNECTION_DTYPES.items() if d == "string")

FILES = ("connections.parquet", "connections.csv", "connections.csv.gz")
"""Beside an export's trials file (or in a folder without a store): the same table."""


def connections_of(source: str | Path) -> pd.DataFrame:
    """The connection rows of a campaign's results, whatever `source` is (a results
    folder, its .sqlite, or an export's trials file with connections.csv beside it),
    read by results_contract.load.load_connections and cast for the analysis (numbers float64,
    NaN = unknown); empty when the results have no such table."""
    path = Path(source)
    store = resolve(path)
    if store.name.lower().endswith((".sqlite", ".sqlite3", ".db")) and store.is_file():
        return normalise(load_connections(store), str(store))
    folder = path if path.is_dir() else path.parent
    found = [folder / n for n in FILES if (folder / n).is_file()]
    if not found:
        return empty()
    return normalise(load_connections(found[0]), str(found[0]))


def empty() -> pd.DataFrame:
    return normalise(pd.DataFrame(columns=["trial_id"]), "none")


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
    ok = trials.loc[trials["status"] == OK, ["trial_id", "site", "network", "setting", "run"]]
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
    columns = ["network", "setting", "transport", "cc", "connections", "per_trial",
               "handshake_ms", "retrans_rate", "cwnd_packets", "cwnd_bytes",
               "rwnd_limited_ms", "rwnd_limited_share", "sndbuf_limited_ms",
               "sndbuf_limited_share"]
    c = with_trials(conns, trials)
    if c.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (network, protocol), g in c.groupby(["network", "setting"], sort=False):
        retrans = _share(g["bytes_retrans"], g["bytes_sent"])
        if np.isnan(retrans):
            retrans = _share(g["packets_retrans"], g["packets_sent"])
        rows.append({
            "network": network, "setting": protocol,
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
    from analysis.statistics.stats import sort_table

    return sort_table(pd.DataFrame(rows, columns=columns))
