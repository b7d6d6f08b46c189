"""bench/sender's rows, figures, table and bottleneck verdicts (bench/sender_table.py),
and how a client's report becomes a sample (bench/sender.py)."""

from __future__ import annotations

import sys
from collections import namedtuple

import pytest
from support.paths import BENCH

sys.path.insert(0, str(BENCH))  # the benchmarks import each other by name

import sender
import sender_table as T


def sample(mbit: float = 1000, *, server_cpu: float = 0.35, client_cpu: float = 0.3,
           server_core: float = 0.5, client_core: float = 0.5, share: float = 0.35,
           **kw) -> T.Sample:
    """A 1-second transfer at `mbit` Mbit/s."""
    return T.Sample(bytes=int(mbit * 1e6 / 8), seconds=1.0, server_cpu=server_cpu,
                    client_cpu=client_cpu, server_core=server_core, client_core=client_core,
                    share=share, **kw)


def test_figures_of_a_sample():
    x = T.Sample(bytes=500_000_000, seconds=2.0, server_cpu=0.7, client_cpu=0.5,
                 server_core=0.4, client_core=0.6, share=0.35)
    assert x.mbit_s == pytest.approx(2000)
    assert x.server_s_per_gb == pytest.approx(1.4)
    assert x.server_core_s_per_gb == pytest.approx(1.6)   # 0.4 x 2 s per 0.5 GB
    assert x.one_core_mbit_s == pytest.approx(8000 / 1.4)
    assert x.quota_used_pct == pytest.approx(100)         # 0.7 s of 0.35 x 2 s
    assert x.client_process_pct == pytest.approx(25)
    assert x.client_pct == pytest.approx(60)
    assert x.other_on_server_core_pct == pytest.approx(5)


def test_bottleneck_verdicts():
    # The server used its whole allowance: it never waited for the client.
    assert sample(server_cpu=0.34, client_core=0.95).bottleneck == "server"
    assert sample(server_cpu=0.34).client_not_bottleneck
    # ... but a client process that itself used 90 % of its core is not cleared.
    assert not sample(server_cpu=0.34, client_cpu=0.95).client_not_bottleneck
    # The server waited, and the client's core was full: the client limited.
    assert sample(server_cpu=0.2, client_core=0.93).bottleneck == "client"
    # Neither full: something else (losses, flow control) limited.
    assert sample(server_cpu=0.2, client_core=0.5).bottleneck == "neither"


def test_rows_and_their_names():
    rows = T.all_rows()
    assert [r.name for r in rows[:2]] == ["tcp", "tls"]
    assert len(rows) == 2 + 2 * len(T.PAYLOADS) * len(T.ACKS)
    assert len({r.name for r in rows}) == len(rows)
    assert "quic-gso-on-1452-reduced" in {r.name for r in rows}
    # Without h3server's --gso the GSO-on rows are left out, not faked.
    assert not any(r.gso for r in T.all_rows(gso_available=False))
    # Every seeds' figure sits beside a row that exists.
    assert set(T.SEEDS) <= {r.name for r in rows}


def test_select_by_patterns():
    rows = T.all_rows()
    assert T.select(rows, None) == rows
    got = T.select(rows, "tcp, quic-gso-on-1350-*")
    assert [r.name for r in got] == ["tcp", "quic-gso-on-1350-rfc", "quic-gso-on-1350-chromium",
                                     "quic-gso-on-1350-reduced"]
    with pytest.raises(ValueError, match="'udp' matches no row"):
        T.select(rows, "tcp,udp")


