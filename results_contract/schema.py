"""The campaign results contract, and display names.

One row per finished trial; `trials.sqlite`, its CSV export and its Parquet
export all have exactly the columns of TRIALS, in its order. The campaign
store (testbed.campaign.store.store) builds its table and its Row from TRIALS; the
loader casts every source to DTYPES, so the three read back as identical
DataFrames.

A results folder:

    results/<campaign>/
      trials.sqlite              one row per finished trial (TRIALS); table connections:
                                 one row per transport connection per trial (CONNECTIONS);
                                 table stops: adaptive runs, why each site x network
                                 got no more runs (STOPS)
      manifest.json              versions, hashes, calibration, one entry per session
                                 (one `testbed run` invocation)
      run.lock                   held by the one `testbed run` writing here
      logs/                      Browsertime's log of each block
      trials/<trial_id>/         the trial's files: browsertime.json, browsertime.har.gz,
                                 visualmetrics.json, trial.json (video.mp4 if kept,
                                 connections.json with telemetry, captures if asked)

A trial's folder is named exactly by its trial_id,
`<site>+<network>+<setting>+<run>` (trial_id(); `+firefox` follows for a Firefox
trial, so Chromium's ids are those of every older store): every label matches LABEL
(letters, digits, `.`, `_`, `-`; at most 64 characters; starting with a letter
or digit; no name Windows reserves), so `+` separates the four parts without
ambiguity, no part can be `..` or hold a `/`, and the name needs no quoting in a
shell and is valid on Windows. Compare and the analysis match trials on their
site, network, setting, run and client columns (docs/glossary.md: one word, one
meaning; RENAMED: the columns' older names, still read).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from results_contract import profiles_meta


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

SEPARATOR = "+"
"""Between the parts of a trial_id (not a character LABEL allows)."""
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What a site, network or setting name must be (full match) to name trials."""
WINDOWS_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                              *(f"LPT{i}" for i in range(1, 10))})
"""Names Windows refuses for a file, also with an extension (`nul.txt`)."""


def label_problem(name: str) -> str | None:
    """Why `name` cannot be a site, network or setting label, or None if it can."""
    if not LABEL.fullmatch(name):
        return ("expected at most 64 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit")
    if name.split(".")[0].upper() in WINDOWS_RESERVED:
        return "expected a name Windows does not reserve (CON, PRN, AUX, NUL, COM1, LPT1, ...)"
    return None


Client = Literal["chromium", "firefox"]
CLIENTS: tuple[Client, ...] = ("chromium", "firefox")
"""The values of column `client`; the first is the default (and every older store's)."""
DEFAULT_CLIENT: Client = CLIENTS[0]


def trial_id(site: str, network: str, setting: str, run: int,
             client: str = DEFAULT_CLIENT) -> str:
    """A new trial's id and folder name: `<site>+<network>+<setting>+<run>` for
    Chromium (as in every store made before the second client), with `+<client>` after
    it for another client: `<site>+<network>+<setting>+<run>+firefox`."""
    parts = [site, network, setting, str(run)]
    if client != DEFAULT_CLIENT:
        parts.append(client)
    return SEPARATOR.join(parts)

STATUSES = ("ok", "failed")
"""The values of column `status`."""

