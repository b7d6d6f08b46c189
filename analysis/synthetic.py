"""Synthetic campaigns in the results contract, for tests, benchmarks and fixtures.

The model is simple and says so: a page load is a handshake (2 RTT for
TCP + TLS 1.3, 1 RTT for QUIC) plus a transfer time that each setting scales
by a per-network factor (roughly the paper's findings), times log-normal
noise with a per-network coefficient of variation. A small share of trials
fail with the contract's reasons. Deterministic for a given seed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from results_contract.load import normalise
from results_contract.manifest import parse
from results_contract.schema import (
    ADDED,
    COLUMNS,
    TRIALS,
    create_table,
    sql_declaration,
    trial_id,
)


@dataclass(frozen=True)
class NetworkModel:
    rtt_ms: float
    """Minimum RTT of the profile."""
    scale: float
    """Transfer time relative to DSL."""
    cv: float
    """Coefficient of variation of one trial's times."""
    effect: dict[str, float] = field(default_factory=dict)
    """Setting -> transfer-time factor relative to TCP (1.0)."""
    downlink_mbit: float = 25.0
    loss_percent: float = 0.0
    """Loss each way (the profile's)."""


SETTINGS = ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr")
"""The settings the model has figures for (the paper's; tcp is the reference, 1.0)."""

NETWORKS = {
    "dsl": NetworkModel(24, 1.0, 0.05, {"tcp-plus": 0.94, "tcp-plus-bbr": 0.94,
                                        "quic": 0.935, "quic-bbr": 0.935}, 25.0, 0.0),
    "lte": NetworkModel(74, 2.0, 0.06, {"tcp-plus": 0.94, "tcp-plus-bbr": 0.945,
                                        "quic": 0.93, "quic-bbr": 0.93}, 10.5, 0.0),
    "da2gc": NetworkModel(262, 9.0, 0.10, {"tcp-plus": 0.97, "tcp-plus-bbr": 0.88,
                                           "quic": 0.86, "quic-bbr": 0.80}, 0.468, 3.3),
    "mss": NetworkModel(760, 5.0, 0.10, {"tcp-plus": 0.97, "tcp-plus-bbr": 0.82,
                                         "quic": 0.86, "quic-bbr": 0.80}, 1.89, 6.0),
}

SINGLE_ORIGIN_NAMES = ("gnu.org", "wikipedia.org")
FAILURE_REASONS = ("timeout", "browser-error", "replay-misses", "server-died")
MISSING = np.array(None, dtype=object)
"""A missing value in np.where (an object array, as None would be made)."""


def site_names(count: int, single_origin: int) -> list[str]:
    """`single_origin` single-origin names first (gnu.org, wikipedia.org, ...), then site-NN.example."""
    names = [SINGLE_ORIGIN_NAMES[i] if i < len(SINGLE_ORIGIN_NAMES) else f"single-{i:02d}.example"
             for i in range(single_origin)]
    names += [f"site-{i:02d}.example" for i in range(single_origin, count)]
    return names