def test_table_is_relative_to_tls_over_tcp():
    rows = {r.name: r for r in T.all_rows()}
    tls = T.Summary(rows["tls"], [sample(1000, server_cpu=0.35, server_core=0.5),
                                  sample(1200, server_cpu=0.35, server_core=0.5),
                                  sample(1100, server_cpu=0.35, server_core=0.5)])
    # (The server's time alone sets the ratios; core 0's busy time is shown beside.)
    quic = T.Summary(rows["quic-gso-on-1452-reduced"],
                     [sample(500, server_cpu=0.35, server_core=0.5, acks_per_100=1.6, lost=3)])
    empty = T.Summary(rows["tcp"])
    text = T.table([empty, tls, quic])
    lines = text.splitlines()
    assert len(lines) == 4                       # head, rule, two rows with samples
    tls_cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    quic_cells = [c.strip() for c in lines[3].split("|")[1:-1]]
    assert tls_cells[0] == "TLS 1.3 over TCP (nginx)"
    assert tls_cells[1] == "1100 (1000–1200)"    # median (min–max)
    assert tls_cells[3] == "1.00" and tls_cells[5] == "1.00"
    assert tls_cells[2] == "2.55"                # 0.35 s per 1100 Mbit = 0.1375 GB
    assert tls_cells[-2:] == ["466", "1.00"]
    # Half the bytes for the same core time: half the one-core rate, twice the CPU per GB.
    assert quic_cells[3] == "2.20"               # CPU per GB: 1100 / 500
    assert quic_cells[5] == "0.45"               # one core: 500 / 1100
    assert quic_cells[10:12] == ["1.6", "3"]
    assert quic_cells[-2:] == ["464", "1.00"]
    # No TLS row: no ratios, rather than ratios to something else.
    assert T.table([quic]).splitlines()[2].split("|")[4].strip() == "—"


def test_notes_say_whether_the_client_was_ever_the_bottleneck():
    rows = {r.name: r for r in T.all_rows()}
    ok = T.Summary(rows["tls"], [sample(server_cpu=0.34)])
    assert "The client was not the bottleneck in any transfer." in T.notes([ok])
    bad = T.Summary(rows["tcp"], [sample(server_cpu=0.1, client_core=0.97)])
    text = T.notes([ok, bad])
    assert "Not shown server-bound in some transfer of: TCP (iperf3)." in text
    assert "1 of 2 transfers" in text


Times = namedtuple("Times", "user nice system idle iowait irq softirq steal")


def cores(t: float, busy0: float, busy1: float) -> list[Times]:
    """Both cores' cumulative times at t seconds (100 ticks a second), busy0 and busy1
    of them busy."""
    return [Times(b, 0, 0, 100 * t - b, 0, 0, 0, 0) for b in (busy0, busy1)]


def test_core_busy_share_between_the_samples_inside_the_window():
    s = sender.CoreSampler()
    s.samples = [(t, cores(t, b0, b1)) for t, b0, b1 in
                 ((0.0, 0, 0), (1.0, 10, 5), (2.0, 60, 30), (3.0, 110, 55))]
    # Samples inside [0.9, 3.1]: 1.0 and 3.0; core 0 busy 100 of 200, core 1 50 of 200.
    assert s.busy(0, 0.9, 3.1) == pytest.approx(0.5)
    assert s.busy(1, 0.9, 3.1) == pytest.approx(0.25)


def test_a_sample_from_each_clients_report():
    s = sender.CoreSampler()
    s.samples = [(0.0, cores(0, 0, 0)), (2.0, cores(2, 100, 60))]
    iperf = {"end": {"sum_received": {"seconds": 2.0, "bytes": 1_000_000_000},
                     "cpu_utilization_percent": {"host_total": 40.0}}}
    x = sender.sample_from(T.Row("tcp", "tcp"), iperf, 0.3, s, 2.0, lost=5, drops=0,
                           share=0.15)
    assert (x.bytes, x.seconds, x.client_cpu, x.server_cpu) == (1_000_000_000, 2.0, 0.8, 0.3)
    assert x.server_core == pytest.approx(0.5) and x.client_core == pytest.approx(0.3)
    assert x.acks_per_100 is None and x.lost == 5 and x.share == 0.15
    h3 = {"seconds": 2.0, "bytes": 250_000_000, "cpu_seconds": 0.6, "recv_packets": 1000,
          "sent_packets": 17}
    q = sender.sample_from(T.Row("quic-gso-on-1452-reduced", "quic", True, 1452, "reduced"), h3,
                           0.7, s, 2.0, lost=None, drops=2)
    assert q.acks_per_100 == pytest.approx(1.7) and q.client_drops == 2
    assert q.client_cpu == 0.6 and q.extra["client"] == h3
