"""The evidence parsers the protocol validation judges by: pcap flights, ss, qlog,
/proc/net/snmp. Pure."""

from __future__ import annotations

import struct

import pytest

from testbed.validate import evidence

# ------------------------------------------------------------------ pcap and flights

SERVER, CLIENT = "192.0.2.81", "198.18.0.2"


def _frame(src, dst, sport, dport, payload, seq=0, ack=0, flags=0x18, udp=False):
    if udp:
        l4 = struct.pack("!HHHH", sport, dport, 8 + payload, 0)
        proto = 17
    else:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
        proto = 6
    total = 20 + len(l4) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, proto, 0,
                     bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))))
    return b"\x00" * 12 + b"\x08\x00" + ip + l4  # headers only, as tcpdump -s 128


def _pcap(packets):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 128, 1)
    for t, frame in packets:
        out += struct.pack("<IIII", int(t), round((t % 1) * 1e6), len(frame), len(frame))
        out += frame
    return out


def _tcp_exchange(iw=10, paced_gap=0.0, extra_small=True):
    """Handshake flight, request, then a response of iw segments (the first a small
    HTTP/2 frame when extra_small), the first ACK one RTT later."""
    pk = []
    t = 100.0
    pk.append((t, _frame(SERVER, CLIENT, 443, 5000, 1300, seq=1000)))          # TLS flight
    pk.append((t + 0.075, _frame(CLIENT, SERVER, 5000, 443, 0, ack=2300, flags=0x10)))
    pk.append((t + 0.080, _frame(CLIENT, SERVER, 5000, 443, 400, seq=1, ack=2300)))  # request
    seq = 2300
    t0 = t + 0.081
    sizes = ([71] if extra_small else []) + [1448] * (iw - (1 if extra_small else 0))
    for i, n in enumerate(sizes):
        pk.append((t0 + i * paced_gap, _frame(SERVER, CLIENT, 443, 5000, n, seq=seq)))
        seq += n
    pk.append((t0 + 0.075, _frame(CLIENT, SERVER, 5000, 443, 0, ack=2300 + 2 * 1448,
                                  flags=0x10)))
    pk.append((t0 + 0.0751, _frame(SERVER, CLIENT, 443, 5000, 2896, seq=seq)))
    return pk


def test_read_pcap():
    pk = evidence.read_pcap(_pcap(_tcp_exchange()))
    assert len(pk) == 15
    first = pk[0]
    assert (first.src, first.sport, first.payload, first.seq) == (SERVER, 443, 1300, 1000)
    with pytest.raises(ValueError):
        evidence.read_pcap(b"\x00" * 40)


def test_flights_and_initial_window():
    pk = evidence.read_pcap(_pcap(_tcp_exchange(iw=10)))
    conn = evidence.connections(pk)[(CLIENT, 5000, SERVER)]
    fl = evidence.flights(conn)
    assert [f.segments for f in fl] == [1, 10, 2]
    data = evidence.data_flights(fl)
    assert len(data) == 1 and data[0].segments == 10
    assert evidence.outstanding_segments(conn, data[0]) == 10
    assert evidence.acked_before(conn, data[0]) == 1


def test_gso_superpackets_count_as_segments():
    pk = _tcp_exchange(iw=2, extra_small=False)
    pk.insert(4, (100.0812, _frame(SERVER, CLIENT, 443, 5000, 4 * 1448, seq=2300 + 2 * 1448)))
    conn = evidence.connections(evidence.read_pcap(_pcap(sorted(pk, key=lambda x: x[0]))))
    fl = evidence.flights(conn[(CLIENT, 5000, SERVER)])
    assert fl[1].segments == 6


def test_paced_and_burst_flights_differ():
    burst = evidence.read_pcap(_pcap(_tcp_exchange(iw=32, paced_gap=0.00001)))
    paced = evidence.read_pcap(_pcap(_tcp_exchange(iw=32, paced_gap=0.0012)))
    fb = evidence.data_flights(evidence.flights(burst))[0]
    fp = evidence.data_flights(evidence.flights(paced))[0]
    assert fb.duration < 0.001 and fp.duration == pytest.approx(31 * 0.0012, rel=0.01)


