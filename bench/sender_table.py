"""bench/sender's rows, figures and table: pure data, no root (unit-tested).

A row is one sender setting; a sample is one measured transfer of it. The
table shows, per row, medians over the repeats, each relative to TLS over TCP,
beside the figures of the Fastly quicly study the bench follows (one core,
Mbit/s): TCP 708, TLS over TCP 466, stock quicly 196, then quicly with ACKs
every 10th packet 240, with GSO 431, and with ACK reduction + GSO + 1460-byte
packets 464 (425 with Chrome's 1350-byte first packets).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch

SATURATED = 90.0
"""A core at or above this share of the transfer's wall time is saturated (%)."""

PAYLOADS = (1200, 1350, 1452)
"""QUIC UDP payload sizes: QUIC's minimum, Chromium's, the largest a 1500-byte MTU holds."""

ACKS: dict[str, tuple[str, list[str]]] = {
    "rfc": ("every 2nd packet (RFC 9000's default, as stock quicly)",
            ["--ack-every", "2", "--ack-decimation-after", "0"]),
    "chromium": ("Chromium's: every 2nd for 100 packets, then every 10th or 1/4 min RTT",
                 ["--ack-every", "10", "--ack-decimation-after", "100",
                  "--ack-delay-rtt", "0.25", "--max-ack-delay-ms", "25"]),
    "reduced": ("as Chromium's, every 64th packet after the first 100",
                ["--ack-every", "64", "--ack-decimation-after", "100",
                 "--ack-delay-rtt", "0.25", "--max-ack-delay-ms", "25"]),
}
"""The QUIC client's ACK policies (h3bulk options)."""

SEEDS = {
    "tcp": (708, "iperf, plain TCP"),
    "tls": (466, "TLS 1.3 over TCP (picotls)"),
    "quic-gso-off-1350-rfc": (196, "stock quicly (1280-byte packets, ACK every 2)"),
    "quic-gso-off-1350-chromium": (240, "quicly, ACK every 10 (1280 B)"),
    "quic-gso-on-1350-chromium": (431, "+ GSO 20 packets (1280 B)"),
    "quic-gso-on-1350-reduced": (425, "+ delayed-ACK ext., Chrome's 1350-byte packets"),
    "quic-gso-on-1452-reduced": (464, "ACK reduction + GSO + 1460-byte packets"),
}
"""The seeds' figures (Mbit/s, one core) beside the row that sets up most nearly the same."""

BASELINE = "tls"


@dataclass(frozen=True)
class Row:
    name: str
    kind: str
    """tcp (iperf3), tls (nginx), quic (h3server)."""
    gso: bool = False
    payload: int = 0
    acks: str = ""

    @property
    def label(self) -> str:
        if self.kind == "tcp":
            return "TCP (iperf3)"
        if self.kind == "tls":
            return "TLS 1.3 over TCP (nginx)"
        return f"QUIC h3server GSO {'on' if self.gso else 'off'}, {self.payload} B, ACKs {self.acks}"


def all_rows(gso_available: bool = True) -> list[Row]:
    rows = [Row("tcp", "tcp"), Row("tls", "tls")]
    for gso in (False, True):
        if gso and not gso_available:
            continue
        for payload in PAYLOADS:
            for acks in ACKS:
                rows.append(Row(f"quic-gso-{'on' if gso else 'off'}-{payload}-{acks}", "quic",
                                gso, payload, acks))
    return rows


def select(rows: list[Row], patterns: str | None) -> list[Row]:
    """Rows whose name matches one of the comma-separated glob patterns (all if None);
    ValueError naming a pattern that matches nothing."""
    if not patterns:
        return rows
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    for p in pats:
        if not any(fnmatch(r.name, p) for r in rows):
            raise ValueError(f"--rows: {p!r} matches no row (see --list)")
    return [r for r in rows if any(fnmatch(r.name, p) for p in pats)]


