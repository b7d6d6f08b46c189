"""The campaign results contract, and display names.

One row per finished trial; `trials.sqlite`, its CSV export and its Parquet
export all have exactly the columns of TRIALS, in its order. The campaign
store (testbed.campaign.store) builds its table and its Row from TRIALS; the
loader casts every source to DTYPES, so the three read back as identical
DataFrames.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column of table `trials`."""

    name: str
    kind: str
    """"text", "integer" or "real" (SQLite's TEXT, INTEGER, REAL)."""
    required: bool
    """Every trial has a value (NOT NULL in the store); otherwise NULL when failed or
    unavailable."""
    doc: str = ""
    key: bool = False
    """The primary key: a trial is stored once."""
    allowed: tuple[str, ...] = ()
    """The only values it may hold (none: any)."""


TEXT_KIND, INTEGER_KIND, REAL_KIND = "text", "integer", "real"

STATUSES = ("ok", "failed")
"""The values of column `status`."""

TRIALS = (
    Column("trial_id", TEXT_KIND, True, "`<site>|<network>|<protocol>|<run>`.", key=True),
    Column("campaign", TEXT_KIND, True, "The campaign file's name."),
    Column("site", TEXT_KIND, True, "The recording's name."),
    Column("network", TEXT_KIND, True, "The network profile's name."),
    Column("protocol", TEXT_KIND, True, "The protocol setting's name."),
    Column("run", INTEGER_KIND, True, "Run number, from 0."),
    Column("status", TEXT_KIND, True, "Only ok trials enter statistics.", allowed=STATUSES),
    Column("reason", TEXT_KIND, False, "Why a trial failed (timeout, wrong-protocol, ...)."),
    Column("attempt", INTEGER_KIND, True, "Which attempt was stored (1 = the first)."),
    Column("started_at", TEXT_KIND, True, "When the trial started (ISO 8601, UTC)."),
    Column("wall_s", REAL_KIND, True, "The trial's wall-clock time in seconds."),
    Column("plt_ms", REAL_KIND, False, "Page load time."),
    Column("fvc_ms", REAL_KIND, False, "First visual change."),
    Column("lvc_ms", REAL_KIND, False, "Last visual change."),
    Column("vc85_ms", REAL_KIND, False, "Visual complete 85 %."),
    Column("si_ms", REAL_KIND, False, "Speed index."),
    Column("ttfb_ms", REAL_KIND, False, "Time to first byte."),
    Column("requests", INTEGER_KIND, False, "Requests the browser made."),
    Column("bytes", INTEGER_KIND, False, "Bytes the replay servers sent."),
    Column("misses", INTEGER_KIND, False, "Requests the replay had no response for."),
    Column("protocols", TEXT_KIND, False, "JSON object protocol -> request count."),
    Column("rtt_ms", REAL_KIND, True, "The network profile's minimum RTT."),
    Column("origins", INTEGER_KIND, True, "Origins in the recording."),
    Column("max_in_flight", TEXT_KIND, False,
           "JSON object host -> the most requests to that host on the wire at the same "
           "time (from the trial's HAR timings, from sending the request to the "
           "response's last byte; see testbed.measure.trial_har.max_in_flight)."),
    Column("worker", TEXT_KIND, False,
           "Who measured the trial: `<host>/<worker id>` (`<host>/local` for a campaign "
           "run in the coordinator's own process, see `testbed run --scheduler`)."),
)
"""Every column of table `trials`, in the contract's order: the one definition of the
results schema (the store, the exports, this package's loader and its synthetic
campaigns are all made from it)."""

COLUMNS = tuple(c.name for c in TRIALS)
"""Every column's name, in the contract's order."""

TEXT = tuple(c.name for c in TRIALS if c.kind == TEXT_KIND)
"""Text columns (pandas "string" dtype, missing = <NA>)."""

INTEGER = tuple(c.name for c in TRIALS if c.kind == INTEGER_KIND and c.required)
"""Integer columns that every row has."""

NULLABLE_INTEGER = tuple(c.name for c in TRIALS if c.kind == INTEGER_KIND and not c.required)
"""Integer columns that are NULL when failed or unavailable."""

REAL = tuple(c.name for c in TRIALS if c.kind == REAL_KIND)
"""Real columns (float64, missing = NaN)."""

ADDED = ("max_in_flight", "worker")
"""Columns newer than the first stores and exports: missing (all NULL) in older ones.
They come last and may be NULL, so an older store gains them with ALTER TABLE."""

DTYPES = {
    **{c: "string" for c in TEXT},
    **{c: "int64" for c in INTEGER},
    **{c: "Int64" for c in NULLABLE_INTEGER},
    **{c: "float64" for c in REAL},
}
"""Column -> the pandas dtype the loader casts it to."""

TABLE = "trials"


def sql_declaration(column: Column) -> str:
    """`name TYPE constraints` of one column in CREATE TABLE / ALTER TABLE ADD COLUMN."""
    out = f"{column.name} {column.kind.upper()}"
    if column.key:
        return out + " PRIMARY KEY"
    if column.required:
        out += " NOT NULL"
    if column.allowed:
        out += f" CHECK ({column.name} IN ({', '.join(repr(v) for v in column.allowed)}))"
    return out


def create_table(if_not_exists: bool = False) -> str:
    """The SQL that makes table `trials` of a store."""
    cols = ", ".join(sql_declaration(c) for c in TRIALS)
    return f"CREATE TABLE {'IF NOT EXISTS ' if if_not_exists else ''}{TABLE} ({cols})"


OK = STATUSES[0]
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
