"""Evidence that a protocol setting is in force, from what the wire and the kernel show.

Pure functions over captured data:
- read_pcap: a tcpdump capture (Ethernet, IPv4) into packets with times,
  addresses, TCP sequence numbers and payload lengths (from the IP header,
  so a GSO super-packet counts with its whole payload).
- flights: a connection's server packets grouped into flights, a flight
  being the server's payload packets between two packets from the client.
  The first data flight of a response is its initial window (the server
  sends until it must wait for an acknowledgement), its duration shows
  pacing (a paced flight is spread over about half a round trip, an
  unpaced one leaves back to back).
- parse_ss: `ss -tinm` output into per-connection congestion control, cwnd,
  pacing and buffer figures.
- parse_qlog, qlog_states, qlog_initial_cwnd, qlog_parameters,
  qlog_largest_packet, qlog_client_connection_options,
  qlog_acks_per_data_packet: h3server's qlog (JSON-SEQ) into events, the
  congestion states they name, the first congestion window, the transport
  parameters each side sent, the largest packet sent, the QUIC connection
  options Chromium sent and its ACK frames per data packet.
- parse_snmp: /proc/net/snmp into counters per protocol (drops, retransmissions).
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass, field

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
TCP, UDP = 6, 17


@dataclass(frozen=True)
class Packet:
    t: float
    """Capture time, seconds."""
    proto: int
    src: str
    dst: str
    sport: int
    dport: int
    payload: int
    """Transport payload bytes (TCP data, UDP payload)."""
    seq: int = 0
    ack: int = 0
    flags: int = 0


def read_pcap(data: bytes) -> list[Packet]:
    """IPv4 TCP and UDP packets of a classic pcap file (microsecond or nanosecond)."""
    if len(data) < 24:
        return []
    magic_le = struct.unpack_from("<I", data)[0]
    if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian = "<"
    elif struct.unpack_from(">I", data)[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian = ">"
    else:
        raise ValueError("not a pcap file")
    magic = struct.unpack_from(endian + "I", data)[0]
    scale = 1e-9 if magic == PCAP_MAGIC_NS else 1e-6
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"pcap link type {linktype}: expected Ethernet (1)")
    out: list[Packet] = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, caplen, _wirelen = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        frame = data[off:off + caplen]
        off += caplen
        p = _parse_frame(frame, sec + frac * scale)
        if p is not None:
            out.append(p)
    return out


def _parse_frame(frame: bytes, t: float) -> Packet | None:
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack_from("!H", ip, 2)[0]
    proto = ip[9]
    src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
    l4 = ip[ihl:]
    if proto == TCP and len(l4) >= 20:
        sport, dport, seq, ack = struct.unpack_from("!HHII", l4)
        doff = (l4[12] >> 4) * 4
        return Packet(t, TCP, src, dst, sport, dport, total - ihl - doff, seq, ack, l4[13])
    if proto == UDP and len(l4) >= 8:
        sport, dport, length = struct.unpack_from("!HHH", l4)
        return Packet(t, UDP, src, dst, sport, dport, length - 8)
    return None


@dataclass
class Flight:
    """Server payload packets sent between two packets from the client."""

    times: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    segments: int = 0
    """TCP: MSS-sized segments (a GSO super-packet counts as several); UDP: datagrams."""

    @property
    def start(self) -> float:
        return self.times[0]

    @property
    def duration(self) -> float:
        return self.times[-1] - self.times[0]

    @property
    def gaps(self) -> list[float]:
        """Seconds between each packet and the next, in order."""
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]

    @property
    def bytes(self) -> int:
        return sum(self.sizes)


def connections(packets: list[Packet], server_port: int = 443, proto: int = TCP,
                ) -> dict[tuple[str, int, str], list[Packet]]:
    """Packets per connection, keyed (client ip, client port, server ip)."""
    conns: dict[tuple[str, int, str], list[Packet]] = {}
    for p in packets:
        if p.proto != proto:
            continue
        if p.sport == server_port:
            key = (p.dst, p.dport, p.src)
        elif p.dport == server_port:
            key = (p.src, p.sport, p.dst)
        else:
            continue
        conns.setdefault(key, []).append(p)
    return conns


def flights(conn: list[Packet], server_port: int = 443, mss: int = 1448) -> list[Flight]:
    """The server's payload packets of one connection, split at every client packet."""
    out: list[Flight] = []
    current: Flight | None = None
    for p in sorted(conn, key=lambda p: p.t):
        if p.sport == server_port:
            if p.payload <= 0:
                continue
            if current is None:
                current = Flight()
                out.append(current)
            current.times.append(p.t)
            current.sizes.append(p.payload)
            current.segments += math.ceil(p.payload / mss) if p.proto == TCP else 1
        else:
            current = None
    return out


