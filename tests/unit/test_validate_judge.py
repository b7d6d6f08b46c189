"""The protocol validation's judge: a pure function of a setting and hand-made
observations (what capture() would have seen on the wire, in `ss` and in the qlog)."""

from __future__ import annotations

from dataclasses import replace

from support.quic_knobs import ALT_SVC, KNOBS

from testbed.formats.profiles import load_protocol
from testbed.protocols.apply import server_options
from testbed.validate import verdict
from testbed.validate.bbr_generation import Finding
from testbed.validate.evidence import TCP, UDP, Packet, SockInfo
from testbed.validate.protocols import (
    FILE_IP,
    FILE_SIZE,
    Observation,
    Result,
    bbr_finding,
    judge,
    one_generation,
)
from testbed.validate.site import Fetched

CLIENT = "198.18.0.2"
LTE_RTT = 0.074


def served(t, n, seq=0, proto=TCP, server=FILE_IP):
    return Packet(t, proto, server, CLIENT, 443, 5000, n, seq=seq, flags=0x18)


def from_client(t, n=0, ack=0, proto=TCP, server=FILE_IP):
    return Packet(t, proto, CLIENT, server, 5000, 443, n, seq=1, ack=ack,
                  flags=0x18 if n else 0x10)


def tcp_file(window: int, after_idle: int, gap: float = 0.00001) -> list[Packet]:
    """A TLS flight the client acknowledges, the request, the response's first flight of
    `window` segments `gap` apart, all acknowledged; 4.2 s later the second request and
    a flight of `after_idle` segments."""
    pk = [served(100.0, 1300, seq=1000), from_client(100.075, ack=2300),
          from_client(100.080, 400, ack=2300)]
    seq = 2300
    for i in range(window):
        pk.append(served(100.081 + i * gap, 1448, seq))
        seq += 1448
    pk.append(from_client(100.081 + window * gap + LTE_RTT, ack=seq))
    pk.append(from_client(104.3, 400, ack=seq))
    for i in range(after_idle):
        pk.append(served(104.301 + i * gap, 1448, seq))
        seq += 1448
    pk.append(from_client(104.301 + after_idle * gap + LTE_RTT, ack=seq))
    return pk


def ss_detail(cc="cubic", pacing_gain=None, cwnd_gain=None):
    """An `ss -tinm` details line; BBR's model with the gains given."""
    model = (f" bbr:(bw:2754936bps,mrtt:42.528,pacing_gain:{pacing_gain},cwnd_gain:{cwnd_gain})"
             if pacing_gain else "")
    return (f"skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d0) {cc} wscale:10,10 rto:252 "
            f"rtt:49.028/5.32 mss:1448 cwnd:40{model} send 9450926bps")


BBR1_GAINS = ((2.88672, 2.88672), (0.34375, 2.88672), (1.25, 2), (0.75, 2), (1, 2))
"""BBRv1's gains (pacing, cwnd) as ss prints them: startup, drain, ProbeBW's cycle."""


def sock(cc="cubic", cwnd=10, sndbuf=46080, max_pacing_rate=None, gains=(None, None)):
    return SockInfo(f"{FILE_IP}:443", f"{CLIENT}:5000", cc, cwnd, None, max_pacing_rate, sndbuf,
                    ss_detail(cc, *gains))


def tcp_observation(window=10, after_idle=10, gap=0.00001, iw=10, cc="cubic", buffers=None,
                    max_pacing_rate=None, protocol="h2", gains=None) -> Observation:
    rmem = wmem = buffers or "4096 131072 6291456"
    return Observation(
        applied={"net.ipv4.tcp_congestion_control": cc, "net.ipv4.tcp_rmem": rmem,
                 "net.ipv4.tcp_wmem": wmem,
                 "route": f"198.18.0.2 dev veth0 initcwnd {iw} initrwnd {iw}"},
        fetched=(Fetched(200, FILE_SIZE, protocol, 300.0),) * 2,
        packets=tuple(tcp_file(window, after_idle, gap)),
        socks=tuple(sock(cc, iw, int((buffers or "0 46080").split()[1]), max_pacing_rate, g)
                    for g in gains or ((None, None),) * 3),
        available_cc="reno bbr cubic")