def campaign(sites: int = 38, networks: Sequence[str] = ("dsl", "lte", "da2gc", "mss"),
             settings: Sequence[str] = SETTINGS, runs: int = 31,
             single_origin: int = 2, failure_rate: float = 0.01, seed: int = 0,
             name: str = "synthetic") -> pd.DataFrame:
    """A whole campaign's trials (sites x networks x settings x runs rows), normalised."""
    rng = np.random.default_rng(seed)
    names = site_names(sites, single_origin)
    # Per site: transfer work on DSL, share of it before the first visual change,
    # number of origins, requests and bytes.
    work = rng.lognormal(np.log(1500), 0.5, sites)
    fvc_share = rng.uniform(0.25, 0.5, sites)
    origins = np.where(np.arange(sites) < single_origin, 1, rng.integers(2, 40, sites))
    requests = rng.integers(5, 150, sites)
    nbytes = rng.integers(50_000, 4_000_000, sites)

    s, n, p, r = (a.ravel() for a in np.meshgrid(
        np.arange(sites), np.arange(len(networks)), np.arange(len(settings)), np.arange(runs),
        indexing="ij"))
    models = [NETWORKS[x] for x in networks]
    rtt = np.array([m.rtt_ms for m in models])[n]
    cv = np.array([m.cv for m in models])[n]
    scale = np.array([m.scale for m in models])[n]
    effect_table = np.array([[m.effect.get(x, 1.0) for x in settings] for m in models])
    # Each site reacts a little differently to a setting: that spreads the CDFs.
    site_effect = effect_table[None] + rng.normal(0, 0.02, (sites, len(networks), len(settings)))
    site_effect[:, :, [i for i, x in enumerate(settings) if x == "tcp"]] = 1.0
    effect = site_effect[s, n, p]
    handshake = np.where(np.char.startswith(np.array(settings)[p].astype(str), "quic"), 1, 2) * rtt

    sigma = np.sqrt(np.log1p(cv**2))

    def noisy(x: Any) -> Any:
        return x * rng.lognormal(-sigma**2 / 2, sigma)

    transfer = work[s] * scale * effect
    plt_ = noisy(handshake + transfer)
    fvc = np.minimum(noisy(handshake + transfer * fvc_share[s]), plt_)
    si = fvc + 0.55 * (plt_ - fvc)
    vc85 = fvc + 0.75 * (plt_ - fvc)
    lvc = fvc + 0.98 * (plt_ - fvc)
    ttfb = noisy(handshake + 15.0)

    total = len(s)
    failed = rng.random(total) < failure_rate
    quic = np.char.startswith(np.array(settings)[p].astype(str), "quic")
    kinds = np.array(FAILURE_REASONS + ("wrong-protocol",))
    reason = np.where(quic & (rng.random(total) < 0.3), "wrong-protocol",
                      kinds[rng.integers(0, len(FAILURE_REASONS), total)])
    reason = np.where(reason == "server-died",
                      np.where(quic, "server-died: h3server", "server-died: nginx"), reason)
    misses = np.where(rng.random(total) < 0.02, 1, 0)
    version_counts = [json.dumps({"h3" if q else "h2": int(k)}) for q, k in zip(quic, requests[s])]
    wall = np.where(failed, 60.0, plt_ / 1000 + 4.0)
    # Trials interleaved run by run, so started_at follows that order.
    order = np.lexsort((p, s, n, r))
    started = np.empty(total)
    started[order] = np.cumsum(wall[order]) - wall[order]
    started_at = (pd.Timestamp("2024-05-01T08:00:00Z") + pd.to_timedelta(started, unit="s"))

    site_col = np.array(names)[s]
    net_col = np.array(networks)[n]
    set_col = np.array(settings)[p]

    def metric(x: Any) -> Any:
        return np.where(failed, np.nan, np.round(x))

    df = pd.DataFrame({
        "trial_id": [trial_id(a, b, c, int(d))
                     for a, b, c, d in zip(site_col, net_col, set_col, r)],
        "campaign": name,
        "site": site_col,
        "network": net_col,
        "setting": set_col,
        "run": r,
        "status": np.where(failed, "failed", "ok"),
        "reason": pd.Series(np.where(failed, reason, MISSING), dtype="string"),
        "attempt": np.where(failed, 3, np.where(rng.random(total) < 0.01, 2, 1)),
        "started_at": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": np.round(wall, 2),
        "plt_ms": metric(plt_),
        "fvc_ms": metric(fvc),
        "lvc_ms": metric(lvc),
        "vc85_ms": metric(vc85),
        "si_ms": metric(si),
        "ttfb_ms": metric(ttfb),
        "requests": pd.array(np.where(failed, MISSING, requests[s]), dtype="Int64"),
        "bytes": pd.array(np.where(failed, MISSING, nbytes[s]), dtype="Int64"),
        "misses": pd.array(np.where(failed, MISSING, misses), dtype="Int64"),
        "http_versions": pd.Series(np.where(failed, MISSING, version_counts), dtype="string"),
        "rtt_ms": rtt,
        "origins": origins[s],
    })
    # The browser's own timings (drawn last, so the other columns keep their values
    # for a seed): DCL between TTFB and FVC, the first paints around FVC (which the
    # video sees up to a frame later), LCP between FVC and PLT.
    fcp = np.maximum(fvc - rng.uniform(0, 33, total), ttfb + 1)
    fp = fcp - np.where(rng.random(total) < 0.2, rng.uniform(0, 20, total), 0)
    dcl = ttfb + (fcp - ttfb) * rng.uniform(0.6, 1.0, total)
    lcp = fcp + (plt_ - fcp) * rng.uniform(0.1, 0.6, total)
    df["fp_ms"], df["fcp_ms"], df["lcp_ms"], df["dcl_ms"] = (
        metric(fp), metric(fcp), metric(lcp), metric(dcl))
    out = normalise(df, "synthetic campaign")
    out.attrs["synthetic"] = True  # the report flags it
    return out