def data_flights(fl: list[Flight], min_segments: int = 8) -> list[Flight]:
    """Flights of response data: at least min_segments (handshake flights are smaller)."""
    return [f for f in fl if f.segments >= min_segments]


def outstanding_segments(conn: list[Packet], flight: Flight, server_port: int = 443,
                         mss: int = 1448) -> int:
    """TCP: the most segments the server had sent and not yet seen acknowledged while
    `flight` was being sent: what its congestion window allowed (a segment sent
    earlier and still unacknowledged, such as HTTP/2 SETTINGS, counts too)."""
    unacked: dict[int, int] = {}  # seq_end -> segments
    most = 0
    end = flight.times[-1]
    for p in sorted(conn, key=lambda p: p.t):
        if p.t > end:
            break
        if p.sport == server_port:
            if p.payload > 0:
                unacked[(p.seq + p.payload) & 0xFFFFFFFF] = math.ceil(p.payload / mss)
            if p.t >= flight.start:
                most = max(most, sum(unacked.values()))
        elif p.flags & 0x10:  # ACK
            for seq_end in [e for e in unacked if _seq_le(e, p.ack)]:
                del unacked[seq_end]
    return most


def acked_before(conn: list[Packet], flight: Flight, server_port: int = 443,
                 mss: int = 1448) -> int:
    """TCP: segments of server data the client acknowledged before `flight` began (the
    handshake's): BBR adds every acknowledged segment to its window in startup,
    window-limited or not, CUBIC only when the window was the limit."""
    sent: dict[int, int] = {}
    acked = 0
    for p in sorted(conn, key=lambda p: p.t):
        if p.t >= flight.start:
            break
        if p.sport == server_port and p.payload > 0:
            sent[(p.seq + p.payload) & 0xFFFFFFFF] = math.ceil(p.payload / mss)
        elif p.sport != server_port and p.flags & 0x10:
            for seq_end in [e for e in sent if _seq_le(e, p.ack)]:
                acked += sent.pop(seq_end)
    return acked


def _seq_le(a: int, b: int) -> bool:
    """a <= b in 32-bit sequence space."""
    return ((b - a) & 0xFFFFFFFF) < 0x80000000


# ------------------------------------------------------------------ ss

# "[State] Recv-Q Send-Q Local:Port Peer:Port": ss omits State when asked for one state.
_SS_CONN = re.compile(r"^(?:[A-Z][A-Z0-9-]*\s+)?\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)")


@dataclass(frozen=True)
class SockInfo:
    local: str
    peer: str
    cc: str | None
    cwnd: int | None
    pacing_rate: str | None
    max_pacing_rate: str | None
    sndbuf: int | None
    """skmem tb: the socket's send buffer, bytes."""
    detail: str = ""
    """The connection's details as ss printed them, on one line (BBR's gains among
    them: see testbed.validate.bbr_generation)."""