@dataclass(frozen=True)
class Sample:
    """One transfer: what the server and the client spent on it."""

    bytes: int
    seconds: float
    """Transfer time as the client measured it (first request to last byte)."""
    server_cpu: float
    """The server processes' user+system time over the transfer, s (/proc/PID/stat)."""
    client_cpu: float
    """The client process's user+system time over the transfer, s (its getrusage)."""
    server_core: float
    """Busy share of the server's core over the transfer (0-1; /proc/stat: everything
    that ran there, the server, its softirqs and any other load)."""
    client_core: float
    """Busy share of the client's core over the transfer (0-1), likewise."""
    share: float = 1.0
    """Share of its core the server was allowed (CPU quota; 1: the whole core)."""
    acks_per_100: float | None = None
    """Packets the QUIC client sent per 100 it received (nearly all ACK-only)."""
    lost: int | None = None
    """Packets the sender declared lost (QUIC: h3server's count; TCP: retransmits)."""
    client_drops: int = 0
    """Packets dropped on the client's side (its UDP socket buffer full, or its core's
    receive backlog full)."""
    extra: dict = field(default_factory=dict, compare=False)
    """Raw figures kept for --json (the client's report)."""

    @property
    def mbit_s(self) -> float:
        return self.bytes * 8 / self.seconds / 1e6

    @property
    def server_s_per_gb(self) -> float:
        return self.server_cpu / (self.bytes / 1e9)

    @property
    def server_core_s_per_gb(self) -> float:
        """Busy time of the server's core per GB (the server, its softirqs, any other load)."""
        return self.server_core * self.seconds / (self.bytes / 1e9)

    @property
    def one_core_mbit_s(self) -> float:
        """Throughput per second of the server's CPU time: what one whole core would
        sustain if the sender is the bottleneck. An upper bound for TCP and TLS: the
        kernel also sends TCP segments and takes ACKs in softirqs, which a throttled
        process is not charged for (server_core_s_per_gb bounds that from above)."""
        return 8000 / self.server_s_per_gb

    @property
    def quota_used_pct(self) -> float:
        """The server processes' CPU time as a share of what they were allowed."""
        return 100 * self.server_cpu / (self.share * self.seconds)

    @property
    def server_pct(self) -> float:
        return 100 * self.server_core

    @property
    def client_pct(self) -> float:
        return 100 * self.client_core

    @property
    def server_process_pct(self) -> float:
        return 100 * self.server_cpu / self.seconds

    @property
    def client_process_pct(self) -> float:
        return 100 * self.client_cpu / self.seconds

    @property
    def other_on_server_core_pct(self) -> float:
        """Busy share of the server's core the server's own time does not explain."""
        return max(0.0, self.server_pct - self.server_process_pct)

    @property
    def bottleneck(self) -> str:
        """server (it used at least 90 % of the CPU it was allowed: it never waited for
        the client), client (otherwise, when the client's core was saturated) or
        neither (something else limits, e.g. losses)."""
        if self.quota_used_pct >= SATURATED:
            return "server"
        if self.client_pct >= SATURATED:
            return "client"
        return "neither"

    @property
    def client_not_bottleneck(self) -> bool:
        """The server was the bottleneck and the client process had time to spare."""
        return self.bottleneck == "server" and self.client_process_pct < SATURATED


def sample_json(x: Sample) -> dict:
    """A sample with its derived figures and verdicts, for --json."""
    return {**asdict(x), **{k: getattr(x, k) for k in (
        "mbit_s", "server_s_per_gb", "server_core_s_per_gb", "one_core_mbit_s",
        "quota_used_pct", "client_process_pct", "client_pct", "bottleneck",
        "client_not_bottleneck")}}


@dataclass
class Summary:
    row: Row
    samples: list[Sample] = field(default_factory=list)

    def median(self, attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in self.samples)

    def spread(self, attr: str) -> tuple[float, float]:
        xs = [getattr(s, attr) for s in self.samples]
        return min(xs), max(xs)

    @property
    def client_never_bottleneck(self) -> bool:
        return all(s.client_not_bottleneck for s in self.samples)

    @property
    def server_bound(self) -> int:
        return sum(s.bottleneck == "server" for s in self.samples)


