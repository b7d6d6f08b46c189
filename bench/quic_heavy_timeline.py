"""The timeline figure of docs/quic-heavy.md: the busiest connection of one page load per
stack, from the trials' own captures (a campaign with capture = ["qlog", "pcap"]).

    .venv/bin/python bench/quic_heavy_timeline.py OUT.png TCP_TRIAL QUIC_TRIAL TITLE

The trials' folders (results/NAME/trials/ID), each with pcap.pcap.gz (taken on the
server's side of the link), the QUIC one with qlog.tar.gz. Panels: the server's sending
rate over all connections per stack; TCP+'s two busiest connections' bytes in flight
(highest sequence number sent minus highest acknowledgement, retransmissions marked);
QUIC's busiest connection's congestion window and bytes in flight from quiche's
metrics_updated events (congestion events marked).
"""

from __future__ import annotations

import gzip
import sys
import tarfile
from pathlib import Path

from testbed.validate import evidence


def quic_series(folder: Path):
    """(t s, cwnd KB, in flight KB, congestion event times s) of the qlog with the most
    packets sent; quiche 0.24.6 logs no packet_lost event, so a cut of cwnd marks one."""
    best = None
    with tarfile.open(folder / "qlog.tar.gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                events = evidence.parse_qlog(tar.extractfile(m).read().decode(errors="replace"))
                sent = sum(str(e.get("name", "")).endswith("packet_sent") for e in events)
                if best is None or sent > best[0]:
                    best = (sent, events)
    t, cwnd, infl, cuts = [], [], [], []
    cw = 0.0
    for e in best[1]:
        data = e.get("data") or {}
        if not str(e.get("name", "")).endswith("metrics_updated") or "bytes_in_flight" not in data:
            continue
        new = data.get("congestion_window", cw * 1000) / 1000
        if new < cw:
            cuts.append(float(e["time"]) / 1000)
        cw = new
        t.append(float(e["time"]) / 1000)
        cwnd.append(cw)
        infl.append(data["bytes_in_flight"] / 1000)
    return t, cwnd, infl, cuts


def server_packets(folder: Path) -> list:
    return evidence.read_pcap(gzip.decompress((folder / "pcap.pcap.gz").read_bytes()))


def tcp_series(conn):
    """(t s, in flight KB, retransmission times s) of one TCP connection's packets."""
    top = acked = None
    t, infl, rtx = [], [], []
    for p in sorted(conn, key=lambda p: p.t):
        if p.sport == 443 and p.payload > 0:
            end = (p.seq + p.payload) % 2**32
            if top is not None and end <= top:
                rtx.append(p.t)
            top = end if top is None else max(top, end)
        elif p.dport == 443 and p.flags & 0x10:
            acked = p.ack if acked is None else max(acked, p.ack)
        if top is not None and acked is not None:
            t.append(p.t)
            infl.append(max(0, top - acked) / 1000)
    return t, infl, rtx


def sending_rate(packets, t0: float, bin_s: float = 0.1):
    """(bin starts s, Mbit/s) of the server's payload over all connections."""
    bins: dict[int, int] = {}
    for p in packets:
        if p.sport == 443 and p.payload > 0:
            k = int((p.t - t0) / bin_s)
            bins[k] = bins.get(k, 0) + p.payload
    n = max(bins, default=0) + 1
    return [k * bin_s for k in range(n)], [bins.get(k, 0) * 8 / bin_s / 1e6 for k in range(n)]


def busiest(packets, proto: int, n: int):
    conns = evidence.connections(packets, proto=proto)
    return sorted(conns.values(), key=lambda c: -sum(p.payload for p in c if p.sport == 443))[:n]


def main(argv: list[str]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out, tcp, quic, title = Path(argv[0]), Path(argv[1]), Path(argv[2]), argv[3]
    fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
    tp, qp = server_packets(tcp), server_packets(quic)
    t0 = {"TCP+": min(p.t for p in tp), "QUIC": min(p.t for p in qp)}
    for (label, packets), color in zip((("TCP+", tp), ("QUIC", qp)), ("C1", "C0"), strict=True):
        x, y = sending_rate(packets, t0[label])
        axes[0].step(x, y, where="post", label=label, color=color)
    axes[0].axhline(25, color="grey", ls=":", lw=1, label="link 25 Mbit/s")
    axes[0].set_ylabel("Mbit/s")
    axes[0].set_title(f"{title}: the server's sending rate, all connections, per 100 ms",
                      fontsize=9, loc="left")
    for i, conn in enumerate(busiest(tp, evidence.TCP, 2)):
        t, infl, rtx = tcp_series(conn)
        mb = sum(p.payload for p in conn if p.sport == 443) / 1e6
        axes[1].plot([x - t0["TCP+"] for x in t], infl, lw=0.6, color=f"C{i + 1}",
                     label=f"connection {i + 1} ({mb:.1f} MB)")
        axes[1].plot([x - t0["TCP+"] for x in rtx], [0] * len(rtx), "|", color="red", ms=8)
    axes[1].set_title("TCP+: bytes in flight of its two busiest connections (pcap; red: "
                      "retransmissions)", fontsize=9, loc="left")
    t, cwnd, infl, cuts = quic_series(quic)
    start = busiest(qp, evidence.UDP, 1)[0][0].t - t0["QUIC"]
    axes[2].plot([x + start for x in t], cwnd, label="cwnd", color="C0")
    axes[2].plot([x + start for x in t], infl, lw=0.6, color="C9", label="bytes in flight")
    axes[2].plot([x + start for x in cuts], [0] * len(cuts), "|", color="red", ms=8)
    axes[2].set_title("QUIC: its busiest connection (h3server's qlog; red: congestion events)",
                      fontsize=9, loc="left")
    for ax in axes:
        ax.legend(fontsize=7, loc="upper right")
    for ax in axes[1:]:
        ax.set_ylabel("KB")
    axes[-1].set_xlabel("seconds since the trial's first packet")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1:])
