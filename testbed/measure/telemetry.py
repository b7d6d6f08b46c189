"""Per-connection transport telemetry of a block's trials (table `connections`).

    with Recorder(topology.server.name, recording.ips) as tcp:   # the whole block
        ...trials...
    conns = tcp.connections()                     # every TCP connection of the block
    per_trial = attribute(conns, [launched_at of each trial])
    rows = [tcp_row(c, origins(recording)) for c in per_trial[k]]
    rows += quic_rows(before, after, later, origins(recording))  # h3server's `conns`

TCP: one thread in the server namespace listens to the kernel's destroyed-socket
broadcasts (each socket's final tcp_info, even of a connection shorter than
any sampling) and dumps the open sockets every `interval` seconds while a page loads
(`loading(True)`; every `idle_interval` otherwise): the first
reading of a connection with nothing acknowledged yet (bytes_acked <= 1) gives
its initial congestion window, the last gives the congestion control and
BBR's estimates (a destroyed socket's broadcast carries tcp_info only).
Connections still open when the recorder stops are read once more.

A connection belongs to the trial whose window holds its first reading (or,
never sampled, its destruction): window k runs from trial k's browser launch
to trial k+1's. Only one browser runs at a time in a block, and each trial's
browser is a fresh one, so a connection never serves two trials. Connections
that start while the servers switch settings between two trials are the
readiness probes (from the client namespace, not through the emulated path)
and belong to no trial.

QUIC: h3server's summary lists each connection (`conns`, see
testbed.replay.server_summary); a trial's are those in the summary after its
load and not before; their figures come from the latest summary read that
still lists them (final once the connection closed).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

from testbed.formats import recording as rec
from testbed.host import tcpdiag

log = logging.getLogger(__name__)

INTERVAL_S = 0.01
"""Between two dumps of the open sockets while a page loads (`loading(True)`)."""
IDLE_INTERVAL_S = 0.1
"""Between two dumps otherwise (browser start and stop, visual metrics). A dump of a
namespace with its own TCP hash table (testbed.host.netns.EHASH_ENTRIES) costs
microseconds; one sharing the host's cost ~1 ms of kernel time, 0.4-0.5 s of CPU a
trial at these intervals (bench/trial_overhead --only telemetry). 10 ms still reads
the initial window of every emulated network (the window lasts an RTT: 24 ms at the
least, dsl)."""


@dataclass
class Conn:
    """What the recorder saw of one TCP connection of a replay server."""

    cookie: int
    first_seen: float | None = None
    """time.time() of its first reading in a dump (None: never sampled)."""
    ended: float | None = None
    """When the kernel broadcast its destruction (None: still open at the end)."""
    initial_cwnd: int | None = None
    last: tcpdiag.TcpSocket | None = None
    """Its last reading: the destroyed socket's final tcp_info, else the last dump's."""
    cc: str | None = None
    """Its congestion control, from the last dump that named it."""
    bbr_bw_bps: int | None = None
    """BBR's bandwidth estimate in the last dump that had one (so also its min RTT)."""
    bbr_min_rtt_us: int | None = None
    max_delivery_rate: int | None = None
    """The highest delivery-rate sample (bytes/s) of its readings: the last reading's
    is the rate of the last ACKs, app-limited and low once the responses are sent."""

    def read(self, s: tcpdiag.TcpSocket) -> None:
        """Note a reading's delivery rate."""
        rate = s.info.get("delivery_rate")
        if isinstance(rate, int) and (self.max_delivery_rate is None
                                      or rate > self.max_delivery_rate):
            self.max_delivery_rate = rate

    @property
    def at(self) -> float | None:
        """The time that places it in a trial's window."""
        return self.first_seen if self.first_seen is not None else self.ended


