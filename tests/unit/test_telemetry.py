"""Telemetry: the sock_diag reader's parsing, the attribution of connections to trials,
the rows of table `connections` (TCP from tcp_info, QUIC from h3server's summary), and
the table through the store, `testbed export --table connections` and the analysis."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from support.paths import FIXTURES

from analysis import load_connections
from results_contract import schema
from results_contract.load import ResultsError
from testbed.campaign.cli import export
from testbed.campaign.store.store import Row, Store, read_connections
from testbed.host import tcpdiag
from testbed.measure import telemetry
from testbed.measure.telemetry import Conn

FIXTURE = FIXTURES / "telemetry" / "h3server-summary.json"
HOSTS = {"10.78.0.1": "static.a.test,www.a.test", "10.78.0.2": "img.b.test",
         "10.78.0.3": "api.a.test"}


def row(trial_id: str, status: str = "ok") -> Row:
    site, network, protocol, run = trial_id.split("+")
    return Row(trial_id=trial_id, campaign="c", site=site, network=network, setting=protocol,
               run=int(run), status=status, reason=None if status == "ok" else "timeout",
               attempt=1, started_at="2026-01-01T00:00:00.000+00:00", wall_s=3.5,
               plt_ms=None, fvc_ms=None, lvc_ms=None, vc85_ms=None, si_ms=None, ttfb_ms=None,
               requests=None, bytes=None, misses=None, http_versions=None, rtt_ms=24.0,
               origins=2)


# --- parsing -----------------------------------------------------------------------------------
def info_bytes(**values: int) -> bytes:
    fields = dict.fromkeys(tcpdiag.INFO_NAMES, 0)
    fields.update(values)
    fmt = "=" + "".join(f for _, f in tcpdiag.TCP_INFO)
    return struct.pack(fmt, *(fields[n] for n in tcpdiag.INFO_NAMES))


def attr(kind: int, data: bytes) -> bytes:
    raw = struct.pack("=HH", 4 + len(data), kind) + data
    return raw + b"\0" * (-len(raw) % 4)


def diag_msg(local=("10.78.0.1", 443), peer=("198.18.0.2", 40000), cookie=77,
             attrs: bytes = b"") -> bytes:
    body = tcpdiag.MSG.pack(
        socket.AF_INET, 1, 0, 0, struct.pack(">H", local[1]), struct.pack(">H", peer[1]),
        socket.inet_aton(local[0]) + b"\0" * 12, socket.inet_aton(peer[0]) + b"\0" * 12,
        0, cookie.to_bytes(8, "little"), 0, 0, 0, 0, 0) + attrs
    return tcpdiag.NLMSGHDR.pack(16 + len(body), tcpdiag.SOCK_DIAG_BY_FAMILY, 0, 1, 0) + body


def done() -> bytes:
    return tcpdiag.NLMSGHDR.pack(20, tcpdiag.NLMSG_DONE, 0, 1, 0) + b"\0" * 4


def test_a_dump_answer_parses_into_sockets_with_tcp_info_cc_and_bbr():
    info = info_bytes(snd_cwnd=32, snd_mss=1448, bytes_acked=1, busy_time=4000,
                      total_retrans=3, delivery_rate=1_000_000)
    bbr = struct.pack("=IIIII", 0x10, 0x1, 25_000, 256, 512)  # bw = 2**32 + 16 bytes/s
    data = diag_msg(attrs=attr(tcpdiag.INET_DIAG_INFO, info)
                    + attr(tcpdiag.INET_DIAG_CONG, b"bbr\0")
                    + attr(tcpdiag.INET_DIAG_BBRINFO, bbr)) + done()
    found, finished = tcpdiag.parse_messages(data)
    assert finished
    (s,) = found
    assert (s.local, s.peer, s.cookie, s.cc) == (("10.78.0.1", 443), ("198.18.0.2", 40000),
                                                 77, "bbr")
    assert s.info["snd_cwnd"] == 32 and s.info["busy_time"] == 4000
    assert s.info["total_retrans"] == 3 and s.info["bytes_acked"] == 1
    assert s.bbr_bw_bps == ((1 << 32) + 16) * 8 and s.bbr_min_rtt_us == 25_000


def test_an_older_kernels_shorter_tcp_info_keeps_the_fields_it_has():
    short = info_bytes(snd_cwnd=10, rtt=24_000)[:104]  # up to total_retrans
    info = tcpdiag.parse_info(short)
    assert info["snd_cwnd"] == 10 and info["rtt"] == 24_000
    assert "bytes_sent" not in info and "pacing_rate" not in info


def test_a_kernel_error_and_a_broken_message_are_refused():
    err = tcpdiag.NLMSGHDR.pack(20, tcpdiag.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -1)
    with pytest.raises(tcpdiag.DiagError, match="sock_diag"):
        tcpdiag.parse_messages(err)
    with pytest.raises(tcpdiag.DiagError, match="length"):
        tcpdiag.parse_messages(tcpdiag.NLMSGHDR.pack(999, 20, 0, 1, 0) + b"\0" * 8)
    bad_attr = diag_msg(attrs=struct.pack("=HH", 200, tcpdiag.INET_DIAG_INFO))
    with pytest.raises(tcpdiag.DiagError, match="attribute"):
        tcpdiag.parse_messages(bad_attr)


def test_a_dump_asks_for_connections_only():
    """No listener, request socket or time-wait stub, and not TCP_BOUND_INACTIVE (13),
    which makes the kernel walk the bind hash table that namespaces share."""
    states = struct.unpack_from("=I", tcpdiag.request(socket.AF_INET), 16 + 4)[0]
    assert states == tcpdiag.STATES
    assert all(states & (1 << s) for s in (1, 2, 4, 5, 8, 9, 11))
    assert not any(states & (1 << s) for s in (3, 6, 10, 12, 13, 14, 15))


def test_a_namespace_is_made_with_its_own_tcp_table_where_the_kernel_can(monkeypatch):
    from testbed.host import netns
    argv = netns.add_argv("tb-1-srv", 1024)
    if os.path.exists(netns.CHILD_EHASH):
        assert argv[:3] == ["unshare", "--net", "--"] and argv[-1] == "tb-1-srv"
        assert "tcp_child_ehash_entries=1024" in argv[5] and "tb-1-srv" not in argv[5]
    monkeypatch.setattr(netns, "CHILD_EHASH", "/nonexistent/knob")
    assert netns.add_argv("tb-1-srv") == ["ip", "netns", "add", "tb-1-srv"]
    assert netns.add_argv("x", None) == ["ip", "netns", "add", "x"]


def test_an_ipv4_mapped_address_reads_as_ipv4():
    assert tcpdiag._address(socket.AF_INET6, socket.inet_pton(
        socket.AF_INET6, "::ffff:10.78.0.1")) == "10.78.0.1"


# --- attribution -------------------------------------------------------------------------------
def test_connections_go_to_the_trial_whose_window_holds_them():
    conns = [Conn(1, first_seen=5.0), Conn(2, first_seen=10.5), Conn(3, ended=21.0),
             Conn(4, first_seen=31.0), Conn(5, first_seen=15.2), Conn(6)]
    # trial 0 from 10, trial 1 never launched, trial 2 from 20; a switch at 15..16
    out = telemetry.attribute(conns, [10.0, None, 20.0], switches=[(15.0, 16.0)])
    assert [[c.cookie for c in t] for t in out] == [[2], [], [3, 4]]


# --- rows --------------------------------------------------------------------------------------
def sock(**info) -> tcpdiag.TcpSocket:
    return tcpdiag.TcpSocket(socket.AF_INET, 7, ("10.78.0.2", 443), ("198.18.0.2", 41000), 9,
                             info=info)


def test_a_tcp_row_in_the_contracts_units():
    c = Conn(9, first_seen=100.0, ended=102.5, initial_cwnd=10, cc="cubic",
             last=sock(rtt=31_500, min_rtt=24_000, rttvar=2_000, snd_cwnd=20, snd_mss=1448,
                       snd_ssthresh=0x7fffffff, bytes_sent=1_000_000, bytes_acked=990_000,
                       bytes_retrans=2896, segs_out=700, total_retrans=2, lost=0,
                       delivery_rate=3_000_000, pacing_rate=2 ** 64 - 1, busy_time=400_000,
                       rwnd_limited=1_000, sndbuf_limited=0))
    r = telemetry.tcp_row(c, HOSTS)
    assert set(r) == set(schema.CONNECTION_COLUMNS) - {"trial_id"}
    assert r["origin"] == "img.b.test" and r["server_port"] == 443 and r["cc"] == "cubic"
    assert r["duration_ms"] == 2500.0 and r["srtt_ms"] == 31.5 and r["min_rtt_ms"] == 24.0
    assert r["cwnd_initial_packets"] == 10 and r["cwnd_bytes"] == 20 * 1448
    assert r["ssthresh_packets"] is None  # still in the first slow start
    assert r["pacing_rate_bps"] is None  # unlimited
    assert r["delivery_rate_bps"] == 24_000_000.0  # no sample seen: the last reading's
    c.read(sock(delivery_rate=5_000_000))
    c.read(sock(delivery_rate=1_000))  # the app-limited tail
    assert telemetry.tcp_row(c, HOSTS)["delivery_rate_bps"] == 40_000_000.0
    assert (r["busy_ms"], r["rwnd_limited_ms"], r["sndbuf_limited_ms"]) == (400.0, 1.0, 0.0)
    assert r["packets_retrans"] == 2 and r["bytes_retrans"] == 2896 and r["requests"] is None


def fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def test_quic_rows_are_the_trials_new_connections_with_their_latest_figures():
    after = fixture()
    before = {"conns": [after["conns"][2]]}  # cc03 served an earlier trial
    later_open = json.loads(json.dumps(after))
    later_open["conns"][1]["lost_packets"] = 9
    later_closed = json.loads(json.dumps(later_open))
    later_closed["conns"][1].update(closed=True, lost_packets=11)
    even_later = json.loads(json.dumps(later_closed))
    even_later["conns"][1]["lost_packets"] = 99  # after its close: not read
    rows = telemetry.quic_rows(before, after, [later_open, later_closed, even_later], HOSTS)
    assert [(r["server_ip"], r["origin"]) for r in rows] == [
        ("10.78.0.1", "static.a.test,www.a.test"), ("10.78.0.2", "img.b.test")]
    img = rows[1]
    assert img["packets_lost"] == 11 and img["packets_retrans"] == 6
    assert img["cwnd_initial_packets"] == 10 and img["cwnd_packets"] == 60
    assert img["bytes_retrans"] == 8100 and img["requests"] == 27
    assert img["client_ip"] == "198.18.0.2" and img["client_port"] == 40002
    assert set(img) == set(schema.CONNECTION_COLUMNS) - {"trial_id"}


def test_quic_rows_survive_a_summary_without_conns_and_malformed_entries():
    assert telemetry.quic_rows(None, {"requests": 3}, [], HOSTS) == []
    odd = {"conns": [{"id": 5}, "x", {"id": "z", "local": "nowhere"},
                     {"id": "y", "local": "[::ffff:10.78.0.3]:443", "rtt_ms": "fast",
                      "requests": True}]}
    (r,) = telemetry.quic_rows({}, odd, [], HOSTS)
    assert r["server_ip"] == "::ffff:10.78.0.3" or r["server_ip"] == "10.78.0.3"
    assert r["srtt_ms"] is None and r["requests"] is None


# --- the table ---------------------------------------------------------------------------------
def conn_row(**kw) -> dict:
    base = {c: None for c in schema.CONNECTION_COLUMNS}
    base.update(trial_id="ignored", transport="tcp", server_ip="10.78.0.1", server_port=443,
                client_ip="198.18.0.2", client_port=40000, cc="cubic", cwnd_packets=10,
                srtt_ms=31.5, origin="a.test,www.a.test")
    base.update(kw)
    return base


@pytest.fixture
def results(tmp_path):
    with Store(tmp_path / "trials.sqlite") as store:
        store.add(row("s+dsl+tcp+0"), [conn_row(), conn_row(client_port=40001, packets_retrans=3)])
        store.add(row("s+dsl+quic+0"), [conn_row(transport="quic", requests=4, cc="bbr2")])
        store.add(row("s+dsl+tcp+1", status="failed"), [conn_row(client_port=1)])
        store.add(row("s+dsl+tcp+2"))
    return tmp_path


def test_connections_are_stored_with_their_trial_and_go_with_a_failed_one(results):
    rows = read_connections(results / "trials.sqlite")
    assert [(r["trial_id"], r["client_port"]) for r in rows] == [
        ("s+dsl+quic+0", 40000), ("s+dsl+tcp+0", 40000), ("s+dsl+tcp+0", 40001),
        ("s+dsl+tcp+1", 1)]
    with Store(results / "trials.sqlite") as store:
        assert store.forget_failed() == ["s+dsl+tcp+1"]
    assert "s+dsl+tcp+1" not in {r["trial_id"] for r in read_connections(
        results / "trials.sqlite")}


def test_a_failed_insert_stores_neither_the_trial_nor_its_connections(tmp_path):
    with Store(tmp_path / "trials.sqlite") as store:
        with pytest.raises(RuntimeError), store.adding(row("s+dsl+tcp+0"), [conn_row()]):
            raise RuntimeError("the files could not be placed")
        assert store.finished() == set()
    assert read_connections(tmp_path / "trials.sqlite") == []


def test_export_and_the_analysis_read_the_same_connections(results, tmp_path):
    csv, parquet = tmp_path / "c.csv", tmp_path / "c.parquet"
    for option, out in (("--csv", csv), ("--parquet", parquet)):
        done_ = CliRunner().invoke(export, [str(results), "--table", "connections", option,
                                            str(out)])
        assert done_.exit_code == 0, done_.output
    assert list(pd.read_csv(csv).columns) == list(schema.CONNECTION_COLUMNS)
    frames = [load_connections(x) for x in (results, results / "trials.sqlite", csv, parquet)]
    for f in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], f)
    assert len(frames[0]) == 4 and frames[0]["packets_retrans"].dtype == "Int64"
    assert frames[0]["requests"].tolist()[0] == 4


def test_export_defaults_to_the_trials(results, tmp_path):
    out = tmp_path / "t.csv"
    assert CliRunner().invoke(export, [str(results), "--csv", str(out)]).exit_code == 0
    assert list(pd.read_csv(out).columns) == list(schema.COLUMNS)


def test_a_store_from_before_the_table_reads_as_no_connections(tmp_path):
    import sqlite3

    con = sqlite3.connect(tmp_path / "trials.sqlite")
    con.execute(schema.create_table())
    con.close()
    assert read_connections(tmp_path / "trials.sqlite") == []
    assert list(load_connections(tmp_path).columns) == list(schema.CONNECTION_COLUMNS)
    with pytest.raises(ResultsError, match="missing column"):
        (tmp_path / "x.csv").write_text("trial_id,transport\nt,tcp\n")
        load_connections(tmp_path / "x.csv")


# --- the real kernel ---------------------------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="the destroy broadcasts need CAP_NET_ADMIN")
def test_the_recorder_sees_a_connection_that_closes_between_two_dumps():
    """A loopback server in this process's namespace: one connection lives for several
    dumps, one opens and closes within one (the dumps are 10 s apart); both are seen,
    the short one from the kernel's destroy broadcast with its final tcp_info."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()
    port = ls.getsockname()[1]
    rec = telemetry.Recorder(None, ["127.0.0.1"], interval=10.0, idle_interval=10.0).__enter__()
    time.sleep(0.2)  # after the first dump: the next is 10 s away
    short_client = socket.create_connection(("127.0.0.1", port))
    short, _ = ls.accept()
    short.sendall(b"x" * 5000)
    short_client.recv(5000)
    short.close()
    short_client.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(
            c.ended for c in rec.connections() if c.last.local[1] == port):
        time.sleep(0.05)
    rec.stop()
    ls.close()
    mine = [c for c in rec.connections() if c.last.local[1] == port]
    assert len(mine) == 1 and mine[0].first_seen is None and mine[0].ended
    assert mine[0].last.info["bytes_sent"] == 5000
    assert mine[0].initial_cwnd is None  # its first reading came after the data
    assert telemetry.tcp_row(mine[0], {"127.0.0.1": "lo.test"})["origin"] == "lo.test"
    assert not [t for t in threading.enumerate() if t.name == "tcp-telemetry"]


