"""TCP sockets' `tcp_info` from the kernel's sock_diag netlink interface.

    with DiagSocket() as d:               # in the caller thread's network namespace
        for s in d.dump(): ...            # every TCP socket now open (not listening)
    with DiagSocket(destroyed=True) as d:
        for s in d.receive(): ...         # each socket as the kernel destroys it

Each reading is a `TcpSocket`: addresses, the kernel's `tcp_info` as a dict
(`TCP_INFO` names, without `tcpi_`), and in a dump its congestion control and,
for BBR, its bandwidth and min-RTT estimate (INET_DIAG_BBRINFO). A destroyed
socket comes with its final `tcp_info` only (what `ss -E` shows), so even
connections that open and close between two dumps are seen.

A small reader of our own rather than pyroute2: it is ~150 lines of struct
unpacking over the `socket` module; pyroute2's diag parser stops at an older
`tcp_info` (no busy/rwnd-/sndbuf-limited times, bytes_sent, bytes_retrans),
does not decode INET_DIAG_BBRINFO, and has no listener for the destroy
multicast groups, which are the point here.

`in_netns(path)` opens sockets in another network namespace (setns of one
helper thread; a socket stays in the namespace it was made in).
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import select
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Self

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
SKNLGRP_INET_TCP_DESTROY, SKNLGRP_INET6_TCP_DESTROY = 1, 3
SOL_NETLINK, NETLINK_ADD_MEMBERSHIP = 270, 1

INET_DIAG_INFO, INET_DIAG_VEGASINFO, INET_DIAG_CONG, INET_DIAG_BBRINFO = 2, 3, 4, 16
EXT = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) | (1 << (INET_DIAG_CONG - 1))
"""Extensions asked for in a dump: tcp_info, the congestion control's name and its
own info (BBR answers the VEGASINFO bit with INET_DIAG_BBRINFO)."""

TCP_ESTABLISHED, TCP_SYN_SENT, TCP_FIN_WAIT1, TCP_FIN_WAIT2 = 1, 2, 4, 5
TCP_CLOSE, TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSING = 7, 8, 9, 11
STATES = sum(1 << s for s in (TCP_ESTABLISHED, TCP_SYN_SENT, TCP_FIN_WAIT1, TCP_FIN_WAIT2,
                              TCP_CLOSE, TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSING))
"""Full connections only: no listener (10), request socket (3, 12) or time-wait stub
(6), and not TCP_BOUND_INACTIVE (13): asking for bound, unconnected sockets makes the
kernel walk the bind hash table, which every namespace shares, ~1 ms a dump here."""

NLMSGHDR = struct.Struct("=IHHII")
REQ = struct.Struct("=BBBBI48s")
MSG = struct.Struct("=BBBB2s2s16s16sI8sIIIII")
RTATTR = struct.Struct("=HH")

# include/uapi/linux/tcp.h, struct tcp_info (kernel 6.x), in order; "x" = padding
TCP_INFO = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"),
    ("backoff", "B"), ("options", "B"), ("wscale", "B"), ("flags", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"),
    ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"),
    ("snd_ssthresh", "I"), ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt", "I"), ("rcv_space", "I"), ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"),
    ("bytes_received", "Q"), ("segs_out", "I"), ("segs_in", "I"),
    ("notsent_bytes", "I"), ("min_rtt", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate", "Q"), ("busy_time", "Q"), ("rwnd_limited", "Q"),
    ("sndbuf_limited", "Q"), ("delivered", "I"), ("delivered_ce", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"), ("dsack_dups", "I"), ("reord_seen", "I"),
    ("rcv_ooopack", "I"), ("snd_wnd", "I"),
)
_INFO = struct.Struct("=" + "".join(f for _, f in TCP_INFO))
INFO_NAMES = tuple(n for n, _ in TCP_INFO)
BBR_INFO = struct.Struct("=IIIII")  # bw_lo, bw_hi (bytes/s), min_rtt (us), pacing, cwnd gain


class DiagError(OSError):
    """The kernel refused a request or sent a message this reader cannot parse."""


@dataclass(frozen=True)
class TcpSocket:
    """One reading of one TCP socket."""

    family: int
    state: int
    local: tuple[str, int]
    peer: tuple[str, int]
    cookie: int
    """The kernel's socket cookie: one connection's identity across readings."""
    info: dict[str, int] = field(default_factory=dict)
    """tcp_info (names of TCP_INFO); fields the kernel did not send are absent."""
    cc: str | None = None
    bbr_bw_bps: int | None = None
    """BBR's bandwidth estimate, bits per second."""
    bbr_min_rtt_us: int | None = None


def parse_info(raw: bytes) -> dict[str, int]:
    """tcp_info from the bytes of INET_DIAG_INFO: every field the kernel sent (an older
    kernel sends a shorter struct; the rest are left out, a newer one's extra ignored)."""
    if len(raw) >= _INFO.size:
        return dict(zip(INFO_NAMES, _INFO.unpack_from(raw)))
    out: dict[str, int] = {}
    offset = 0
    for name, fmt in TCP_INFO:
        size = struct.calcsize("=" + fmt)
        if offset + size > len(raw):
            break
        (out[name],) = struct.unpack_from("=" + fmt, raw, offset)
        offset += size
    return out


