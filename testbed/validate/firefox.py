"""Firefox's protocol per origin, proven from its own log and from the wire.

Pure functions over a Firefox trial's files (its campaign's `capture` holding
`mozlog` and `pcap`):

- mozlog (Firefox's HTTP log, testbed.measure.captures.MOZLOG_MODULES): every
  HTTP/3 session Firefox opened (`Http3Session::Init origin=HOST, alpn=h3`),
  every HTTP/2 session (`Http2Session::Http2Session`, its origin in the TLS
  set-up logged after it: `TlsHandshaker::SetupSSL ... [tlsflags...]HOST:443`)
  and every request's Host header; origin_protocols() gives origin ->
  {h3/h2: sessions, requests: n}. An origin with requests but no session of its
  own was coalesced onto another origin's connection (Firefox does that over
  HTTP/2 for origins on one IP whose certificate covers both);
- the wire (tcpdump on the server's link): per server IP, TCP connections to 443
  (SYNs) and QUIC datagrams to UDP 443, and any DNS (port 53): wire_by_ip();
- the HAR (Firefox's own report over WebDriver BiDi): origin -> {httpVersion: n}.

judge() turns them into rows: for every recorded origin, the stack the setting
claims (h2 over TCP, or h3 over QUIC) in the log, in the HAR and on the wire at
its IP, the other transport absent there; no name asked on the wire; and the
most requests in flight per host (the HAR), shown.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from results_contract import trial_folder
from testbed.measure import trial_har
from testbed.validate import evidence
from testbed.validate.verdict import Row

H3_SESSION = re.compile(r"Http3Session::Init origin=(?P<host>[^,\s]+), alpn=(?P<alpn>[^,\s]+)")
"""An HTTP/3 session to an origin (Firefox 153's log, nsHttp:4)."""
H2_SESSION = re.compile(r"Http2Session::Http2Session (?P<session>[0-9a-f]+)")
"""An HTTP/2 session; its origin is the TLS set-up logged right after it."""
SETUP_SSL = re.compile(r"TlsHandshaker::SetupSSL \S+ caps=\S+ (?P<ci>\S+)")
CI_ORIGIN = re.compile(r"\](?P<host>[^\s:\]\[<>^]+):(?P<port>\d+)")
"""The origin in a connection entry's key: `.S.......[tlsflags0x00000000]host:443^...`."""
HOST_HEADER = re.compile(r"\[Parent [^\]]*\]: \S+/nsHttp\s+Host: (?P<host>[^\s:]+)(?::(?P<port>\d+))?$",
                         re.MULTILINE)
"""A request's Host header, as the parent process logs every request it sends."""
H2_LOOKAHEAD = 8
"""Lines after an HTTP/2 session's creation in which its TLS set-up (origin) is logged."""


def origin_of_ci(ci: str) -> str | None:
    m = CI_ORIGIN.search(ci)
    return f"{m['host']}:{m['port']}" if m else None


def origin_protocols(log: str) -> dict[str, Counter]:
    """Origin (host:port) -> Counter of what Firefox's HTTP log shows for it: sessions
    it opened to it ("h3", "h2") and requests it sent to it ("requests", from the
    logged Host headers; an origin with requests and no session of its own was
    coalesced onto another origin's connection)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for m in H3_SESSION.finditer(log):
        out[f"{m['host']}:443"]["h3" if m["alpn"].startswith("h3") else m["alpn"]] += 1
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "Http2Session::Http2Session" not in line or not H2_SESSION.search(line):
            continue
        for later in lines[i + 1:i + 1 + H2_LOOKAHEAD]:
            setup = SETUP_SSL.search(later)
            if setup:
                origin = origin_of_ci(setup["ci"])
                if origin:
                    out[origin]["h2"] += 1
                break
    for m in HOST_HEADER.finditer(log):
        out[f"{m['host']}:{m['port'] or 443}"]["requests"] += 1
    return dict(out)


def har_origins(har: dict) -> dict[str, Counter]:
    """Origin (host:port) -> Counter of the HAR's httpVersion (normalised) per request
    (what Firefox answered from its own cache left out: trial_har.from_browser_cache)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for entry in har.get("log", {}).get("entries", []):
        url = entry.get("request", {}).get("url", "")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or trial_har.from_browser_cache(entry):
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        out[f"{parts.hostname}:{port}"][trial_har.normalise(
            entry.get("response", {}).get("httpVersion", ""))] += 1
    return dict(out)


def load_end(har: dict | None) -> float | None:
    """When the load's last response ended (epoch seconds), from the HAR; None if unknown."""
    from datetime import datetime

    ends = []
    for entry in (har or {}).get("log", {}).get("entries", []):
        try:
            start = datetime.fromisoformat(entry["startedDateTime"])
        except (KeyError, ValueError, AttributeError):
            continue
        ends.append(start.timestamp() + max(float(entry.get("time") or 0), 0) / 1000)
    return max(ends) if ends else None


def wire_by_ip(packets: Iterable[evidence.Packet], until: float | None = None,
               ) -> dict[str, dict[str, int]]:
    """Server IP -> {"tcp": TCP connections opened to its port 443 (client SYNs),
    "quic": UDP datagrams to its port 443}; key "dns" of "*": packets to port 53.
    until: packets after this time (epoch seconds) are left out: after the load the
    capture also holds the next trial's server switch and its readiness probes."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"tcp": 0, "quic": 0})
    dns = 0
    for p in packets:
        if until is not None and p.t > until:
            continue
        if p.dport == 53 or p.sport == 53:
            dns += 1
            continue
        if p.dport != 443:
            continue
        if p.proto == evidence.TCP and p.flags & 0x02 and not p.flags & 0x10:  # SYN, no ACK
            out[p.dst]["tcp"] += 1
        elif p.proto == evidence.UDP:
            out[p.dst]["quic"] += 1
    result = {ip: dict(v) for ip, v in out.items()}
    result["*"] = {"dns": dns}
    return result


LATE_S = 1.0
"""Packets up to this long after the HAR's last response still count as the load's."""


def _show(c: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((c or {}).items())) or "none"


def judge(stack: str, origins: Mapping[str, str], log: str | None, har: dict | None,
          packets: list[evidence.Packet] | None) -> list[Row]:
    """Rows proving (or not) that every origin ran `stack` (tcp: h2 over TCP, quic: h3
    over QUIC). origins: host:port -> the recorded IP."""
    want = trial_har.expected_protocol(stack)
    other = "quic" if stack == "tcp" else "tcp"
    rows: list[Row] = []
    logged = origin_protocols(log) if log is not None else None
    reported = har_origins(har) if har is not None else None
    end = load_end(har)
    wire = wire_by_ip(packets, end + LATE_S if end is not None else None) \
        if packets is not None else None
    for origin, ip in sorted(origins.items()):
        if logged is not None:
            got = logged.get(origin, Counter())
            sessions = {k: v for k, v in got.items() if k != "requests"}
            wrong = {k for k in sessions if k != want}
            coalesced = not sessions and got["requests"] > 0
            rows.append(Row(f"{origin}: Firefox's log",
                            f"{want} sessions only (or coalesced onto another origin's)",
                            _show(got) + (" (coalesced: no session of its own)"
                                          if coalesced else ""),
                            not wrong and (bool(sessions) or coalesced)))
        if reported is not None:
            in_har = reported.get(origin)
            # an origin the page did not ask this time has no row of its own
            if in_har:
                rows.append(Row(f"{origin}: HAR", f"every response {want}", _show(in_har),
                                set(in_har) == {want}))
        if wire is not None:
            seen = wire.get(ip, {"tcp": 0, "quic": 0})
            rows.append(Row(f"{origin}: wire at {ip}", f"{stack} to 443, no {other}",
                            f"TCP connections {seen['tcp']}, QUIC datagrams {seen['quic']}",
                            seen[stack] > 0 and seen[other] == 0))
    if wire is not None:
        dns = wire["*"]["dns"]
        rows.append(Row("names on the wire", "no DNS packet", f"{dns} DNS packets", dns == 0))
    if har is not None:
        flight = trial_har.max_in_flight(har)
        rows.append(Row("most requests in flight per host", "shown",
                        ", ".join(f"{h} {n}" for h, n in sorted(flight.items())) or "none",
                        None))
    return rows


# ------------------------------------------------------------------ the run

SITE = "local-news"
"""The bundled site: four HTTPS origins on three IPs (two origins share one)."""
SETTINGS = ("tcp", "tcp-plus", "quic", "quic-bbr")


def campaign_text(site: Path, network: str, settings: Iterable[str]) -> str:
    """A one-run Firefox campaign over the settings, keeping the log and the packets."""
    names = ", ".join(f'"{s}"' for s in settings)
    return (f'description = "testbed validate protocols --client firefox"\n'
            f'sites = ["{site}"]\nnetworks = ["{network}"]\nprotocols = [{names}]\n'
            f'client = ["firefox"]\nruns = 1\nretries = 0\ntimeout_s = 60\n'
            f'capture = ["pcap", "mozlog"]\ntelemetry = false\nseed = 1\n')


def trial_rows(folder: Path, row: Mapping, origins: Mapping[str, str]) -> list[Row]:
    """The rows of one stored Firefox trial: its verdict, then judge() over its files."""
    stack = "quic" if str(row["setting"]).startswith("quic") else "tcp"
    rows = [Row("trial", "ok", str(row["status"]) + (f" ({row['reason']})" if row["reason"]
                                                       else ""), row["status"] == "ok")]
    files = folder / "trials" / str(row["trial_id"])

    def read(name: str) -> bytes | None:
        path = files / name
        return gzip.decompress(path.read_bytes()) if path.is_file() else None

    log = read(trial_folder.CAPTURES["mozlog"])
    har = read(trial_folder.HAR)
    pcap = read(trial_folder.CAPTURES["pcap"])
    rows += judge(stack, origins,
                  log.decode(errors="replace") if log is not None else None,
                  json.loads(har) if har is not None else None,
                  evidence.read_pcap(pcap) if pcap is not None else None)
    if log is None:
        rows.append(Row("Firefox's log", "kept", "missing", False))
    if pcap is None:
        rows.append(Row("packet capture", "kept", "missing", False))
    return rows