class Recorder:
    """The TCP connections of the replay servers in one network namespace."""

    def __init__(self, netns: str | None, ips: Sequence[str], interval: float = INTERVAL_S,
                 idle_interval: float = IDLE_INTERVAL_S):
        """netns: a namespace's name (`ip netns`); None: the caller's own."""
        self.path = f"/run/netns/{netns}" if netns is not None else None
        self.ips = frozenset(ips)
        self.interval = interval
        self.idle_interval = idle_interval
        self._loading = False
        v6 = any(":" in ip for ip in self.ips)
        self.families = ((socket.AF_INET, socket.AF_INET6) if v6 else (socket.AF_INET,))
        self.conns: dict[int, Conn] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._events = tcpdiag.DiagSocket(destroyed=True)
        self._dump = tcpdiag.DiagSocket()
        self.error: str | None = None
        """Why the recorder stopped early (its connections so far are kept)."""

    def __enter__(self) -> Self:
        if self.path is None:
            self._events.open()
            self._dump.open()
        else:
            tcpdiag.in_netns(self.path, self._events, self._dump)
        self._thread = threading.Thread(target=self._loop, name="tcp-telemetry", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """The thread stopped, still-open connections read once more, sockets closed."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            try:
                self._take_events(0)
                self._sample(final=True)
            except OSError as e:
                self.error = self.error or str(e)
        self._events.close()
        self._dump.close()

    def loading(self, on: bool) -> None:
        """A page load begins (dump every `interval`) or ends (every `idle_interval`)."""
        self._loading = on

    def connections(self) -> list[Conn]:
        with self._lock:
            return sorted(self.conns.values(), key=lambda c: (c.at or 0, c.cookie))

    def _loop(self) -> None:
        try:
            due = 0.0
            while not self._stop.is_set():
                self._take_events(max(0.0, min(due - time.monotonic(), 0.05)))
                if time.monotonic() >= due:
                    due = time.monotonic() + (self.interval if self._loading
                                              else self.idle_interval)
                    self._sample()
        except OSError as e:
            self.error = str(e)
            log.warning("TCP telemetry stopped: %s", e)

    def _ours(self, s: tcpdiag.TcpSocket) -> bool:
        """A replay server's connection (a bound socket not yet listening has no peer)."""
        return s.local[0] in self.ips and s.peer[1] != 0

    def _take_events(self, timeout: float) -> None:
        gone = self._events.receive(timeout)
        now = time.time()
        with self._lock:
            for s in gone:
                if not self._ours(s):
                    continue
                c = self.conns.setdefault(s.cookie, Conn(s.cookie))
                c.ended, c.last = now, s
                c.read(s)
                if c.initial_cwnd is None and c.first_seen is None and \
                        s.info.get("bytes_acked", 2) <= 1:
                    c.initial_cwnd = s.info.get("snd_cwnd")

    def _sample(self, final: bool = False) -> None:
        found = self._dump.dump(self.families)
        now = time.time()
        with self._lock:
            for s in found:
                if not self._ours(s):
                    continue
                c = self.conns.get(s.cookie)
                if c is None:
                    c = self.conns[s.cookie] = Conn(s.cookie, first_seen=now)
                    if s.info.get("bytes_acked", 2) <= 1:
                        c.initial_cwnd = s.info.get("snd_cwnd")
                elif c.ended is not None:
                    continue  # destroyed: the broadcast's reading is final
                if c.first_seen is None:
                    c.first_seen = now
                c.last = s
                c.read(s)
                if s.cc is not None:
                    c.cc = s.cc
                if s.bbr_bw_bps is not None:
                    c.bbr_bw_bps, c.bbr_min_rtt_us = s.bbr_bw_bps, s.bbr_min_rtt_us


def attribute(conns: Sequence, starts: Sequence[float | None],
              switches: Sequence[tuple[float, float]] = ()) -> list[list]:
    """conns split by trial: starts[k] is when trial k's window began (its browser's
    launch; None: never launched). A connection goes to the last trial started at or
    before its `at`; one before every start, or during a switch of the servers (a
    (start, end) of `switches`: their readiness probes), goes nowhere."""
    out: list[list] = [[] for _ in starts]
    began = sorted((t, k) for k, t in enumerate(starts) if t is not None)
    for c in conns:
        at = c.at
        if at is None or any(a <= at <= b for a, b in switches):
            continue
        k = None
        for t, i in began:
            if t <= at:
                k = i
        if k is not None:
            out[k].append(c)
    return out


def origins(recording: rec.Recording) -> dict[str, str]:
    """Server IP -> the recorded host names served there, comma-joined."""
    hosts: dict[str, set[str]] = {}
    for o in recording.origins:
        hosts.setdefault(o.ip, set()).add(o.host)
    return {ip: ",".join(sorted(h)) for ip, h in hosts.items()}


def _ms(us: int | None) -> float | None:
    return None if us is None else us / 1000.0


def _bps(bytes_per_s: int | None) -> float | None:
    if bytes_per_s is None or bytes_per_s == 2 ** 64 - 1:  # ~0: unlimited pacing
        return None
    return float(bytes_per_s * 8)


def tcp_row(c: Conn, hosts: Mapping[str, str]) -> dict:
    """One row of table `connections` (without trial_id) for a TCP connection."""
    s = c.last
    assert s is not None
    i = s.info
    ssthresh = i.get("snd_ssthresh")
    mss = i.get("snd_mss")
    cwnd = i.get("snd_cwnd")
    duration = (None if c.first_seen is None or c.ended is None
                else round((c.ended - c.first_seen) * 1000, 1))
    return {
        "transport": "tcp", "origin": hosts.get(s.local[0]),
        "server_ip": s.local[0], "server_port": s.local[1],
        "client_ip": s.peer[0], "client_port": s.peer[1],
        "cc": c.cc,
        "handshake_ms": None, "duration_ms": duration,
        "srtt_ms": _ms(i.get("rtt")), "min_rtt_ms": _ms(i.get("min_rtt")),
        "rttvar_ms": _ms(i.get("rttvar")),
        "cwnd_initial_packets": c.initial_cwnd,
        "cwnd_packets": cwnd,
        "cwnd_bytes": cwnd * mss if cwnd is not None and mss is not None else None,
        # the kernel's "infinite" threshold (still in the first slow start): no figure
        "ssthresh_packets": ssthresh if ssthresh is not None and ssthresh < 0x7fffffff
        else None,
        "mss_bytes": mss, "bytes_sent": i.get("bytes_sent"),
        "bytes_acked": i.get("bytes_acked"), "bytes_retrans": i.get("bytes_retrans"),
        "packets_sent": i.get("segs_out"), "packets_retrans": i.get("total_retrans"),
        "packets_lost": i.get("lost"),
        "delivery_rate_bps": _bps(c.max_delivery_rate if c.max_delivery_rate is not None
                                  else i.get("delivery_rate")),
        "pacing_rate_bps": _bps(i.get("pacing_rate")),
        "busy_ms": _ms(i.get("busy_time")), "rwnd_limited_ms": _ms(i.get("rwnd_limited")),
        "sndbuf_limited_ms": _ms(i.get("sndbuf_limited")),
        "bbr_bw_bps": float(c.bbr_bw_bps) if c.bbr_bw_bps is not None else None,
        "bbr_min_rtt_ms": _ms(c.bbr_min_rtt_us),
        "requests": None,
    }


def _split(addr: object) -> tuple[str | None, int | None]:
    """'ip:port' or '[v6]:port' -> (ip, port); (None, None) if not that."""
    if not isinstance(addr, str) or ":" not in addr:
        return None, None
    host, _, port = addr.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return None, None


def _num(conn: Mapping, key: str) -> float | None:
    v = conn.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(conn: Mapping, key: str) -> int | None:
    v = _num(conn, key)
    return None if v is None else int(v)


def quic_row(conn: Mapping, hosts: Mapping[str, str]) -> dict | None:
    """One row of table `connections` (without trial_id) from one object of h3server's
    `conns`; None if it names no local address."""
    server_ip, server_port = _split(conn.get("local"))
    if server_ip is None:
        return None
    client_ip, client_port = _split(conn.get("peer"))
    mds = _int(conn, "max_datagram_size")
    cwnd = _int(conn, "cwnd_bytes")
    cwnd0 = _int(conn, "cwnd_initial_bytes")
    cc = conn.get("cc")
    return {
        "transport": "quic", "origin": hosts.get(server_ip),
        "server_ip": server_ip, "server_port": server_port,
        "client_ip": client_ip, "client_port": client_port,
        "cc": cc if isinstance(cc, str) else None,
        "handshake_ms": _num(conn, "handshake_ms"), "duration_ms": _num(conn, "duration_ms"),
        "srtt_ms": _num(conn, "rtt_ms"), "min_rtt_ms": _num(conn, "min_rtt_ms"),
        "rttvar_ms": _num(conn, "rttvar_ms"),
        "cwnd_initial_packets": cwnd0 // mds if cwnd0 is not None and mds else None,
        "cwnd_packets": cwnd // mds if cwnd is not None and mds else None,
        "cwnd_bytes": cwnd, "ssthresh_packets": None, "mss_bytes": mds,
        "bytes_sent": _int(conn, "sent_bytes"), "bytes_acked": None,
        "bytes_retrans": _int(conn, "stream_retrans_bytes"),
        "packets_sent": _int(conn, "sent_packets"),
        "packets_retrans": _int(conn, "retrans_packets"),
        "packets_lost": _int(conn, "lost_packets"),
        "delivery_rate_bps": _num(conn, "delivery_rate_bps"), "pacing_rate_bps": None,
        "busy_ms": None, "rwnd_limited_ms": None, "sndbuf_limited_ms": None,
        "bbr_bw_bps": None, "bbr_min_rtt_ms": None,
        "requests": _int(conn, "requests"),
    }


def _conns(summary: Mapping | None) -> dict[str, Mapping]:
    """id -> connection object of a summary's `conns` (malformed entries left out)."""
    if not summary or not isinstance(summary.get("conns"), list):
        return {}
    return {c["id"]: c for c in summary["conns"]
            if isinstance(c, Mapping) and isinstance(c.get("id"), str)}


def new_conn_ids(before: Mapping | None, after: Mapping | None) -> list[str]:
    """Ids of the QUIC connections in `after` and not in `before` (a trial's, when
    read around its load)."""
    old = _conns(before)
    return [cid for cid in _conns(after) if cid not in old]


def quic_rows(before: Mapping | None, after: Mapping | None, later: Sequence[Mapping | None],
              hosts: Mapping[str, str]) -> list[dict]:
    """The rows of a trial's QUIC connections: those in `after` (read after its load)
    and not in `before`; each with the figures of the first of `later` (summaries read
    after, in order) that lists it closed, else of the last listing it, else `after`'s."""
    old = _conns(before)
    new = {k: v for k, v in _conns(after).items() if k not in old}
    out = []
    for cid, conn in new.items():
        best = conn
        for summary in later:
            c = _conns(summary).get(cid)
            if c is not None:
                best = c
                if c.get("closed") is True:
                    break
        row = quic_row(best, hosts)
        if row is not None:
            out.append(row)
    return sorted(out, key=lambda r: (r["server_ip"], r["server_port"], r["client_port"] or 0))