def trials(rows: Sequence[dict[str, Any]] | pd.DataFrame, **defaults: Any) -> pd.DataFrame:
    """A contract-shaped trials frame from partial rows (for hand-made test cases).

    Each row needs site, network, setting and run; the rest default to an ok
    trial with no metrics, rtt 0 and one origin (override via `defaults`).
    """
    base = {"campaign": "test", "status": "ok", "reason": None, "attempt": 1,
            "started_at": "2024-05-01T08:00:00Z", "wall_s": 1.0, "requests": None,
            "bytes": None, "misses": 0, "http_versions": None, "rtt_ms": 0.0, "origins": 1,
            "trial_id": None, **defaults}
    if isinstance(rows, pd.DataFrame):
        df = rows.copy()
    else:  # per row, so a key given in some rows only still defaults in the others
        df = pd.DataFrame([{**base, **row} for row in rows])
    for column in COLUMNS:
        if column not in df.columns:
            df[column] = base.get(column)
    if df["trial_id"].isna().any():
        df["trial_id"] = [trial_id(*t) for t in zip(df["site"], df["network"], df["setting"],
                                                     df["run"])]
    return normalise(df, "test trials")


def write_sqlite(trials: pd.DataFrame, path: str | Path, without: Sequence[str] = ()) -> None:
    """Write `trials` as a contract store (table trials, made as the campaign store makes
    it) at `path`, which must not exist; `without`: added columns (schema.ADDED) to
    leave out, as a store made before they were added."""
    import sqlite3

    if set(without) - set(ADDED):
        raise ValueError(f"only added columns can be left out: {', '.join(ADDED)}")
    declared = [c for c in TRIALS if c.name not in without]
    columns = [c.name for c in declared]
    rows = trials[columns].astype(object).where(trials[columns].notna(), None)
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE trials ({', '.join(sql_declaration(c) for c in declared)})"
                   if without else create_table())
        db.executemany(f"INSERT INTO trials VALUES ({', '.join('?' * len(columns))})",
                       rows.itertuples(index=False, name=None))
    db.close()


def write_connections(conns: pd.DataFrame, path: str | Path) -> None:
    """Add table `connections` (analysis.statistics.connections.COLUMNS) holding `conns` to the
    store at `path`."""
    import sqlite3

    from analysis.statistics.connections import COLUMNS as CONNECTION_COLUMNS
    from analysis.statistics.connections import TEXT_COLUMNS

    declared = ", ".join(f"{c} {'TEXT' if c in TEXT_COLUMNS else 'REAL'}"
                         for c in CONNECTION_COLUMNS)
    rows = conns[list(CONNECTION_COLUMNS)].astype(object).where(conns.notna(), None)
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE connections ({declared})")
        marks = ", ".join("?" * len(CONNECTION_COLUMNS))
        db.executemany(f"INSERT INTO connections VALUES ({marks})",
                       rows.itertuples(index=False, name=None))
    db.close()


