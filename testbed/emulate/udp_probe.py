"""UDP probes for `testbed validate network` and the calibration.

One small program, run on both ends of the emulated path:

    python -m testbed.emulate.udp_probe server --bind IP --port N --dump FILE
    python -m testbed.emulate.udp_probe rtt --to IP:PORT --count N --rate PPS
    python -m testbed.emulate.udp_probe send --to IP:PORT --mbit R --seconds T
    python -m testbed.emulate.udp_probe receive --to IP:PORT --mbit R --seconds T

The server runs in the replay topology's server namespace; the client runs
inside the Mahimahi shells as the testbed user. Every datagram carries a
session id, a sequence number and CLOCK_MONOTONIC timestamps; all
namespaces share that clock, so one-way delays are exact.

- `rtt`: small echo probes sent open loop at exponentially distributed
  intervals (so they sample every phase of the link's delivery schedule);
  the server echoes each at once. Uplink loss = probes the server never saw,
  downlink loss = echoes the client never saw.
- `send`: a UDP stream of full-size datagrams client → server (uplink rate).
- `receive`: asks the server for a stream server → client (downlink rate).

The server keeps what it saw in memory and writes it as JSON to --dump when
it is stopped (SIGTERM); clients print their JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

MAGIC = b"TBP1"
HEADER = struct.Struct("!4sBIIqq")  # magic, kind, session, seq, t_client_ns, t_server_ns
ECHO, ECHO_REPLY, SINK, STREAM_REQUEST, STREAM = 1, 2, 3, 4, 5
REQUEST = struct.Struct("!dd")  # payload of STREAM_REQUEST: bit/s, seconds
FULL_PAYLOAD = 1472  # a 1500-byte IPv4 packet
SMALL_PAYLOAD = 32


def now_ns() -> int:
    return time.monotonic_ns()


def pack(kind: int, session: int, seq: int, t_client: int, t_server: int, size: int,
         extra: bytes = b"") -> bytes:
    head = HEADER.pack(MAGIC, kind, session, seq, t_client, t_server) + extra
    return head + bytes(max(0, size - len(head)))


def unpack(data: bytes):
    if len(data) < HEADER.size or data[:4] != MAGIC:
        return None
    return HEADER.unpack_from(data)


def parse_addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


# ---------------------------------------------------------------- server

@dataclass
class _Stream:
    addr: tuple
    session: int
    interval_ns: int
    size: int
    end_ns: int
    next_ns: int
    seq: int = 0


@dataclass
class _Server:
    sock: socket.socket
    echo: dict = field(default_factory=dict)   # session -> {seq: t_server}
    sink: dict = field(default_factory=dict)   # session -> [(seq, t_server, size)]
    streams: dict = field(default_factory=dict)  # session -> _Stream
    sent: dict = field(default_factory=dict)   # session -> datagrams sent

    def handle(self, data: bytes, addr) -> None:
        t = now_ns()
        head = unpack(data)
        if head is None:
            return
        _, kind, session, seq, t_client, _ = head
        if kind == ECHO:
            self.echo.setdefault(session, {})[seq] = t
            self.sock.sendto(pack(ECHO_REPLY, session, seq, t_client, t, len(data)), addr)
        elif kind == SINK:
            self.sink.setdefault(session, []).append((seq, t, len(data)))
        elif kind == STREAM_REQUEST and session not in self.streams:
            bps, seconds = REQUEST.unpack_from(data, HEADER.size)
            interval = int(FULL_PAYLOAD * 8 * 1e9 / bps)
            self.streams[session] = _Stream(addr, session, interval, FULL_PAYLOAD,
                                            t + int(seconds * 1e9), t)

    def pump(self) -> float:
        """Send what the streams owe by now; seconds until the next is due."""
        t = now_ns()
        wait = 0.2
        for s in self.streams.values():
            while s.next_ns <= t and s.next_ns < s.end_ns:
                try:
                    self.sock.sendto(pack(STREAM, s.session, s.seq, s.next_ns, 0, s.size), s.addr)
                except BlockingIOError:
                    break
                s.seq += 1
                s.next_ns += s.interval_ns
            self.sent[s.session] = s.seq
            if s.next_ns < s.end_ns:
                wait = min(wait, max(0.0, (s.next_ns - t) / 1e9))
        return wait

    def dump(self) -> dict:
        return {
            "echo": {str(k): {"seqs": list(v), "t_server": list(v.values())}
                     for k, v in self.echo.items()},
            "sink": {str(k): {"seq": [a for a, _, _ in v], "t_server": [b for _, b, _ in v],
                              "size": [c for _, _, c in v]} for k, v in self.sink.items()},
            "streams": {str(k): {"sent": v} for k, v in self.sent.items()},
        }


def serve(bind: str, port: int, dump: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.bind((bind, port))
    sock.setblocking(False)
    server = _Server(sock)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print(f"probe server on {bind}:{port}", flush=True)
    while not stop:
        wait = server.pump()
        try:
            ready, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if ready:
            for _ in range(256):
                try:
                    data, addr = sock.recvfrom(2048)
                except BlockingIOError:
                    break
                server.handle(data, addr)
    tmp = dump + ".tmp"
    with open(tmp, "w") as f:
        json.dump(server.dump(), f)
    os.replace(tmp, dump)


# ---------------------------------------------------------------- clients

def _client_socket(to: tuple[str, int]) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.connect(to)
    sock.setblocking(False)
    return sock


def _drain(sock: socket.socket, on_packet) -> None:
    while True:
        try:
            data = sock.recv(2048)
        except (BlockingIOError, ConnectionRefusedError):
            return
        t = now_ns()
        head = unpack(data)
        if head is not None:
            on_packet(head, t, len(data))


def rtt(to: tuple[str, int], count: int, rate: float, size: int, linger: float,
        session: int, seed: int | None) -> dict:
    """Open-loop echo probes at exponentially distributed intervals."""
    sock = _client_socket(to)
    rng = random.Random(seed)
    sent: list[int] = []
    got: dict[int, tuple[int, int]] = {}

    def on_packet(head, t, _size):
        _, kind, sess, seq, _t_client, t_server = head
        if kind == ECHO_REPLY and sess == session and seq not in got:
            got[seq] = (t_server, t)

    next_ns = now_ns()
    while len(sent) < count:
        t = now_ns()
        if t >= next_ns:
            seq = len(sent)
            t_send = now_ns()
            try:
                sock.send(pack(ECHO, session, seq, t_send, 0, size))
            except (BlockingIOError, ConnectionRefusedError):
                pass
            sent.append(t_send)
            next_ns += int(rng.expovariate(rate) * 1e9)
            continue
        ready, _, _ = select.select([sock], [], [], (next_ns - t) / 1e9)
        if ready:
            _drain(sock, on_packet)
    end = now_ns() + int(linger * 1e9)
    while len(got) < count and now_ns() < end:
        ready, _, _ = select.select([sock], [], [], max(0.0, (end - now_ns()) / 1e9))
        if ready:
            _drain(sock, on_packet)
    seqs = sorted(got)
    return {
        "session": session,
        "sent": len(sent),
        "t_send": sent,
        "replies": {"seq": seqs,
                    "t_server": [got[s][0] for s in seqs],
                    "t_recv": [got[s][1] for s in seqs]},
    }


def send_stream(to: tuple[str, int], bps: float, seconds: float, session: int) -> dict:
    """Full-size datagrams client → server at bps (payload bits), for seconds."""
    sock = _client_socket(to)
    interval = int(FULL_PAYLOAD * 8 * 1e9 / bps)
    start = now_ns()
    end = start + int(seconds * 1e9)
    seq = 0
    next_ns = start
    while next_ns < end:
        t = now_ns()
        while next_ns <= t and next_ns < end:
            try:
                sock.send(pack(SINK, session, seq, next_ns, 0, FULL_PAYLOAD))
            except (BlockingIOError, ConnectionRefusedError):
                break
            seq += 1
            next_ns += interval
        delay = (next_ns - now_ns()) / 1e9
        if delay > 0:
            time.sleep(delay)
    return {"session": session, "sent": seq, "seconds": seconds}


def receive_stream(to: tuple[str, int], bps: float, seconds: float, session: int,
                   idle: float) -> dict:
    """Asks the server for a stream and records every arrival."""
    sock = _client_socket(to)
    request = pack(STREAM_REQUEST, session, 0, now_ns(), 0, 64, REQUEST.pack(bps, seconds))
    arrivals: list[tuple[int, int]] = []

    def on_packet(head, t, _size):
        _, kind, sess, seq, _tc, _ts = head
        if kind == STREAM and sess == session:
            arrivals.append((seq, t))

    started = now_ns()
    last_request = 0
    while not arrivals:  # the request may be lost: ask again every second
        if now_ns() - last_request > 1e9:
            if now_ns() - started > 30e9:
                break
            try:
                sock.send(request)
            except (BlockingIOError, ConnectionRefusedError):
                pass
            last_request = now_ns()
        ready, _, _ = select.select([sock], [], [], 0.05)
        if ready:
            _drain(sock, on_packet)
    last = now_ns()
    while now_ns() - last < idle * 1e9:
        ready, _, _ = select.select([sock], [], [], 0.05)
        if ready:
            n = len(arrivals)
            _drain(sock, on_packet)
            if len(arrivals) > n:
                last = now_ns()
    return {"session": session, "seq": [s for s, _ in arrivals], "t_recv": [t for _, t in arrivals],
            "payload": FULL_PAYLOAD}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.emulate.udp_probe")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--dump", required=True)
    r = sub.add_parser("rtt")
    r.add_argument("--to", required=True)
    r.add_argument("--count", type=int, default=1000)
    r.add_argument("--rate", type=float, default=100.0, help="probes per second (mean)")
    r.add_argument("--size", type=int, default=SMALL_PAYLOAD, help="UDP payload bytes")
    r.add_argument("--linger", type=float, default=3.0, help="seconds to wait for late echoes")
    r.add_argument("--session", type=int, default=1)
    r.add_argument("--seed", type=int)
    for name in ("send", "receive"):
        p = sub.add_parser(name)
        p.add_argument("--to", required=True)
        p.add_argument("--mbit", type=float, required=True, help="payload Mbit/s to send")
        p.add_argument("--seconds", type=float, required=True)
        p.add_argument("--session", type=int, default=2)
        p.add_argument("--idle", type=float, default=3.0,
                       help="receive: stop after this many seconds without a datagram")
    a = ap.parse_args(argv)
    if a.cmd == "server":
        serve(a.bind, a.port, a.dump)
        return
    to = parse_addr(a.to)
    if a.cmd == "rtt":
        out = rtt(to, a.count, a.rate, a.size, a.linger, a.session, a.seed)
    elif a.cmd == "send":
        out = send_stream(to, a.mbit * 1e6, a.seconds, a.session)
    else:
        out = receive_stream(to, a.mbit * 1e6, a.seconds, a.session, a.idle)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