TRIALS = (
    Column("trial_id", TEXT_KIND, True,
           "`<site>+<network>+<setting>+<run>`; also the name "
           "of the trial's folder, trials/<trial_id>/.", key=True),
    Column("campaign", TEXT_KIND, True, "The campaign file's name."),
    Column("site", TEXT_KIND, True, "The recording's name."),
    Column("network", TEXT_KIND, True, "The network profile's name."),
    Column("setting", TEXT_KIND, True, "The setting (`protocol` in older stores)."),
    Column("run", INTEGER_KIND, True, "Run number, from 0."),
    Column("status", TEXT_KIND, True, "Only ok trials enter statistics.", allowed=STATUSES),
    Column("reason", TEXT_KIND, False, "Why a trial failed (timeout, wrong-protocol, ...)."),
    Column("attempt", INTEGER_KIND, True, "Which attempt was stored (1 = the first)."),
    Column("started_at", TEXT_KIND, True, "When the trial started (ISO 8601, UTC)."),
    Column("wall_s", REAL_KIND, True, "The trial's wall-clock time in seconds."),
    Column("plt_ms", REAL_KIND, False,
           "Page load time: the navigation timing's `loadEventStart`, 1 ms steps."),
    Column("fvc_ms", REAL_KIND, False,
           "First visual change, from the screen recording: steps of one video frame "
           "(16.7 ms at 60 fps; 33.3 ms in results recorded at 30 fps)."),
    Column("lvc_ms", REAL_KIND, False, "Last visual change (video frames)."),
    Column("vc85_ms", REAL_KIND, False, "Visual complete 85 % (video frames)."),
    Column("si_ms", REAL_KIND, False, "Speed index (from video frames)."),
    Column("ttfb_ms", REAL_KIND, False,
           "Time to first byte: the main document's `responseStart`, 1 ms steps."),
    Column("requests", INTEGER_KIND, False, "Requests the browser made."),
    Column("bytes", INTEGER_KIND, False, "Bytes the replay servers sent."),
    Column("misses", INTEGER_KIND, False, "Requests the replay had no response for."),
    Column("http_versions", TEXT_KIND, False,
           "JSON: HTTP version -> requests (`protocols` in older stores)."),
    Column("rtt_ms", REAL_KIND, True, "The network profile's minimum RTT."),
    Column("origins", INTEGER_KIND, True, "Origins in the recording."),
    Column("max_in_flight", TEXT_KIND, False,
           "JSON object host -> the most requests to that host on the wire at the same "
           "time (from the trial's HAR timings, from sending the request to the "
           "response's last byte; see testbed.measure.trial_har.max_in_flight)."),
    Column("fp_ms", REAL_KIND, False,
           "First paint: the browser's paint timing (`first-paint`), 1 ms steps; NULL when "
           "the browser reported none."),
    Column("fcp_ms", REAL_KIND, False,
           "First contentful paint: the browser's paint timing (`first-contentful-paint`), "
           "1 ms steps; NULL when the browser reported none."),
    Column("lcp_ms", REAL_KIND, False,
           "Largest contentful paint: the last `largest-contentful-paint` entry's start "
           "time when the load ended, 1 ms steps; NULL on a page without a contentful "
           "element."),
    Column("dcl_ms", REAL_KIND, False,
           "DOMContentLoaded: the navigation timing's `domContentLoadedEventStart`, 1 ms "
           "steps."),
    Column("worker", TEXT_KIND, False,
           "Who measured the trial: `<host>/<worker id>` (`<host>/local` for a campaign "
           "run in the coordinator's own process, see `testbed run --scheduler`)."),
    Column("visit", TEXT_KIND, False,
           "`first` (a fresh browser) or `warm` (the page loaded once before, unmeasured, "
           "in the same browser; HTTP cache cleared, connections closed, TLS / QUIC "
           "sessions kept); NULL in stores made before visits: first."),
    Column("tls_resumed", INTEGER_KIND, False,
           "1 when every connection that carried a request of the load resumed a TLS "
           "session (the server says: nginx's `$ssl_session_reused`, quiche's "
           "`is_resumed`), else 0; NULL when unknown."),
    Column("early_data", INTEGER_KIND, False,
           "TCP: 1 when nginx answered at least one request of the load from TLS 1.3 "
           "early data (`$ssl_early_data`), else 0; NULL for QUIC or when unknown."),
    Column("quic_0rtt", INTEGER_KIND, False,
           "QUIC: 1 when h3server answered at least one request of the load in 0-RTT "
           "(early data accepted), else 0; NULL for TCP or when unknown."),
    Column("lane", INTEGER_KIND, False,
           "The lane that measured the trial, 0, 1, ... on its worker (`testbed run "
           "--lanes`: blocks measured at once, each in a replay topology of its own); 0 "
           "with one lane; NULL in stores made before lanes (one lane)."),
    Column("client", TEXT_KIND, False,
           "The browser that loaded the page: `chromium` or `firefox`; NULL in stores "
           "made before the second client: chromium. Comparisons are made within a client.",
           allowed=CLIENTS),
    Column("cpu_busy", REAL_KIND, False,
           "Share (0..1) of the whole machine's CPU time busy during the page load (from "
           "right before the load's go to right after its done), from `/proc/stat`; NULL "
           "in stores made before it."),
    Column("cpu_steal", REAL_KIND, False,
           "Share (0..1) of the machine's CPU time the hypervisor stole during the load."),
    Column("browser_cpu_s", REAL_KIND, False,
           "CPU seconds (user + system) of the browser's process tree during the load; "
           "NULL when unknown (the browser ended)."),
    Column("server_cpu_s", REAL_KIND, False,
           "CPU seconds of the replay servers' process trees (nginx + uWSGI, or "
           "h3server) during the load; like browser_cpu_s in 10 ms clock ticks."),
    Column("loadavg_1m", REAL_KIND, False, "The 1-minute load average at the load's end."),
    Column("load_wait_s", REAL_KIND, False,
           "Seconds the trial waited for the machine to be below the campaign's "
           "`max_load_before_start`; NULL without one."),
    Column("load_over_limit", INTEGER_KIND, False,
           "1 when the machine was still above `max_load_before_start` after the longest "
           "wait (measured anyway), else 0; NULL without one."),
    Column("missing_resources", INTEGER_KIND, False,
           "How many of the resources the recording's page needs (its top document's "
           "recorded URLs with a status below 400, docs/completeness.md) the trial did "
           "not obtain: 0 for every ok trial; the first few are named in `reason` and all "
           "in the trial folder's evidence file. NULL when not judged (no HAR, or a "
           "recording of several loads that does not say which asked for what) or in "
           "stores made before it."),
    Column("after_onload_resources", INTEGER_KIND, False,
           "How many URLs the trial obtained that it asked for after its load event (the "
           "page's post-load work the window waited for; listed in the evidence file). NULL "
           "when not judged or in stores made before it."),
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

LOAD_COLUMNS = ("cpu_busy", "cpu_steal", "browser_cpu_s", "server_cpu_s", "loadavg_1m",
                "load_wait_s", "load_over_limit")
"""How busy the machine was during the load (testbed.measure.load): not metrics, but
what tells whether a setting lost for want of CPU."""

COMPLETENESS_COLUMNS = ("missing_resources", "after_onload_resources")
"""What a trial obtained of the recording's page (testbed.measure.completeness)."""

ADDED = ("max_in_flight", "fp_ms", "fcp_ms", "lcp_ms", "dcl_ms", "worker", "visit",
         "tls_resumed", "early_data", "quic_0rtt", "lane", "client", *LOAD_COLUMNS,
         *COMPLETENESS_COLUMNS)
"""Columns newer than the first stores and exports: missing (all NULL) in older ones.
They come last and may be NULL, so an older store gains them with ALTER TABLE."""

RENAMED = {"setting": "protocol", "http_versions": "protocols"}
"""Column -> its name in older stores and exports (docs/glossary.md): the loaders read
the old name as the new one, and a store a campaign resumes into is renamed in place."""


def stored_name(column: str, have: Iterable[str]) -> str | None:
    """The name `column` has among the columns `have` of a table: itself, its old name
    (RENAMED), or None when it is neither."""
    have = set(have)
    if column in have:
        return column
    old = RENAMED.get(column)
    return old if old is not None and old in have else None


def select_list(columns: Iterable[str], have: Iterable[str]) -> str:
    """The SQL select list of `columns` from a table with the columns `have`: an old
    name read as its new one (`protocol AS setting`), a column it lacks as NULL."""
    have = set(have)
    out = []
    for c in columns:
        name = stored_name(c, have)
        out.append(c if name == c else f"NULL AS {c}" if name is None else f"{name} AS {c}")
    return ", ".join(out)


def renamed(columns: Iterable[str]) -> dict[str, str]:
    """Old name -> new name for the old names among `columns` whose new name is not."""
    columns = set(columns)
    return {old: new for new, old in RENAMED.items() if old in columns and new not in columns}

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


TRANSPORTS = ("tcp", "quic")
"""The values of column `transport` of table `connections`."""

CONNECTIONS = (
    Column("trial_id", TEXT_KIND, True, "The trial (table trials) the connection served."),
    Column("transport", TEXT_KIND, True, "tcp or quic.", allowed=TRANSPORTS),
    Column("origin", TEXT_KIND, False,
           "The recorded host name(s) served at server_ip, comma-joined."),
    Column("server_ip", TEXT_KIND, True, "The replay server's address."),
    Column("server_port", INTEGER_KIND, True, "The replay server's port."),
    Column("client_ip", TEXT_KIND, False, "The client as the server saw it."),
    Column("client_port", INTEGER_KIND, False, "The client's port as the server saw it."),
    Column("cc", TEXT_KIND, False,
           "The server's congestion control as the kernel or quiche names it (cubic, bbr, "
           "bbr2_gcongestion, ...)."),
    Column("handshake_ms", REAL_KIND, False, "QUIC: handshake duration; NULL for TCP."),
    Column("duration_ms", REAL_KIND, False,
           "How long the connection lived (TCP: from the first reading to the kernel's "
           "destruction of the socket, so short by up to one sampling interval; NULL if "
           "never sampled)."),
    Column("srtt_ms", REAL_KIND, False, "Smoothed RTT at the last reading."),
    Column("min_rtt_ms", REAL_KIND, False, "Minimum RTT seen."),
    Column("rttvar_ms", REAL_KIND, False, "RTT variation at the last reading."),
    Column("cwnd_initial_packets", INTEGER_KIND, False,
           "Congestion window before the first data was acknowledged (TCP: a reading with "
           "bytes_acked <= 1; NULL when no reading came that early); QUIC: quiche's "
           "initial window / max datagram size."),
    Column("cwnd_packets", INTEGER_KIND, False, "Congestion window at the last reading."),
    Column("cwnd_bytes", INTEGER_KIND, False, "cwnd_packets x mss_bytes (QUIC: quiche's)."),
    Column("ssthresh_packets", INTEGER_KIND, False,
           "Slow-start threshold (TCP; NULL while still in the initial slow start)."),
    Column("mss_bytes", INTEGER_KIND, False, "TCP: snd_mss; QUIC: max datagram size."),
    Column("bytes_sent", INTEGER_KIND, False, "Bytes the server sent (with retransmissions)."),
    Column("bytes_acked", INTEGER_KIND, False, "Bytes the client acknowledged (TCP)."),
    Column("bytes_retrans", INTEGER_KIND, False,
           "Bytes retransmitted (TCP; QUIC: stream bytes retransmitted)."),
    Column("packets_sent", INTEGER_KIND, False, "Packets (TCP: segments) sent."),
    Column("packets_retrans", INTEGER_KIND, False,
           "Packets retransmitted (TCP: tcpi_total_retrans)."),
    Column("packets_lost", INTEGER_KIND, False,
           "QUIC: packets declared lost; TCP: tcpi_lost at the last reading (segments "
           "marked lost and not yet repaired, usually 0 at the end: see packets_retrans)."),
    Column("delivery_rate_bps", REAL_KIND, False,
           "Delivery rate, bits per second: TCP the highest tcpi_delivery_rate sample of "
           "its readings, QUIC quiche's latest estimate."),
    Column("pacing_rate_bps", REAL_KIND, False, "Pacing rate, bits per second (TCP)."),
    Column("busy_ms", REAL_KIND, False, "TCP: time with data in flight (tcpi_busy_time)."),
    Column("rwnd_limited_ms", REAL_KIND, False,
           "TCP: time limited by the client's receive window."),
    Column("sndbuf_limited_ms", REAL_KIND, False,
           "TCP: time limited by the server's send buffer."),
    Column("bbr_bw_bps", REAL_KIND, False, "TCP BBR: its bandwidth estimate, bits per second."),
    Column("bbr_min_rtt_ms", REAL_KIND, False, "TCP BBR: its min-RTT estimate."),
    Column("requests", INTEGER_KIND, False,
           "Requests served on the connection (QUIC); NULL if unknown (TCP)."),
)
"""Every column of table `connections` (one row per transport connection per trial), in
order; its exports have exactly these columns."""

CONNECTION_COLUMNS = tuple(c.name for c in CONNECTIONS)

CONNECTION_DTYPES = {
    c.name: ("string" if c.kind == TEXT_KIND else "Int64" if c.kind == INTEGER_KIND
             else "float64")
    for c in CONNECTIONS}
"""Column of `connections` -> the pandas dtype the loader casts it to."""

CONNECTIONS_TABLE = "connections"


def create_connections_table(if_not_exists: bool = False) -> str:
    """The SQL that makes table `connections` of a store (rows go with their trial)."""
    cols = ", ".join(sql_declaration(c) for c in CONNECTIONS)
    return (f"CREATE TABLE {'IF NOT EXISTS ' if if_not_exists else ''}{CONNECTIONS_TABLE} "
            f"({cols}, FOREIGN KEY (trial_id) REFERENCES {TABLE}(trial_id) ON DELETE CASCADE)")


STOP_REASONS = ("precision", "max")
"""Why a group of an adaptive campaign got no more runs (column `reason` of `stops`)."""

STOPS = (
    Column("site", TEXT_KIND, True, "The recording's name."),
    Column("network", TEXT_KIND, True, "The network profile's name."),
    Column("runs", INTEGER_KIND, True,
           "Runs the site x network got (0 .. runs-1; each setting's trials of those runs "
           "are in table trials)."),
    Column("reason", TEXT_KIND, True,
           "`precision`: before run `runs`, every setting's 95 % interval of the PLT mean "
           "over its ok trials was within the campaign's precision; `max`: every run of the "
           "campaign's maximum was done.", allowed=STOP_REASONS),
    Column("precise", INTEGER_KIND, True,
           "1 when every setting's interval met the precision after those runs, else 0."),
    Column("worst_percent", REAL_KIND, False,
           "The widest half-width of a setting's interval, in % of its mean."),
    Column("worst_ms", REAL_KIND, False, "The widest half-width of a setting's interval, ms."),
)
"""Every column of table `stops` of an adaptive campaign's store (testbed.campaign.plan.adaptive:
one row per site x network that got no more runs; empty with a fixed number of runs)."""

STOPS_TABLE = "stops"


def create_stops_table(if_not_exists: bool = True) -> str:
    """The SQL that makes table `stops` of a store (one row per site and network)."""
    cols = ", ".join(sql_declaration(c) for c in STOPS)
    return (f"CREATE TABLE {'IF NOT EXISTS ' if if_not_exists else ''}{STOPS_TABLE} "
            f"({cols}, PRIMARY KEY (site, network))")


OK = STATUSES[0]
"""The only status whose trials enter statistics."""

METRICS = {
    "plt": "plt_ms",
    "fvc": "fvc_ms",
    "lvc": "lvc_ms",
    "vc85": "vc85_ms",
    "si": "si_ms",
    "fp": "fp_ms",
    "fcp": "fcp_ms",
    "lcp": "lcp_ms",
    "dcl": "dcl_ms",
    "ttfb": "ttfb_ms",
}
"""Metric name -> column (all in milliseconds)."""

METRIC_LABELS = {"plt": "PLT", "fvc": "FVC", "lvc": "LVC", "vc85": "VC85", "si": "SI",
                 "fp": "FP", "fcp": "FCP", "lcp": "LCP", "dcl": "DCL", "ttfb": "TTFB"}

METRIC_NAMES = {"plt": "Page Load Time", "fvc": "First Visual Change",
                "lvc": "Last Visual Change", "vc85": "Visual Complete 85 %", "si": "Speed Index",
                "fp": "First Paint", "fcp": "First Contentful Paint",
                "lcp": "Largest Contentful Paint", "dcl": "DOMContentLoaded",
                "ttfb": "Time To First Byte"}
"""Metric name -> its name spelled out (the report says each once, then abbreviates)."""

BROWSER_METRICS = ("fp", "fcp", "lcp", "dcl")
"""The browser's own paint and DOM timings (1 ms steps, not video frames); NULL in
stores made before they were recorded, and where the browser reported none."""

ANALYSED_METRICS = ("plt", "fvc", "lvc", "vc85", "si", *BROWSER_METRICS)
"""Metrics with statistics by default: the paper's five, then the browser's timings
(a metric without values, as in older stores, is left out of every table)."""

PLOTTED_METRICS = ("plt", "fvc", "vc85", "si", "fcp", "lcp")
"""Metrics plotted by default: LVC is computed but, as in the paper, not plotted; of the
browser's timings FCP (beside FVC) and LCP."""


def label(name: str) -> str:
    """Display label of a setting, network or metric name (the name itself if unknown):
    a profile's own `label` (results_contract.profiles_meta.current: the store's
    manifest's, else the checkout's profiles/), a metric's METRIC_LABELS."""
    return profiles_meta.current().label(name) or METRIC_LABELS.get(name) or name


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
    """Distinct setting names in the order tables show them (profiles/comparisons.toml's
    setting_order, the rest by name)."""
    return ordered(names, profiles_meta.current().setting_order)


def networks_in(names: Iterable[str]) -> list[str]:
    """Distinct network names in the order tables show them (network_order, the rest by
    name)."""
    return ordered(names, profiles_meta.current().network_order)