def write_folder(trials: pd.DataFrame, folder: str | Path, manifest: dict[str, Any] | None = None,
                 without: Sequence[str] = (), connections: pd.DataFrame | None = None) -> None:
    """A results folder as `testbed run` leaves it (trials.sqlite, manifest.json) holding
    `trials`; its manifest says synthetic, so reports flag it. `manifest`: its top-level
    keys (networks, protocols, ...; results_contract.manifest, checked; no sessions).
    `folder` must not hold a store yet; `without` as in write_sqlite; `connections`:
    table connections too."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_sqlite(trials, folder / "trials.sqlite", without)
    if connections is not None:
        write_connections(connections, folder / "trials.sqlite")
    names = sorted(set(trials["campaign"].dropna()))
    info = {"campaign": {"name": names[0] if names else "synthetic"}, "synthetic": True,
            "generator": "analysis.synthetic", **(manifest or {})}
    (folder / "manifest.json").write_text(parse(info, folder / "manifest.json").text(),
                                          encoding="utf-8")


def connections(trials: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Table `connections` for the ok trials of `trials` (analysis.statistics.connections.COLUMNS),
    from a model as simple as the trials': each trial's bytes and requests spread over
    a few connections (one per origin, at most six; origin_host names them; whole
    numbers adding up to the trial's) of log-normal sizes; the delivery
    rate a share of the link's, which BBR raises for large objects on lossy paths
    and lowers for small objects on loss-free ones (roughly what a CDN reported);
    retransmissions from the path's loss. Deterministic for a seed."""
    from analysis.statistics.connections import COLUMNS as CONNECTION_COLUMNS

    rng = np.random.default_rng(seed)
    rows = []
    ok = trials[trials["status"] == "ok"]
    for t in ok.itertuples(index=False):
        model = NETWORKS.get(t.network)
        if model is None:
            continue
        quic = str(t.setting).startswith("quic")
        bbr = "bbr" in str(t.setting)
        reqs = int(t.requests) if pd.notna(t.requests) else 6
        count = int(min(max(int(t.origins), 1), 6, max(reqs, 1)))
        total = int(t.bytes) if pd.notna(t.bytes) else 500_000
        weights = rng.lognormal(0, 1.2, count)
        # whole bytes and requests adding up to the trial's (each connection one or more)
        sizes = apportion(total, weights, least=0)
        share = requests_split(max(reqs, count), weights)
        for k in range(count):
            size, n = float(sizes[k]), int(share[k])
            per_request = size / n
            base = model.downlink_mbit * 1e6 * rng.uniform(0.3, 0.8) * min(1.0, per_request / 2e5
                                                                           + 0.2)
            if bbr:
                big = per_request >= 100_000
                base *= (1.25 if big else 1.05) if model.loss_percent > 0 else (
                    1.15 if big else 0.9)
            loss = model.loss_percent / 100
            retrans = size * loss * (0.7 if bbr else 1.0) * rng.uniform(0.5, 1.5)
            duration = size * 8 / base * 1000 + model.rtt_ms * (1 if quic else 2)
            mss = 1350.0 if quic else 1448.0
            cwnd = max(10.0, base / 8 * model.rtt_ms / 1000 / mss * rng.uniform(0.8, 1.6))
            busy = duration * rng.uniform(0.5, 0.9)
            rows.append({
                "trial_id": t.trial_id, "transport": "quic" if quic else "tcp",
                "origin": origin_host(t.site, k), "server_ip": f"10.0.{k}.1",
                "server_port": 443, "client_ip": "10.99.0.2", "client_port": 40000 + k,
                "cc": ("bbr" if bbr else "cubic"),
                "handshake_ms": model.rtt_ms * rng.uniform(1.0, 1.2) if quic else None,
                "duration_ms": duration, "srtt_ms": model.rtt_ms * rng.uniform(1.0, 1.6),
                "min_rtt_ms": model.rtt_ms, "rttvar_ms": model.rtt_ms * 0.1,
                "cwnd_initial_packets": 10.0, "cwnd_packets": round(cwnd),
                "cwnd_bytes": round(cwnd) * mss, "ssthresh_packets": None, "mss_bytes": mss,
                "bytes_sent": round(size + retrans), "bytes_acked": round(size),
                "bytes_retrans": round(retrans), "packets_sent": round((size + retrans) / mss),
                "packets_retrans": round(retrans / mss), "packets_lost": round(retrans / mss),
                "delivery_rate_bps": base, "pacing_rate_bps": base * 1.25,
                "busy_ms": busy, "rwnd_limited_ms": 0.0 if quic else busy * rng.uniform(0, 0.05),
                "sndbuf_limited_ms": 0.0 if quic else busy * rng.uniform(0, 0.1),
                "bbr_bw_bps": base if bbr and not quic else None,
                "bbr_min_rtt_ms": model.rtt_ms if bbr and not quic else None, "requests": n})
    return pd.DataFrame(rows, columns=list(CONNECTION_COLUMNS))