def quic_observation(gap=0.001, states=("slow_start", "congestion_avoidance"), cwnd=43200,
                     payload=1350, cc="cubic", gso_sends=(), ack_delay=25, exponent=3,
                     options=("ORIG",), acks=4, first_pacing=1_520_555) -> Observation:
    """A QUIC file download as capture() sees it: the wire (`gso_sends`: sizes of sends
    of several datagrams, after the first flight), the qlog (congestion window and states,
    the first pacing rate, set with the first RTT sample of 82.1 ms, 1-RTT packets of
    `payload` bytes, the transport parameters each side sent, `acks` ACK frames from the
    client) and h3server's summary."""
    pk = [from_client(1.0, 1250, proto=UDP)]
    pk += [served(1.001 + i * 0.0001, 1200, proto=UDP) for i in range(3)]  # handshake
    pk.append(from_client(1.08, 1250, proto=UDP))  # Finished and the request
    pk += [served(1.081 + i * gap, payload, proto=UDP) for i in range(32)]
    pk.append(from_client(1.081 + 32 * gap + LTE_RTT, 40, proto=UDP))
    pk += [served(1.2 + i * 0.001, n, proto=UDP) for i, n in enumerate(gso_sends)]
    tags = "".join(t.encode().hex() for t in options)
    qlog = [{"name": "transport:parameters_set",
             "data": {"owner": "local", "max_ack_delay": ack_delay, "ack_delay_exponent": exponent}},
            {"name": "transport:parameters_set",
             "data": {"owner": "remote", "max_ack_delay": 25,
                      "unknown_parameters": [{"id": 12584, "value": tags}]}}]
    qlog += [{"name": "quic:recovery_metrics_updated", "data": {"congestion_window": cwnd}}]
    qlog += [{"name": "recovery:metrics_updated",
              "data": {"smoothed_rtt": 82.1068, "congestion_window": cwnd + 1624,
                       "pacing_rate": first_pacing}}]
    qlog += [{"name": "quic:congestion_state_updated", "data": {"new": s}} for s in states]
    one_rtt = {"packet_type": "1RTT"}
    qlog += [{"name": "transport:packet_sent",
              "data": {"header": one_rtt, "raw": {"length": payload}, "frames": [
                  {"frame_type": "stream"}]}}] * 32
    qlog += [{"name": "transport:packet_received",
              "data": {"header": one_rtt, "frames": [{"frame_type": "ack"}]}}] * acks
    summary = {"server": "h3server", "cc": cc,
               "conns": [{"requests": 2, "max_datagram_size": payload}]} if cc else None
    return Observation(applied={}, fetched=(Fetched(200, FILE_SIZE, "h3", 300.0),) * 2,
                       packets=tuple(pk), qlog=tuple(qlog), summary=summary,
                       alt_svc='h3=":443"; ma=86400')


QUIC_ROWS = ["max UDP payload (wire, qlog, summary)", "GSO (sends on the wire)",
             "max_ack_delay (transport parameter sent, qlog)",
             "ack_delay_exponent (transport parameter sent, qlog)",
             "client QUIC connection options (transport parameter, qlog)",
             "client ACK frames per data packet (qlog)"]


def by_name(rows):
    return {r.name: r for r in rows}


def test_tcp_baseline_as_configured():
    rows = judge(server_options("tcp", fq=False), tcp_observation(), LTE_RTT)
    assert [r.name for r in rows] == [
        "stack (Chromium flags)", ALT_SVC, "congestion control (ss)", "initial window (first flight)",
        "initial cwnd (ss, first sample)", "pacing", "slow start after idle",
        "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "send buffer (ss skmem tb, first sample)",
        "route to client"]
    assert verdict.all_ok(rows), [r for r in rows if r.ok is False]
    r = by_name(rows)
    assert r["initial window (first flight)"].observed.startswith("10 segments in flight")
    assert r["net.ipv4.tcp_rmem"].ok is None  # namespace default: shown, not checked
    assert r["stack (Chromium flags)"].observed == "h2, h2"