def test_udp_flights_count_datagrams():
    pk = [(1.0, _frame(CLIENT, SERVER, 6000, 443, 1250, udp=True))]
    pk += [(1.001 + i * 0.001, _frame(SERVER, CLIENT, 443, 6000, 1350, udp=True))
           for i in range(32)]
    pk.append((1.08, _frame(CLIENT, SERVER, 6000, 443, 43, udp=True)))
    conns = evidence.connections(evidence.read_pcap(_pcap(pk)), proto=evidence.UDP)
    (flight,) = evidence.flights(conns[(CLIENT, 6000, SERVER)])
    assert flight.segments == 32 and flight.bytes == 32 * 1350


# ------------------------------------------------------------------ ss

SS_STATE_GIVEN = """\
Recv-Q Send-Q Local Address:Port Peer Address:Port Process
0      0        192.0.2.81:443    198.18.0.2:51562
\t skmem:(r0,rb131072,t0,tb1048576,f0,w0,o0,bl0,d0) cubic wscale:7,7 rto:284 rtt:80.1/40 mss:1448 cwnd:32 bytes_sent:1295 pacing_rate 11.6Mbps/147573952589676412927bps delivery_rate 100bps
0      0        192.0.2.80:443    198.18.0.2:40000
\t skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d0) bbr wscale:7,7 rto:204 cwnd:10 pacing_rate 2.1Mbps delivered:3
"""

SS_WITH_STATE = """\
State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0      3791872     127.0.0.1:5555    127.0.0.1:47190
\t bbr wscale:10,10 rto:208 cwnd:15 pacing_rate 34359738352bps/34359738352bps
"""


def test_parse_ss():
    a, b = evidence.parse_ss(SS_STATE_GIVEN)
    assert (a.local, a.peer, a.cc, a.cwnd, a.sndbuf) == (
        "192.0.2.81:443", "198.18.0.2:51562", "cubic", 32, 1048576)
    assert a.pacing_rate == "11.6M" and a.max_pacing_rate == "147573952589676412927"
    assert (b.cc, b.cwnd, b.max_pacing_rate, b.sndbuf) == ("bbr", 10, None, 46080)
    (c,) = evidence.parse_ss(SS_WITH_STATE)
    assert (c.cc, c.cwnd, c.local) == ("bbr", 15, "127.0.0.1:5555")


# ------------------------------------------------------------------ qlog

def _qlog(path, events):
    import json
    head = {"file_schema": "urn:ietf:params:qlog:file:sequential", "trace": {}}
    path.write_text("".join("\x1e" + json.dumps(e) + "\n" for e in [head, *events]))