def ratio(value: float, base: float | None) -> float | None:
    return value / base if base else None


def _fmt_ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def table(summaries: list[Summary]) -> str:
    """The Markdown table: medians, ratios to TLS over TCP, the seeds' figures."""
    done = [s for s in summaries if s.samples]
    base = next((s for s in done if s.row.name == BASELINE), None)
    base_rate = base.median("one_core_mbit_s") if base else None
    base_cpu = base.median("server_s_per_gb") if base else None
    seed_base = SEEDS[BASELINE][0]
    head = ["row", "Mbit/s measured (min–max)", "server CPU s/GB", "× TLS", "one-core Mbit/s",
            "× TLS", "core 0 busy s/GB", "server quota used %",
            "client core % (process)", "server-bound", "ACKs /100 pkts", "sender lost",
            "client drops", "seeds Mbit/s", "seeds × TLS"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in done:
        lo, hi = s.spread("mbit_s")
        one_core, cpu = s.median("one_core_mbit_s"), s.median("server_s_per_gb")
        acks = [x.acks_per_100 for x in s.samples if x.acks_per_100 is not None]
        lost = [x.lost for x in s.samples if x.lost is not None]
        seed = SEEDS.get(s.row.name)
        cells = [
            s.row.label,
            f"{s.median('mbit_s'):.0f} ({lo:.0f}–{hi:.0f})",
            f"{cpu:.2f}",
            _fmt_ratio(ratio(cpu, base_cpu)),
            f"{one_core:.0f}",
            _fmt_ratio(ratio(one_core, base_rate)),
            f"{s.median('server_core_s_per_gb'):.2f}",
            f"{s.median('quota_used_pct'):.0f}",
            f"{s.median('client_pct'):.0f} ({s.median('client_process_pct'):.0f})",
            f"{s.server_bound}/{len(s.samples)}",
            f"{statistics.median(acks):.1f}" if acks else "—",
            str(max(lost)) if lost else "—",
            str(max(x.client_drops for x in s.samples)),
            str(seed[0]) if seed else "—",
            _fmt_ratio(seed[0] / seed_base) if seed else "—",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(summaries: list[Summary]) -> str:
    """What the table rests on: who the bottleneck was, the ACK policies, the noise."""
    done = [s for s in summaries if s.samples]
    samples = [x for s in done for x in s.samples]
    if not samples:
        return "no samples"
    busy = [s.row.label for s in done if not s.client_never_bottleneck]
    worst = max(samples, key=lambda x: x.client_process_pct)
    other = statistics.median(x.other_on_server_core_pct for x in samples)
    n_server = sum(x.bottleneck == "server" for x in samples)
    out = [
        f"Bottleneck: the server used >= 90 % of the CPU it was allowed "
        f"(its quota on core 0), so it never waited for the client, in "
        f"{n_server} of {len(samples)} transfers; the client process used at most "
        f"{worst.client_process_pct:.0f} % of core 1. "
        + ("The client was not the bottleneck in any transfer."
           if not busy else f"Not shown server-bound in some transfer of: {'; '.join(busy)}."),
        ("client core %: the busy share of core 1 over the transfer, everything that ran "
         "there: the client, the kernel's receive path (steered to core 1) and any other "
         "load on the machine; in brackets the client process alone."),
        (f"server CPU: the server processes' user+system time; one-core Mbit/s = 8000 / that "
         f"s/GB. core 0 busy s/GB also holds the kernel's work for the server in softirqs "
         f"while it was throttled or off the core (TCP sends segments on incoming ACKs there) "
         f"and any other load on core 0: median {other:.0f} % of the transfer beyond the "
         f"server's own time. Figures are medians of the rounds; the machine is shared, so "
         f"expect noise."),
        "QUIC client ACK policies:",
        *(f"  {name}: {desc}" for name, (desc, _) in ACKS.items()),
    ]
    return "\n".join(out)