def test_a_larger_first_flight_fails_the_initial_window_only():
    rows = judge(server_options("tcp", fq=False), tcp_observation(window=14), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["initial window (first flight)"]
    assert by_name(rows)["initial window (first flight)"].observed.startswith("14 segments")


def test_slow_start_after_idle_is_judged_on_the_flight_after_the_idle():
    opts = server_options("tcp", fq=False)  # on: back to the initial window
    rows = judge(opts, tcp_observation(after_idle=40), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["slow start after idle"]
    rows = judge(opts, tcp_observation(after_idle=0), LTE_RTT)
    assert by_name(rows)["slow start after idle"].observed == "no flight after the idle"
    assert by_name(rows)["slow start after idle"].ok is False


def test_unpaced_setting_with_a_spread_flight_fails_pacing():
    rows = judge(server_options("tcp", fq=False), tcp_observation(gap=0.002), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["pacing"]
    assert "gap at the 3rd quartile 2.00 ms, median 2.00 ms" in by_name(rows)["pacing"].observed


def test_tcp_plus_bbr_counts_the_handshake_bbr_acknowledged():
    opts = server_options("tcp-plus-bbr", fq=False)
    buffers = "4096 1048576 33554432"
    obs = tcp_observation(window=33, after_idle=60, gap=0.001, iw=32, cc="bbr", buffers=buffers,
                          max_pacing_rate="147573952589676412927", gains=BBR1_GAINS)
    rows = judge(opts, obs, LTE_RTT)
    assert verdict.all_ok(rows), [r for r in rows if r.ok is False]
    r = by_name(rows)
    assert r["initial window (first flight)"].expected == (
        "32 segments + 1 acked in the handshake (BBR startup)")
    assert r["pacing"].expected.startswith("on (internal, SO_MAX_PACING_RATE)")
    assert r["max pacing rate set (ss)"].ok is True
    assert r["net.ipv4.tcp_wmem"].ok is True and r["send buffer (ss skmem tb, first sample)"].ok
    # the same flight without the handshake's acknowledgement counted is one short
    rows = judge(opts, replace(obs, packets=tuple(tcp_file(32, 60, 0.001))), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["initial window (first flight)"]
    # internal pacing without a maximum pacing rate set is not in force
    rows = judge(opts, replace(obs, socks=(sock("bbr", 32, 1048576, gains=(1.25, 2)),)), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["max pacing rate set (ss)"]


def test_wrong_congestion_control_buffers_and_route_are_caught():
    opts = server_options("tcp-plus", fq=False)
    obs = tcp_observation(window=32, after_idle=60, gap=0.001, iw=32, cc="bbr",
                          buffers="4096 131072 6291456", max_pacing_rate="1")
    obs = replace(obs, applied={**obs.applied, "route": "198.18.0.2 dev veth0 initcwnd 32"})
    failed = [r.name for r in verdict.failed(judge(opts, obs, LTE_RTT))]
    assert failed == ["congestion control (ss)", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                      "send buffer (ss skmem tb, first sample)", "route to client"]


def test_the_wrong_protocol_or_a_failed_fetch_fails_the_stack():
    opts = server_options("tcp", fq=False)
    rows = judge(opts, tcp_observation(protocol="h3"), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == ["stack (Chromium flags)"]
    obs = replace(tcp_observation(), fetched=(Fetched(404, 9, "h2", 1.0),) * 2)
    (row,) = verdict.failed(judge(opts, obs, LTE_RTT))
    assert row.observed == "h2, h2 (fetch failed)"


def test_no_connection_to_the_file_server_ends_the_judgement():
    obs = replace(tcp_observation(),
                  packets=tuple(replace(p, src="192.0.2.90") if p.sport == 443 else
                                replace(p, dst="192.0.2.90") for p in tcp_file(10, 10)))
    rows = judge(server_options("tcp", fq=False), obs, LTE_RTT)
    assert [(r.name, r.ok) for r in rows] == [("stack (Chromium flags)", True),
                                             (ALT_SVC, True), ("capture", False)]


def test_what_the_browser_hears_of_http3():
    quic, tcp = server_options("quic"), server_options("tcp", fq=False)
    assert by_name(judge(quic, quic_observation(), LTE_RTT))[ALT_SVC].observed == (
        'h3=":443"; ma=86400')
    # QUIC without an h3 alt-svc for the origin: Chromium would hold delayable requests
    for heard in (None, 'h3=":8443"', 'h3-29=":443"'):
        rows = judge(quic, replace(quic_observation(), alt_svc=heard), LTE_RTT)
        assert [r.name for r in verdict.failed(rows)] == [ALT_SVC], heard
    # a TCP trial that hears of QUIC fails; one that hears nothing passes
    rows = judge(tcp, replace(tcp_observation(), alt_svc='h3=":443"'), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == [ALT_SVC]
    assert by_name(judge(tcp, tcp_observation(), LTE_RTT))[ALT_SVC].observed == "none"


def test_quic_as_configured():
    rows = judge(server_options("quic"), quic_observation(), LTE_RTT)
    assert [r.name for r in rows] == [
        "stack (Chromium flags)", ALT_SVC, "congestion control (qlog states)",
        "initial window (qlog congestion_window)", "first flight on the wire", "pacing",
        *QUIC_ROWS]
    assert verdict.all_ok(rows), [r for r in rows if r.ok is False]
    r = by_name(rows)
    assert r["congestion control (qlog states)"].observed == (
        "cubic: congestion_avoidance, slow_start")
    assert r["first flight on the wire"].ok is None
    assert r["first flight on the wire"].observed.startswith("43200 bytes = 32.0 x 1350")


def test_pacing_in_bursts_is_pacing():
    # quiche's pacer (BBR) releases a send quantum at once: three datagrams back to back
    # every 6 ms, as captured under quic-bbr on LTE; the median gap is within a burst
    obs = quic_observation(states=("bbr_startup", "bbr_probe_bw"), cc="bbr")
    start = 1.081
    burst = [start + b * 0.006 + i * 0.00003 for b in range(11) for i in range(3)][:32]
    pk = [p for p in obs.packets if not (p.sport == 443 and p.payload == 1350)]
    pk[-1:-1] = [served(t, 1350, proto=UDP) for t in burst]
    pk[-1] = from_client(burst[-1] + LTE_RTT, 40, proto=UDP)
    rows = judge(server_options("quic-bbr"), replace(obs, packets=tuple(pk)), LTE_RTT)
    r = by_name(rows)["pacing"]
    assert r.ok is True, r
    assert r.observed.startswith("gap at the 3rd quartile 5.94 ms, median 0.03 ms")
    # the same datagrams all back to back are not paced
    flat = [served(start + i * 0.00003, 1350, proto=UDP) for i in range(32)]
    pk[-33:-1] = flat
    assert by_name(judge(server_options("quic-bbr"), replace(obs, packets=tuple(pk)),
                         LTE_RTT))["pacing"].ok is False


def test_quic_mismatches_are_caught():
    rows = judge(server_options("quic-bbr"), quic_observation(), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == [
        "congestion control (qlog states)", "BBR generation (h3server summary cc, qlog states)"]
    rows = judge(server_options("quic-bbr"),
                 quic_observation(states=("bbr_startup", "BBR Drain"), cc="bbr"), LTE_RTT)
    assert verdict.all_ok(rows)
    rows = judge(server_options("quic"), quic_observation(gap=0.00001, cwnd=14720,
                                                          payload=1200), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == [
        "initial window (qlog congestion_window)", "pacing",
        "max UDP payload (wire, qlog, summary)"]
    rows = judge(server_options("quic"), replace(quic_observation(), qlog=()), LTE_RTT)
    r = by_name(rows)
    assert r["congestion control (qlog states)"].observed == "?: none"
    assert r["initial window (qlog congestion_window)"].observed == "not in the qlog"
    assert not r["congestion control (qlog states)"].ok


def knobs(tmp_path):
    f = tmp_path / "knobs.toml"
    f.write_text(KNOBS)
    return server_options(str(f))


def knobs_observation(**kw) -> Observation:
    seen = {"cwnd": 38400, "payload": 1200, "gso_sends": (2400, 3600, 1412),
            "ack_delay": 5, "exponent": 10, "options": ("AKDU", "ORIG"), "acks": 3}
    return quic_observation(**{**seen, **kw})


def test_quic_knobs_as_configured(tmp_path):
    rows = judge(knobs(tmp_path), knobs_observation(), LTE_RTT)
    assert verdict.all_ok(rows), [r for r in rows if r.ok is False]
    r = by_name(rows)
    assert r["max UDP payload (wire, qlog, summary)"].observed == (
        "wire: largest datagram 1200, 2 GSO sends of whole 1200-byte datagrams; qlog: "
        "largest 1-RTT packet 1200; summary max_datagram_size 1200")
    assert r["GSO (sends on the wire)"].observed == (
        "3 of 38 sends larger than a datagram (up to 3600 bytes = 3.0 x 1200)")
    assert r["max_ack_delay (transport parameter sent, qlog)"].observed == "5"
    assert r["client QUIC connection options (transport parameter, qlog)"].observed == (
        "AKDU, ORIG")
    assert r["client ACK frames per data packet (qlog)"].observed.startswith(
        "3 for 32 = 0.094 (1 per 10.7)")


def test_quic_knob_mismatches_are_caught(tmp_path):
    def failed(**kw):
        return [r.name for r in verdict.failed(judge(knobs(tmp_path), knobs_observation(**kw),
                                                     LTE_RTT))]

    # the server sent 1350-byte datagrams one by one: on the wire they look like GSO
    # sends, but none is whole 1200-byte datagrams, and the qlog and summary say 1350
    assert failed(payload=1350, gso_sends=()) == ["max UDP payload (wire, qlog, summary)"]
    assert failed(gso_sends=()) == ["GSO (sends on the wire)"]
    # GSO sends that are not whole 1200-byte datagrams (1350-byte segments)
    assert failed(gso_sends=(2700, 4050)) == ["max UDP payload (wire, qlog, summary)"]
    assert failed(ack_delay=25, exponent=3) == [
        "max_ack_delay (transport parameter sent, qlog)",
        "ack_delay_exponent (transport parameter sent, qlog)"]
    assert failed(options=("ORIG",)) == [
        "client QUIC connection options (transport parameter, qlog)"]
    # and the defaults, GSO off, on a setting that names none: sends larger than a
    # datagram fail it
    rows = judge(server_options("quic"), quic_observation(gso_sends=(2700,)), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == [
        "max UDP payload (wire, qlog, summary)", "GSO (sends on the wire)"]


# ------------------------------------------------------------------ BBR generation

QUIC_BBR1 = ("bbr_startup", "bbr_drain", "bbr_probe_bw")
QUIC_BBR2 = ("bbr_startup", "bbr_drain", "bbr_probe_bw_down", "bbr_probe_bw_cruise",
             "bbr_probe_bw_refill", "bbr_probe_bw_up")
BBR_TCP = {"window": 33, "after_idle": 60, "gap": 0.001, "iw": 32, "cc": "bbr",
           "buffers": "4096 1048576 33554432", "max_pacing_rate": "1"}


def result(name: str, obs: Observation) -> Result:
    """What the command keeps of one setting: its rows and the generation found."""
    opts = server_options(name, fq=False) if name.startswith("tcp") else server_options(name)
    return Result(load_protocol(name), judge(opts, obs, LTE_RTT), bbr_finding(opts, obs))


def generation_row(res: Result):
    (row,) = [r for r in res.rows if r.name.startswith("BBR generation")]
    return row


def test_each_bbr_setting_shows_its_generation_and_tcp_and_quic_agree():
    tcp = result("tcp-plus-bbr", tcp_observation(**BBR_TCP, gains=BBR1_GAINS))
    quic = result("quic-bbr", quic_observation(states=QUIC_BBR1, cc="bbr"))
    quic2 = result("quic-bbr2", quic_observation(states=QUIC_BBR2, cc="bbr2_gcongestion"))
    for res, want in ((tcp, "BBRv1"), (quic, "BBRv1"), (quic2, "BBRv2")):
        row = generation_row(res)
        assert row.ok is True and row.expected == want and row.observed.startswith(want), row
        assert verdict.all_ok(res.rows), [r for r in res.rows if r.ok is False]
    assert generation_row(tcp).name == "BBR generation (ss gains)"
    assert "pacing_gain 0.34375, 0.75, 1, 1.25, 2.88672" in generation_row(tcp).observed
    assert "summary cc bbr; qlog states" in generation_row(quic).observed
    row = one_generation([tcp, quic, quic2])
    assert row.ok is True
    assert row.expected == "the same for tcp-plus-bbr, quic-bbr"  # quic-bbr2 is not compared
    assert row.observed == "tcp-plus-bbr: BBRv1, quic-bbr: BBRv1"


def test_quic_bbr_must_start_pacing_from_its_window_over_the_rtt():
    # h3server's quiche as vendored: 2.89 x 43200 bytes / 82.1 ms at the first RTT
    # sample; quiche 0.24.6 as published: 2.89 x the handshake's delivery rate
    name = "BBR start pacing rate (qlog, first RTT sample)"
    good = by_name(judge(server_options("quic-bbr"),
                         quic_observation(states=QUIC_BBR1, cc="bbr"), LTE_RTT))[name]
    assert good.ok is True and good.observed == "1521 kB/s = 2.89 x 43200 bytes / 82.1 ms"
    rows = judge(server_options("quic-bbr"),
                 quic_observation(states=QUIC_BBR1, cc="bbr", first_pacing=5456), LTE_RTT)
    assert [r.name for r in verdict.failed(rows)] == [name]
    assert by_name(rows)[name].observed.startswith("5 kB/s = 0.01 x 43200 bytes")
    # not a row of CUBIC settings, nor of BBRv2 (its own start)
    for setting, obs in (("quic", quic_observation()),
                         ("quic-bbr2", quic_observation(states=QUIC_BBR2,
                                                        cc="bbr2_gcongestion"))):
        assert name not in by_name(judge(server_options(setting), obs, LTE_RTT))
    # no pacing rate in the qlog: not shown, fails
    events = [e for e in quic_observation(states=QUIC_BBR1, cc="bbr").qlog
              if "pacing_rate" not in e["data"]]
    row = by_name(judge(server_options("quic-bbr"),
                        replace(quic_observation(states=QUIC_BBR1, cc="bbr"),
                                qlog=tuple(events)), LTE_RTT))[name]
    assert row.ok is False and row.observed.startswith("no congestion_window or pacing_rate")
    # a window of 0 bytes is no window (no division by it)
    row = by_name(judge(server_options("quic-bbr"),
                        quic_observation(states=QUIC_BBR1, cc="bbr", cwnd=0), LTE_RTT))[name]
    assert row.ok is False


def test_quic_bbr_on_bbrv2_fails_its_generation_and_the_agreement():
    # quiche from 0.24.7 on: `bbr` is BBRv2 (gcongestion), as h3server's summary and
    # qlog would then show
    tcp = result("tcp-plus-bbr", tcp_observation(**BBR_TCP, gains=BBR1_GAINS))
    quic = result("quic-bbr", quic_observation(states=QUIC_BBR2, cc="bbr2_gcongestion"))
    assert [r.name for r in verdict.failed(quic.rows)] == [
        "BBR generation (h3server summary cc, qlog states)"]
    assert generation_row(quic).observed.startswith("BBRv2: summary cc bbr2_gcongestion")
    row = one_generation([tcp, quic])
    assert row.ok is False and row.observed == "tcp-plus-bbr: BBRv1, quic-bbr: BBRv2"


def test_tcp_bbr_with_foreign_gains_shows_no_generation_and_fails_the_agreement():
    # BBRv3 (still named bbr) starts at pacing gain 2.77 and probes down at 0.9
    gains = ((2.77, 2), (0.9, 2), (1.25, 2))
    tcp = result("tcp-plus-bbr", tcp_observation(**BBR_TCP, gains=gains))
    quic = result("quic-bbr", quic_observation(states=QUIC_BBR1, cc="bbr"))
    row = generation_row(tcp)
    assert row.ok is False and row.observed.startswith("not shown: bbr with gains outside")
    assert "2.77" in row.observed and "0.9" in row.observed
    assert one_generation([tcp, quic]).ok is False


def test_summary_and_qlog_that_disagree_show_no_generation():
    res = result("quic-bbr", quic_observation(states=QUIC_BBR2, cc="bbr"))
    assert generation_row(res).ok is False
    assert "but qlog states say bbr2" in generation_row(res).observed


def test_agreement_needs_a_bbr_setting_on_each_stack():
    quic = result("quic-bbr", quic_observation(states=QUIC_BBR1, cc="bbr"))
    quic2 = result("quic-bbr2", quic_observation(states=QUIC_BBR2, cc="bbr2_gcongestion"))
    assert one_generation([quic, quic2]) is None
    cubic = result("tcp-plus", tcp_observation(window=32, after_idle=60, gap=0.001, iw=32,
                                               buffers="4096 1048576 33554432"))
    assert cubic.bbr is None and one_generation([cubic, quic]) is None
    # a BBR setting whose evidence showed nothing counts as a disagreement
    tcp = replace(result("tcp-plus-bbr", tcp_observation(**BBR_TCP, gains=BBR1_GAINS)),
                  bbr=Finding(None, "no connection in the ss output"))
    assert one_generation([tcp, quic]).observed == "tcp-plus-bbr: not shown, quic-bbr: BBRv1"
    assert one_generation([tcp, quic]).ok is False


def quinn_observation(gap=0.001, cc="cubic", window=43200, payload=1350) -> Observation:
    """A file download h3quinn served: its qlog has packets but neither congestion events
    nor transport parameters; its summary names the controller and the initial window."""
    obs = quic_observation(gap=gap, payload=payload, cc=cc)
    qlog = tuple(e for e in obs.qlog if e["name"] in ("transport:packet_received",))
    summary = {"server": "h3quinn", "cc": cc,
               "conns": [{"requests": 2, "cc": cc, "cwnd_initial_bytes": window,
                          "max_datagram_size": payload}]}
    return replace(obs, qlog=qlog, summary=summary)


def test_h3quinn_is_judged_by_its_summary_and_its_flight_spread():
    opts = server_options("quic-quinn")
    rows = judge(opts, quinn_observation(), LTE_RTT)
    assert verdict.all_ok(rows), [r for r in rows if r.ok is False]
    r = by_name(rows)
    assert r["congestion control (h3quinn summary cc)"].observed == "cubic"
    assert r["initial window (h3quinn summary cwnd_initial_bytes)"].observed == "43200 bytes"
    # the transport parameters are quinn's defaults, not shown: not judged
    assert r["max_ack_delay (transport parameter sent, qlog)"].ok is None
    # each thing h3quinn shows is judged: another controller, window, payload, no pacing
    bad = by_name(judge(opts, quinn_observation(cc="reno"), LTE_RTT))
    assert bad["congestion control (h3quinn summary cc)"].ok is False
    bad = by_name(judge(opts, quinn_observation(window=13500), LTE_RTT))
    assert bad["initial window (h3quinn summary cwnd_initial_bytes)"].ok is False
    bad = by_name(judge(opts, quinn_observation(payload=1200), LTE_RTT))
    assert bad["max UDP payload (wire, qlog, summary)"].ok is False
    # 32 datagrams 1 ms apart: a flight over most of LTE's RTT is paced; 30 us apart not
    assert r["pacing"].ok is True
    flat = by_name(judge(opts, quinn_observation(gap=0.00003), LTE_RTT))["pacing"]
    assert flat.ok is False and flat.observed.startswith("flight over 0.9 ms")