def parse_ss(text: str) -> list[SockInfo]:
    """`ss -tinm` (one connection line, then an indented details line)."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _SS_CONN.match(line)
        if not m:
            continue
        detail = ""
        for nxt in lines[i + 1:]:
            if _SS_CONN.match(nxt) or nxt.startswith("State"):
                break
            detail += " " + nxt.strip()
        cc = None
        for name in ("cubic", "bbr", "reno"):
            if re.search(rf"(^|\s){name}(\s|$)", detail):
                cc = name
        cwnd = re.search(r"\bcwnd:(\d+)", detail)
        pacing = re.search(r"\bpacing_rate (\S+?)bps(?:/(\S+?)bps)?(\s|$)", detail)
        tb = re.search(r"\btb(\d+)", detail)
        out.append(SockInfo(local=f"{m.group(1)}:{m.group(2)}", peer=f"{m.group(3)}:{m.group(4)}",
                            cc=cc, cwnd=int(cwnd.group(1)) if cwnd else None,
                            pacing_rate=pacing.group(1) if pacing else None,
                            max_pacing_rate=pacing.group(2) if pacing else None,
                            sndbuf=int(tb.group(1)) if tb else None, detail=detail))
    return out


# ------------------------------------------------------------------ qlog

def parse_qlog(text: str) -> list[dict]:
    """The events of a qlog in JSON-SEQ (records after RS characters); records that
    are not JSON objects are skipped."""
    events = []
    for raw in text.split("\x1e"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            ev = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            events.append(ev)
    return events


def qlog_states(events: list[dict]) -> set[str]:
    """Congestion states the events name, normalised ("BBR Startup" -> bbr_startup)."""
    states: set[str] = set()
    for ev in events:
        if str(ev.get("name", "")).endswith("congestion_state_updated"):
            data = ev.get("data", {})
            for key in ("new", "state"):
                if isinstance(data, dict) and isinstance(data.get(key), str):
                    states.add(_norm(data[key]))
    return states


def qlog_initial_cwnd(events: list[dict]) -> int | None:
    """The first congestion_window (bytes) the events report."""
    for ev in events:
        data = ev.get("data", {})
        cwnd = data.get("congestion_window") if isinstance(data, dict) else None
        if isinstance(cwnd, int):
            return cwnd
    return None


def qlog_first_pacing(events: list[dict]) -> tuple[int, float] | None:
    """The first pacing_rate (bytes/s) the events report, with the smoothed RTT (ms)
    last reported at or before it; None without either."""
    srtt = None
    for ev in events:
        data = ev.get("data", {})
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("smoothed_rtt"), int | float):
            srtt = float(data["smoothed_rtt"])
        rate = data.get("pacing_rate")
        if isinstance(rate, int) and srtt:
            return rate, srtt
    return None


def qlog_parameters(events: list[dict], owner: str = "local") -> dict:
    """The transport parameters a qlog's parameters_set event records for `owner`
    ("local": those the qlog's endpoint sent; "remote": those its peer sent); {} if none."""
    for ev in events:
        data = ev.get("data", {})
        if (str(ev.get("name", "")).endswith("parameters_set") and isinstance(data, dict)
                and data.get("owner") == owner):
            return data
    return {}


def qlog_largest_packet(events: list[dict]) -> int:
    """The largest 1-RTT packet the qlog's endpoint sent, bytes (a 1-RTT packet fills its
    datagram); 0 if none."""
    largest = 0
    for ev in events:
        d = ev.get("data", {})
        if (str(ev.get("name", "")).endswith("packet_sent") and isinstance(d, dict)
                and d.get("header", {}).get("packet_type") == "1RTT"):
            n = d.get("raw", {}).get("length")
            if isinstance(n, int):
                largest = max(largest, n)
    return largest


GOOGLE_CONNECTION_OPTIONS = 0x3128
"""The transport parameter in which Chromium sends its QUIC connection options (4-byte
tags, e.g. b"AKDU")."""


def qlog_client_connection_options(events: list[dict]) -> list[str]:
    """The QUIC connection options the client sent (google_connection_options among the
    peer's unknown transport parameters, which h3server keeps for its qlog), in order."""
    for p in qlog_parameters(events, "remote").get("unknown_parameters") or []:
        if isinstance(p, dict) and p.get("id") == GOOGLE_CONNECTION_OPTIONS:
            try:
                raw = bytes.fromhex(str(p.get("value", "")))
            except ValueError:
                return []
            return [raw[i:i + 4].rstrip(b"\0").decode("ascii", "replace")
                    for i in range(0, len(raw) - len(raw) % 4, 4)]
    return []


def qlog_acks_per_data_packet(events: list[dict]) -> tuple[int, int]:
    """(ACK frames received in 1-RTT packets, 1-RTT packets sent carrying stream data):
    from the server's qlog, how often the client acknowledged what the server sent."""
    acks = data = 0
    for ev in events:
        name, d = str(ev.get("name", "")), ev.get("data", {})
        if not isinstance(d, dict) or d.get("header", {}).get("packet_type") != "1RTT":
            continue
        frames = [f.get("frame_type") for f in d.get("frames", []) if isinstance(f, dict)]
        if name.endswith("packet_received"):
            acks += frames.count("ack")
        elif name.endswith("packet_sent") and "stream" in frames:
            data += 1
    return acks, data


def _norm(s: str) -> str:
    return re.sub(r"[^a-z]+", "_", s.lower()).strip("_")


# ------------------------------------------------------------------ /proc/net/snmp

def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/snmp (a line of names, then a line of values, per protocol):
    {"Tcp": {"RetransSegs": ...}, "Udp": {"RcvbufErrors": ...}, ...}."""
    out: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        group, _, keys = names.partition(":")
        out[group] = dict(zip(keys.split(), map(int, values.partition(":")[2].split()),
                              strict=False))
    return out