# --- a block's trials --------------------------------------------------------------------------
class FakeRecorder:
    def __init__(self, conns):
        self.conns = conns

    def connections(self):
        return self.conns


def test_a_blocks_driver_gives_each_trial_its_tcp_and_quic_rows():
    from testbed.campaign.run.block import BlockDriver
    from testbed.campaign.run.rows import TrialRecord
    from testbed.formats import recording as rec_mod

    recording = rec_mod.Recording(
        path=Path("."), name="s", url="https://www.a.test/", recorded_at="", loads=1,
        origins=(rec_mod.Origin("https", "static.a.test", 443, "10.78.0.1"),
                 rec_mod.Origin("https", "www.a.test", 443, "10.78.0.1"),
                 rec_mod.Origin("https", "img.b.test", 443, "10.78.0.2")),
        exchanges=())
    driver = BlockDriver.__new__(BlockDriver)
    after = fixture()
    driver.records = [TrialRecord(None, launched_at=10.0),
                      TrialRecord(None, launched_at=20.0, before={"conns": []}, after=after),
                      TrialRecord(None)]  # never launched
    driver.switches = [(19.0, 19.5)]
    tcp = [Conn(1, first_seen=12.0, cc="cubic", last=sock(snd_cwnd=10)),
           Conn(2, first_seen=19.2, last=sock()),  # a readiness probe
           Conn(3, ended=25.0, last=sock(total_retrans=4))]
    driver.connections(FakeRecorder(tcp), None, recording)
    first, second, third = (r.connections for r in driver.records)
    assert [r["transport"] for r in first] == ["tcp"] and first[0]["cc"] == "cubic"
    assert sorted(r["transport"] for r in second) == ["quic", "quic", "quic", "tcp"]
    assert [r["packets_retrans"] for r in second if r["transport"] == "tcp"] == [4]
    assert {r["origin"] for r in second if r["transport"] == "quic"} >= {
        "static.a.test,www.a.test", "img.b.test"}
    assert third is None