def apportion(total: int, weights: np.ndarray, least: int = 0) -> np.ndarray:
    """`total` split in whole numbers in proportion to `weights`, each at least `least`,
    adding up to `total` exactly (largest remainders get the leftover units)."""
    spare = total - least * len(weights)
    raw = spare * weights / weights.sum()
    out: np.ndarray = np.floor(raw).astype(int)
    order = np.argsort(-(raw - out), kind="stable")
    out[order[: spare - int(out.sum())]] += 1
    return np.asarray(out + least)


def requests_split(total: int, weights: np.ndarray) -> np.ndarray:
    """`total` requests over connections of these weights: each its rounded share, at
    least one, the busiest one taking what rounding left over or took too many (so a
    small connection keeps a single request of its bytes, as a lone large object)."""
    share = np.maximum(np.round(total * weights / weights.sum()), 1).astype(int)
    busiest = int(np.argmax(share))
    share[busiest] += total - int(share.sum())
    return share if share[busiest] >= 1 else apportion(total, weights, least=1)


def origin_host(site: str, k: int) -> str:
    """The host of a trial's k-th connection: the page's own, then others of the site."""
    return f"www.{site}" if k == 0 else f"cdn{k}.{site}"


def trial_har(trial: Any, conns: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """The HAR of one ok trial that agrees with its row and its rows of table
    `connections` (connections()), as a waterfall is read against them: one entry per
    request of the row over the HTTP versions it counts; per connection row one HAR
    connection (its client port as Chromium's connection id, its server IP and host),
    carrying that row's requests and bytes (one object a third of the page's bytes,
    for the BBR section's largest object); the page starting at the row's
    started_at, the document's first byte at its TTFB (a new connection's entry
    spends 1 RTT connecting over QUIC, 2 over TCP + TLS), the last response ending
    before its PLT, the page's onLoad its PLT and onContentLoad its DCL."""
    t = pd.Series(trial)
    rng = np.random.default_rng(seed)
    versions = [v for v, n in json.loads(t["http_versions"]).items() for _ in range(int(n))]
    conns = conns.reset_index(drop=True)
    if len(versions) != int(t["requests"]) or int(conns["requests"].sum()) != len(versions):
        raise ValueError(f"{t['trial_id']}: its requests, HTTP versions and connections "
                         "do not add up")
    rtt, plt_ms, ttfb = float(t["rtt_ms"]), float(t["plt_ms"]), float(t["ttfb_ms"])
    quic = str(t["setting"]).startswith("quic")
    model = NETWORKS.get(str(t["network"]))
    rate = (model.downlink_mbit if model else 25.0) * 1e6 / 8 / 1000  # bytes per ms
    end = plt_ms - 5.0  # the last response, just before the load event
    planned = []  # (connection row, its request number, bytes)
    biggest = int(conns["bytes_acked"].idxmax())
    for k, c in conns.iterrows():
        n, carried = int(c["requests"]), int(c["bytes_acked"])
        weights = rng.lognormal(0, 1.0, n)
        if k == biggest and n >= 2:  # one object of a third of the page, as har() has
            big = min(float(t["bytes"]) / 3, 0.8 * carried)
            weights = np.append(weights[1:] / weights[1:].sum() * (carried - big), big)
        planned += [(k, j, int(b)) for j, b in enumerate(apportion(carried, weights))]
    entries = []
    doc_end = ttfb
    for i, (k, j, size) in enumerate(planned):
        c = conns.loc[k]
        first = j == 0
        connect = (rtt if quic else 2 * rtt) if first else -1.0
        ssl = rtt if first else -1.0
        blocked, dns, send = 1.0, (0.1 if first else -1.0), 0.2
        setup = blocked + max(dns, 0) + max(connect, 0) + send
        receive = size / rate
        if i == 0:  # the document: its first byte at the row's TTFB
            wait = max(ttfb - setup, 1.0)
            receive = min(receive, max(end - setup - wait, 1.0) / 4)
            start, doc_end = 0.0, setup + wait + receive
        else:
            wait = rtt * float(rng.uniform(1.0, 1.5))
            room = end - doc_end - setup - wait
            receive = min(receive, max(room, 1.0))
            start = doc_end + float(rng.uniform(0, 1)) * max(room - receive, 0.0)
        entries.append({"at": start, "k": k, "size": size, "first": first,
                        "timings": {"blocked": blocked, "dns": dns, "connect": connect,
                                    "ssl": ssl, "send": send, "wait": wait,
                                    "receive": receive}})
    # the largest later response on an open connection is the one the load event
    # waits for: it ends at `end`
    rest = [e for e in entries[1:] if not e["first"]] or entries[1:]
    if rest:
        last = max(rest, key=lambda e: (e["size"], -e["at"]))
        last["at"] = max(doc_end, end - _har_time(last["timings"]))
    # a connection's later requests go after its first (which opened it), all of them
    # done by `end`
    opened = {e["k"]: e["at"] for e in entries if e["first"]}
    for e in entries:
        e["at"] = max(e["at"], opened[e["k"]])
        over = e["at"] + _har_time(e["timings"]) - end
        if over > 0:
            e["timings"]["receive"] = max(e["timings"]["receive"] - over, 0.1)
    start = pd.Timestamp(t["started_at"])
    out: list[dict[str, Any]] = []
    for e, version in zip(sorted(entries, key=lambda e: e["at"]), versions):
        c = conns.loc[e["k"]]
        number = len(out)
        url = f"https://{c['origin']}/" + ("" if number == 0 else f"asset-{number}")
        out.append({
            "pageref": "page_1",
            "startedDateTime": (start + pd.Timedelta(milliseconds=e["at"])).isoformat()
            .replace("+00:00", "Z"),
            "time": _har_time(e["timings"]),
            "connection": str(int(c["client_port"])), "serverIPAddress": str(c["server_ip"]),
            "request": {"method": "GET", "url": url},
            "response": {"status": 200, "httpVersion": version, "bodySize": e["size"],
                         "_transferSize": e["size"],
                         "content": {"size": e["size"],
                                     "mimeType": "text/html" if number == 0 else "text/plain"}},
            "timings": e["timings"]})
    return {"log": {"version": "1.2", "creator": {"name": "analysis.synthetic"},
                    "pages": [{"id": "page_1",
                               "startedDateTime": start.isoformat().replace("+00:00", "Z"),
                               "title": f"https://www.{t['site']}/ run 1",
                               "pageTimings": {"onContentLoad": float(t["dcl_ms"]),
                                               "onLoad": plt_ms}}],
                    "entries": out}}


def _har_time(timings: dict[str, float]) -> float:
    """An entry's total time: its phases, ssl inside connect (HAR 1.2), -1 none."""
    return sum(max(v, 0.0) for p, v in timings.items() if p != "ssl")


def manifest_networks(networks: Sequence[str]) -> dict[str, Any]:
    """The `networks` entry of a campaign manifest for the model's networks (the
    profile figures the analysis reads: RTT, rates, loss)."""
    return {n: {"profile": {"min_rtt_ms": NETWORKS[n].rtt_ms,
                            "downlink_mbit": NETWORKS[n].downlink_mbit,
                            "uplink_loss_percent": NETWORKS[n].loss_percent,
                            "downlink_loss_percent": NETWORKS[n].loss_percent}}
            for n in networks if n in NETWORKS}


PROTOCOLS = {"tcp": ("tcp", "cubic", 10, False), "tcp-plus": ("tcp", "cubic", 32, True),
             "tcp-plus-bbr": ("tcp", "bbr", 32, True), "quic": ("quic", "cubic", 32, True),
             "quic-bbr": ("quic", "bbr", 32, True)}
"""The paper's settings as profiles/protocols/*.toml define them: stack, congestion
control, initial window (packets), pacing."""


def manifest_protocols(settings: Sequence[str]) -> dict[str, Any]:
    """The `protocols` entry of a campaign manifest for the paper's settings (the
    profile figures the report's setup table reads)."""
    keys = ("stack", "congestion_control", "initial_window_packets", "pacing")
    return {s: {"stack": PROTOCOLS[s][0], "profile": dict(zip(keys, PROTOCOLS[s]))}
            for s in settings if s in PROTOCOLS}


def har(site: str, page_bytes: int, requests: int, seed: int = 0,
        version: str = "h2") -> dict[str, Any]:
    """A small HAR of one page load of `site`: `requests` entries whose bodies add up to
    about `page_bytes` (one object of a third of it), timings in the HAR's phases, every
    response over HTTP `version` (h2, h3)."""
    rng = np.random.default_rng(seed)
    requests = max(int(requests), 2)
    sizes = rng.lognormal(0, 1.0, requests - 1)
    sizes = np.append(sizes / sizes.sum() * page_bytes * 2 / 3, page_bytes / 3).astype(int)
    start = pd.Timestamp("2024-05-01T08:00:00Z")
    entries, at = [], 0.0
    for i, size in enumerate(sizes):
        host = f"www.{site}" if i % 3 == 0 else f"static.{site}"
        wait, receive = float(rng.uniform(10, 60)), float(size / 3000)
        first = i < 2
        entries.append({
            "pageref": "page_1",
            "startedDateTime": (start + pd.Timedelta(milliseconds=at)).isoformat()
            .replace("+00:00", "Z"),
            "time": wait + receive, "connection": str(1 + i % 2), "serverIPAddress": "10.0.0.1",
            "request": {"method": "GET", "url": f"https://{host}/asset-{i}"},
            "response": {"status": 200, "httpVersion": version, "bodySize": int(size),
                         "_transferSize": int(size) + 100,
                         "content": {"size": int(size), "mimeType": "text/plain"}},
            "timings": {"blocked": 1.0, "dns": 0.1, "connect": 40.0 if first else -1,
                        "ssl": 20.0 if first else -1, "send": 0.2, "wait": wait,
                        "receive": receive}})
        at += float(rng.uniform(0, 40)) if i else 5.0
    return {"log": {"version": "1.2", "creator": {"name": "analysis.synthetic"},
                    "pages": [{"id": "page_1", "startedDateTime": start.isoformat()
                               .replace("+00:00", "Z"), "title": f"https://www.{site}/ run 1",
                               "pageTimings": {}}],
                    "entries": entries}}


def blocked(campaigns: int, sites: int = 20, runs: int = 10, effects: Sequence[float] = (0.0, 0.0),
            site_sd: float = 0.02, block_sd: float = 0.03, noise_sd: float = 0.05,
            base_ms: float = 1500.0, seed: int = 0) -> np.ndarray:
    """Many small campaigns at once, with a known truth: values (ms) of shape
    (campaigns, sites, settings, runs). log(value) = log(site's base) + effects[k]
    + the site's own reaction to setting k (normal, SD `site_sd`, so site-level
    effects spread around effects[k]) + a shock shared by the settings of one run
    block (SD `block_sd`) + noise (SD `noise_sd`). The true across-site effect of
    setting k against setting 0 is effects[k] - effects[0] on the log scale."""
    rng = np.random.default_rng(seed)
    k = len(effects)
    base = np.log(base_ms) + rng.normal(0, 0.5, (campaigns, sites, 1, 1))
    react = rng.normal(0, site_sd, (campaigns, sites, k, 1))
    block = rng.normal(0, block_sd, (campaigns, sites, 1, runs))
    noise = rng.normal(0, noise_sd, (campaigns, sites, k, runs))
    result: np.ndarray = np.exp(base + np.asarray(effects, dtype=float)[:, None] + react + block
                                + noise)
    return result


def blocked_measurements(values: np.ndarray, settings: Sequence[str] = ("tcp-plus", "tcp"),
                         network: str = "dsl", metric: str = "plt") -> pd.DataFrame:
    """One campaign of `blocked` (sites, settings, runs) as analysis.statistics.stats.measurements
    rows: site, network, protocol, run, metric, value."""
    sites, k, runs = values.shape
    s, p, r = (a.ravel() for a in np.meshgrid(np.arange(sites), np.arange(k), np.arange(runs),
                                              indexing="ij"))
    return pd.DataFrame({"site": [f"site-{i:02d}.example" for i in s], "network": network,
                         "setting": np.asarray(settings)[p], "run": r, "metric": metric,
                         "value": values.reshape(-1)})
