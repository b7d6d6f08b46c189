"""Pure parts of the server-parity check (`testbed validate servers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.formats import recording as rec
from testbed.validate import servers, verdict


def test_rounds_spread_the_runs_evenly():
    assert servers.rounds_of(31, 8) == [4, 4, 4, 4, 4, 4, 4, 3]
    assert sum(servers.rounds_of(31, 8)) == 31
    assert servers.rounds_of(2, 8) == [1, 1]
    assert servers.rounds_of(5, 0) == [5]


def test_gap_is_relative_to_tcp():
    assert servers.gap(100.0, 95.0) == pytest.approx(-0.05)
    assert servers.gap(20.0, 25.0) == pytest.approx(0.25)


def test_labels():
    assert [servers.label(s) for s in servers.SIZES] == ["10 KB", "100 KB", "1 MB", "10 MB"]
    assert servers.label(1234) == "1234 B"


def test_recording_has_a_page_and_file_hosts_on_their_own_ips(tmp_path):
    r = rec.load(servers.make_recording(tmp_path, (10_000, 100_000), per_size=3))
    assert len({o.ip for o in r.origins}) == 1 + 2 * 3  # the page, three hosts per size
    host, ip = servers.file_host(1, 2, 3)
    (x,) = [x for x in r.exchanges if x.host == host]
    assert (x.ip, x.target, x.body_size) == (ip, "/file-100000.bin", 100_000)
    small = [x for x in r.exchanges if x.body_size == 10_000]
    assert len(small) == 3 and len({x.body for x in small}) == 1  # stored once
    headers = dict(small[0].response_headers)
    assert headers["timing-allow-origin"] == "*"
    assert headers["access-control-allow-origin"] == "*"
    assert len(set(r.body(small[0]))) > 200  # random bytes: nothing compresses them


def test_enough_fresh_hosts_for_a_round():
    # two warm-ups and the largest round's downloads, one host each, plus spares
    assert servers.hosts_per_size(31, 8) == 2 + 4 + servers.SPARE_HOSTS


def test_too_many_hosts_is_refused(tmp_path):
    from testbed.errors import TestbedError as Err

    with pytest.raises(Err, match="do not fit"):
        servers.make_recording(tmp_path, (10, 20), per_size=100)


def result(stack, times):
    return servers.StackResult(stack, {10_000: times})


def test_rows_fail_above_the_allowed_gap():
    (row,) = servers.rows({"tcp": result("tcp", [10.0, 10.0, 11.0]),
                           "quic": result("quic", [10.4, 10.6, 9.0])}, (10_000,), 0.05)
    assert row.ok and verdict.all_ok([row])
    assert (row.name, row.figures, row.observed) == ("10 KB", ("10.00", "10.40"), "+4.0%")
    (row,) = servers.rows({"tcp": result("tcp", [10.0]), "quic": result("quic", [10.6])},
                          (10_000,), 0.05)
    assert row.ok is False and not verdict.all_ok([row])


def test_one_stack_shows_its_medians_and_judges_nothing():
    results = {"quic": result("quic", [12.0, 14.0])}
    (row,) = servers.rows(results, (10_000,), 0.05)
    assert row.ok is None and row.figures == ("13.00",)
    assert [c.header for c in servers.columns(results, 0.05)] == ["size", "quic (h3)"]
    lines = verdict.lines([row], servers.columns(results, 0.05), servers.title(results))
    assert lines == ["Server parity: median download time (ms), 2 downloads per size and stack",
                     "size: 10 KB\tquic (h3): 13.00"]


def test_both_stacks_get_the_same_window_pacing_and_packet_size():
    for pacing in (False, True):
        opts = servers.settings(32, pacing=pacing)
        args = opts["quic"].h3server_args
        assert args[args.index("--initial-cwnd-packets") + 1] == "32"
        assert args[args.index("--cc") + 1] == "cubic"
        assert args[args.index("--max-udp-payload") + 1] == "1472"  # 1500-byte IP packets
        assert args[args.index("--gso") + 1] == "on"
        assert args[args.index("--pacing") + 1] == ("on" if pacing else "off")
        tcp = opts["tcp"]
        assert tcp.route["initcwnd"] == 32
        assert tcp.sysctls["net.ipv4.tcp_congestion_control"] == "cubic"
        assert (tcp.pacing_method != "none") == pacing


def test_link_in_front_of_the_delay(tmp_path):
    assert servers.shells(10, 0, tmp_path) == ["mm-delay", "5"]
    wrap = servers.shells(10, 400, tmp_path)
    assert wrap[0] == "mm-link" and wrap[3:] == ["--", "mm-delay", "5"]
    assert wrap[1] == wrap[2]
    lines = Path(wrap[1]).read_text().split()
    # 400 Mbit/s in 1500-byte opportunities: 100/3 per ms
    assert len(lines) / int(lines[-1]) == pytest.approx(400 / 12)


def test_loss_report_names_what_each_stack_lost():
    tcp = servers.StackResult("tcp", {10_000: [1.0]})
    quic = servers.StackResult("quic", {10_000: [1.0]})
    line, lost = servers.loss_report({"tcp": tcp, "quic": quic})
    assert not lost and "tcp: 0 TUN queue drops, 0 TCP retransmissions" in line
    quic.lost["udp_rcvbuf_drops"] = 7
    line, lost = servers.loss_report({"tcp": tcp, "quic": quic})
    assert lost and "7 UDP receive-buffer drops" in line