def _address(family: int, raw: bytes) -> str:
    if family == socket.AF_INET:
        return str(ipaddress.IPv4Address(raw[:4]))
    addr = ipaddress.IPv6Address(raw)
    return str(addr.ipv4_mapped or addr)


def parse_message(body: bytes) -> TcpSocket:
    """One SOCK_DIAG_BY_FAMILY answer (inet_diag_msg and its attributes)."""
    if len(body) < MSG.size:
        raise DiagError(f"inet_diag_msg of {len(body)} bytes, expected at least {MSG.size}")
    (family, state, _timer, _retrans, sport, dport, src, dst, _if, cookie,
     *_rest) = MSG.unpack_from(body)
    info: dict[str, int] = {}
    cc = bw = min_rtt = None
    offset = MSG.size
    while offset + RTATTR.size <= len(body):
        length, kind = RTATTR.unpack_from(body, offset)
        if length < RTATTR.size or offset + length > len(body):
            raise DiagError(f"netlink attribute of length {length} at {offset}")
        data = body[offset + RTATTR.size:offset + length]
        if kind == INET_DIAG_INFO:
            info = parse_info(data)
        elif kind == INET_DIAG_CONG:
            cc = data.split(b"\0", 1)[0].decode("ascii", "replace")
        elif kind == INET_DIAG_BBRINFO and len(data) >= BBR_INFO.size:
            lo, hi, min_rtt, _pg, _cg = BBR_INFO.unpack_from(data)
            bw = ((hi << 32) | lo) * 8
        offset += (length + 3) & ~3
    return TcpSocket(
        family=family, state=state,
        local=(_address(family, src), struct.unpack(">H", sport)[0]),
        peer=(_address(family, dst), struct.unpack(">H", dport)[0]),
        cookie=int.from_bytes(cookie, "little"), info=info, cc=cc,
        bbr_bw_bps=bw, bbr_min_rtt_us=min_rtt)


def parse_messages(data: bytes) -> tuple[list[TcpSocket], bool]:
    """The sockets in one netlink datagram, and whether it ended the dump (DONE)."""
    out, done, offset = [], False, 0
    while offset + NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSGHDR.unpack_from(data, offset)
        if length < NLMSGHDR.size or offset + length > len(data):
            raise DiagError(f"netlink message of length {length} at {offset}")
        body = data[offset + NLMSGHDR.size:offset + length]
        if kind == NLMSG_DONE:
            done = True
        elif kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", body)
            if err:
                raise DiagError(-err, f"sock_diag: {os.strerror(-err)}")
        elif kind == SOCK_DIAG_BY_FAMILY:
            out.append(parse_message(body))
        offset += (length + 3) & ~3
    return out, done


def request(family: int, seq: int = 1) -> bytes:
    body = REQ.pack(family, socket.IPPROTO_TCP, EXT, 0, STATES, b"\0" * 48)
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY,
                         NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


class DiagSocket:
    """A sock_diag netlink socket in the namespace of the thread that opens it."""

    def __init__(self, destroyed: bool = False) -> None:
        self.destroyed = destroyed
        self.sock: socket.socket | None = None
        self._seq = 0

    def open(self) -> Self:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                          NETLINK_SOCK_DIAG)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((0, 0))
            if self.destroyed:
                for group in (SKNLGRP_INET_TCP_DESTROY, SKNLGRP_INET6_TCP_DESTROY):
                    s.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
        except BaseException:
            s.close()
            raise
        self.sock = s
        return self

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def dump(self, families: tuple[int, ...] = (socket.AF_INET, socket.AF_INET6)
             ) -> list[TcpSocket]:
        """Every TCP connection of `families` open now. The kernel walks the
        namespace's established hash table: ~1 ms a family if the namespace shares
        the host's (262,144 buckets here), some microseconds if it has its own
        (testbed.host.netns.NetNS gives every namespace of the testbed its own)."""
        assert self.sock is not None
        out: list[TcpSocket] = []
        for family in families:
            self._seq += 1
            self.sock.send(request(family, self._seq))
            done = False
            while not done:
                found, done = parse_messages(self.sock.recv(1 << 16))
                out.extend(found)
        return out

    def receive(self, timeout: float | None = None) -> list[TcpSocket]:
        """The destroyed sockets the kernel has broadcast (waits up to timeout for the
        first; [] if none came)."""
        assert self.sock is not None
        ready, _, _ = select.select([self.sock], [], [], timeout)
        out: list[TcpSocket] = []
        while ready:
            out.extend(parse_messages(self.sock.recv(1 << 16))[0])
            ready, _, _ = select.select([self.sock], [], [], 0)
        return out


CLONE_NEWNET = 0x40000000


def in_netns(path: str, *sockets: DiagSocket) -> None:
    """Open `sockets` inside the network namespace at `path` (/run/netns/NAME): a
    helper thread enters it, opens them and ends; the caller's namespace is untouched."""
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns {path}: {os.strerror(err)}")
            finally:
                os.close(fd)
            for s in sockets:
                s.open()
        except BaseException as e:  # noqa: BLE001 - raised again in the caller
            errors.append(e)

    # the thread's namespace dies with it; nothing else runs in that thread
    t = threading.Thread(target=enter, name="netns-open")
    t.start()
    t.join()
    if errors:
        for s in sockets:
            s.close()
        raise errors[0]