def test_qlog_cubic_and_initial_window(tmp_path):
    from testbed.validate.protocols import main_qlog, qlog_events
    _qlog(tmp_path / "small.sqlog", [{"time": 0, "name": "quic:packet_sent", "data": {}}])
    _qlog(tmp_path / "big.sqlog", [
        {"time": 0.1, "name": "quic:recovery_metrics_updated",
         "data": {"congestion_window": 43200, "smoothed_rtt": 333.0}},
        {"time": 0.1, "name": "quic:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 4.0, "name": "quic:recovery_metrics_updated", "data": {"bytes_in_flight": 1200}},
        {"time": 90, "name": "quic:congestion_state_updated",
         "data": {"new": "congestion_avoidance"}},
        {"time": 91, "name": "quic:recovery_metrics_updated",
         "data": {"congestion_window": 90000}},
    ] + [{"time": i, "name": "quic:packet_sent", "data": {}} for i in range(50)])
    main = main_qlog(tmp_path)
    assert main.name == "big.sqlog"
    events = qlog_events(main)
    assert evidence.qlog_initial_cwnd(events) == 43200
    assert evidence.qlog_states(events) == {"slow_start", "congestion_avoidance"}
    assert qlog_events(None) == [] and qlog_events(tmp_path / "missing") == []
    assert evidence.qlog_states([]) == set() and evidence.qlog_initial_cwnd([]) is None


def test_qlog_bbr_states_are_normalised(tmp_path):
    from testbed.validate.protocols import qlog_events
    _qlog(tmp_path / "q.sqlog", [
        {"name": "quic:congestion_state_updated", "data": {"new": "BBR Startup"}},
        {"name": "quic:congestion_state_updated", "data": {"new": "bbr_probe_bw_up"}}])
    assert evidence.qlog_states(qlog_events(tmp_path / "q.sqlog")) == {
        "bbr_startup", "bbr_probe_bw_up"}


def test_qlog_records_that_are_not_events_are_skipped():
    text = '\x1e{"name": "quic:congestion_state_updated", "data": {"new": "slow_start"}}\n' \
           '\x1e[1, 2]\n\x1enot json\n\x1e{"data": {"congestion_window": "many"}}\n'
    events = evidence.parse_qlog(text)
    assert len(events) == 2
    assert evidence.qlog_states(events) == {"slow_start"}
    assert evidence.qlog_initial_cwnd(events) is None


def test_parse_snmp():
    text = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 10 0 3 9 3\n")
    assert evidence.parse_snmp(text) == {
        "Ip": {"Forwarding": 1, "DefaultTTL": 64},
        "Udp": {"InDatagrams": 10, "NoPorts": 0, "InErrors": 3, "OutDatagrams": 9,
                "RcvbufErrors": 3}}


def test_qlog_transport_parameters_and_client_connection_options():
    from testbed.validate.evidence import (
        qlog_acks_per_data_packet,
        qlog_client_connection_options,
        qlog_largest_packet,
        qlog_parameters,
    )

    def remote(value):
        return {"name": "transport:parameters_set", "data": {
            "owner": "remote", "max_ack_delay": 25,
            "unknown_parameters": [{"id": 17, "value": "00"}, {"id": 0x3128, "value": value}]}}

    local = {"name": "transport:parameters_set", "data": {"owner": "local", "max_ack_delay": 5}}
    events = [local, remote("414b44554f524947")]
    assert qlog_parameters(events)["max_ack_delay"] == 5
    assert qlog_parameters(events, "remote")["max_ack_delay"] == 25
    assert qlog_client_connection_options(events) == ["AKDU", "ORIG"]
    # a 3-letter tag is padded with NUL; a ragged or broken value shows what it can
    assert qlog_client_connection_options([remote("41434b00")]) == ["ACK"]
    assert qlog_client_connection_options([remote("414b445541")]) == ["AKDU"]
    assert qlog_client_connection_options([remote("zz")]) == []
    assert qlog_client_connection_options([local]) == []
    one_rtt = {"packet_type": "1RTT"}
    events = [
        {"name": "transport:packet_sent", "data": {"header": {"packet_type": "initial"},
                                                   "raw": {"length": 1400}, "frames": [
                                                       {"frame_type": "crypto"}]}},
        {"name": "transport:packet_sent", "data": {"header": one_rtt, "raw": {"length": 1200},
                                                   "frames": [{"frame_type": "stream"}]}},
        {"name": "transport:packet_sent", "data": {"header": one_rtt, "raw": {"length": 60},
                                                   "frames": [{"frame_type": "ack"}]}},
        {"name": "transport:packet_received", "data": {"header": one_rtt, "frames": [
            {"frame_type": "ack"}, {"frame_type": "stream"}]}},
        {"name": "transport:packet_received", "data": {"header": {"packet_type": "handshake"},
                                                       "frames": [{"frame_type": "ack"}]}},
    ]
    assert qlog_largest_packet(events) == 1200  # 1-RTT packets only
    assert qlog_acks_per_data_packet(events) == (1, 1)