# --- tcp_info's layout, pinned to the kernel's ------------------------------------------------
# Byte offsets of struct tcp_info in include/uapi/linux/tcp.h (the kernel's natural
# alignment), written out by hand so that a slip in TCP_INFO cannot hide in a test that
# packs its bytes with TCP_INFO itself.
KERNEL_OFFSETS = {"state": 0, "rto": 8, "snd_mss": 16, "lost": 32, "retrans": 36, "pmtu": 60,
                  "rtt": 68, "snd_ssthresh": 76, "snd_cwnd": 80, "total_retrans": 100,
                  "pacing_rate": 104, "max_pacing_rate": 112, "bytes_acked": 120,
                  "segs_out": 136, "min_rtt": 148, "delivery_rate": 160, "delivered": 192,
                  "bytes_sent": 200, "bytes_retrans": 208, "snd_wnd": 228}
KERNEL_SIZE = 232  # up to tcpi_snd_wnd (kernel 5.4 and later)


def test_tcp_info_offsets_are_the_kernels():
    offset, seen = 0, {}
    for name, fmt in tcpdiag.TCP_INFO:
        seen[name] = offset
        offset += struct.calcsize("=" + fmt)
    assert {n: seen[n] for n in KERNEL_OFFSETS} == KERNEL_OFFSETS
    assert offset == KERNEL_SIZE


def test_a_real_sockets_tcp_info_parses_to_what_the_kernel_knows():
    """getsockopt(TCP_INFO) of a fresh loopback connection, parsed: established, the
    loopback path MTU, an initial window of 10, RTO at least the kernel's 200 ms floor."""
    with (socket.create_server(("127.0.0.1", 0)) as srv,
          socket.create_connection(srv.getsockname(), timeout=10) as cli):
        raw = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
        peer, _ = srv.accept()
        peer.close()
    info = tcpdiag.parse_info(raw)
    assert info["state"] == 1  # TCP_ESTABLISHED
    lo_mtu = int(Path("/sys/class/net/lo/mtu").read_text())
    assert info["pmtu"] == min(lo_mtu, 65535)  # lo's MTU, at most an IP datagram
    assert info["snd_cwnd"] == 10 and info["total_retrans"] == 0
    assert 200_000 <= info["rto"] <= 3_000_000, info["rto"]  # microseconds
    assert 0 < info["snd_mss"] <= 65536 and info["snd_ssthresh"] >= 10
