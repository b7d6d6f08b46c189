"""Traces exact from rates, queue sizes, the shell chain's argv, probe figures. Pure."""

from __future__ import annotations

import os
import stat
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from testbed.emulate import figures, phasegate, udp_probe
from testbed.emulate.shells import ShellChain, build_chain, link_traces, reply_wait_ms
from testbed.formats import traces
from testbed.formats.profiles import load_network
from testbed.host import proc

RATES = [5, 25, 2.8, 10.5, 0.468, 1.89, 12, 100, 0.001, 33.333]


@pytest.mark.parametrize("mbit", RATES)
def test_fixed_rate_is_exact_over_its_period(mbit):
    t = traces.fixed_rate(mbit)
    # opportunities x 1500 bytes x 8 bits == rate x period, exactly
    assert Fraction(t.count * 1500 * 8, t.period_ms * 1000) == Fraction(str(mbit))
    assert t.times[-1] == t.period_ms
    assert list(t.times) == sorted(t.times)


@pytest.mark.parametrize("mbit", RATES)
def test_no_drift_over_many_periods(mbit):
    """mm-link repeats the trace with its last line as the period: the opportunities
    in any whole number of periods match the rate exactly, so nothing accumulates."""
    t = traces.fixed_rate(mbit)
    periods = 1000
    total_ms = periods * t.period_ms
    count = periods * t.count
    assert Fraction(count * 12, total_ms) == Fraction(str(mbit))
    # and any window of whole ms is within one opportunity of the ideal count
    per_ms = Fraction(str(mbit)) / 12
    lengths = (1, 7, t.period_ms)
    repeats = 2 + max(lengths) // t.period_ms + 1
    schedule = np.concatenate([np.asarray(t.times) + k * t.period_ms for k in range(repeats)])
    for start in range(0, t.period_ms, max(1, t.period_ms // 7)):
        for length in lengths:
            got = np.count_nonzero((schedule > start) & (schedule <= start + length))
            assert abs(got - per_ms * length) <= 1


def test_spread_evenly():
    t = traces.fixed_rate(0.468)  # 39 opportunities in 1000 ms
    gaps = np.diff((0,) + t.times)
    assert set(gaps) == {25, 26}
    dense = traces.fixed_rate(25)  # 25 in 12 ms: every ms has 2 or 3
    counts = np.bincount(np.asarray(dense.times) % 12, minlength=12)
    assert set(counts) <= {2, 3}


def test_known_shortest_traces():
    assert (traces.fixed_rate(25).period_ms, traces.fixed_rate(25).count) == (12, 25)
    assert (traces.fixed_rate(5).period_ms, traces.fixed_rate(5).count) == (12, 5)
    assert (traces.fixed_rate(10.5).period_ms, traces.fixed_rate(10.5).count) == (8, 7)
    assert (traces.fixed_rate(2.8).period_ms, traces.fixed_rate(2.8).count) == (30, 7)
    assert (traces.fixed_rate(0.468).period_ms, traces.fixed_rate(0.468).count) == (1000, 39)
    assert (traces.fixed_rate(1.89).period_ms, traces.fixed_rate(1.89).count) == (400, 63)


def test_offset_trace_keeps_the_rate_and_moves_by_half_a_gap():
    plain = traces.fixed_rate(0.468)
    off = traces.fixed_rate(0.468, Fraction(1, 2), 10_000)
    assert off.period_ms == 10_000 and off.count == 390
    assert off.per_ms == plain.per_ms
    assert off.times[-1] == off.period_ms
    # all but the last are half a gap (12-13 ms) before the plain ones
    ideal = [k * 10_000 / 390 for k in range(1, 391)]
    assert all(abs(t - (i - 12.82)) <= 1 for t, i in zip(off.times[:-1], ideal[:-1]))


def test_bad_rates():
    with pytest.raises(traces.TraceError, match="at most 3 decimals"):
        traces.fixed_rate(1.23456789)
    with pytest.raises(traces.TraceError):
        traces.fixed_rate(0)
    with pytest.raises(traces.TraceError):
        traces.fixed_rate(1, Fraction(3, 2))


def test_read_write_roundtrip(tmp_path):
    t = traces.fixed_rate(2.8)
    assert traces.read_trace(traces.write_trace(tmp_path / "x", t)) == t
    (tmp_path / "bad").write_text("5\n3\n")
    with pytest.raises(traces.TraceError, match="nondecreasing"):
        traces.read_trace(tmp_path / "bad")


@pytest.mark.parametrize("mbit,buffer_ms,expected", [
    (25, 12, 25 * 1504), (5, 12, 5 * 1504), (10.5, 200, 175 * 1504),
    (2.8, 200, 70186),     # 46.67 packets
    (0.468, 200, 11731),   # 7.8 packets
    (1.89, 200, 47376)])   # 31.5 packets
def test_queue_bytes_hold_buffer_ms_at_the_rate(mbit, buffer_ms, expected):
    """buffer_ms of drain time at the link rate, in mm-link's bytes (1504 per packet)."""
    assert traces.queue_bytes(buffer_ms, traces.fixed_rate(mbit)) == expected


def test_opportunity_wait():
    one_per_ms = traces.Trace((1,))
    assert traces.opportunity_wait_quantile(one_per_ms, 0.5) == pytest.approx(0.5, abs=1e-6)
    assert traces.opportunity_wait_quantile(one_per_ms, 0.999) == pytest.approx(1, abs=2e-3)
    da2gc = traces.fixed_rate(0.468)
    assert traces.opportunity_wait_quantile(da2gc, 0.5) == pytest.approx(1000 / 39 / 2, abs=0.1)
    assert traces.opportunity_wait_quantile(da2gc, 1e-6) < 0.01


def test_rates_of_traces():
    t = traces.fixed_rate(25)
    assert t.mbit == pytest.approx(25)
    assert t.udp_payload_mbit == pytest.approx(25 * 1472 / 1500)


# ------------------------------------------------------------------ shells

def test_dsl_chain(tmp_path):
    c = build_chain(load_network("dsl"), tmp_path, delay_ms=11)
    argv = c.argv(["cmd", "arg"])
    up, down = tmp_path / "dsl.uplink.trace", tmp_path / "dsl.downlink.trace"
    assert argv == ["mm-link", str(up), str(down),
                    "--uplink-queue=droptail", "--uplink-queue-args=bytes=7520",
                    "--downlink-queue=droptail", "--downlink-queue-args=bytes=37600",
                    "--", "mm-delay", "11", "cmd", "arg"]
    assert traces.read_trace(up) == traces.fixed_rate(5)
    assert traces.read_trace(down) == traces.fixed_rate(25)


def test_lossy_chain_puts_loss_on_the_senders_side(tmp_path):
    chain = build_chain(load_network("da2gc"), tmp_path, delay_ms=120)
    gate = proc.python("-m", "testbed.emulate.phasegate", "--dir", tmp_path / "phasegate", "--")
    argv = chain.argv(["cmd"])
    assert chain.phase_gate and argv[:len(gate)] == gate
    argv = argv[len(gate):]
    assert argv[:3] == ["mm-loss", "downlink", "0.033"]
    link = argv.index("mm-link")
    sep = argv.index("--")
    assert link == 3 and argv[sep + 1:] == ["mm-loss", "uplink", "0.033", "mm-delay", "120",
                                            "cmd"]
    assert "--downlink-queue-args=bytes=11731" in argv
    assert not build_chain(load_network("dsl"), tmp_path).phase_gate


def test_phase_gate_holds_mm_links_command():
    argv = ["mm-loss", "downlink", "0.1", "mm-link", "up", "down", "--queue=x", "--",
            "mm-delay", "5", "cmd", "--", "arg"]
    full, up, down = phasegate.with_gate(argv, "/t/u.log", "/t/d.log", "/t/go.lock")
    i = full.index("mm-link")
    j = full.index("--", i)
    assert full[i:j] == ["mm-link", "up", "down", "--queue=x", "--uplink-log=/t/u.log",
                         "--downlink-log=/t/d.log"]
    assert (up, down) == ("/t/u.log", "/t/d.log")
    assert full[j + 1:] == ["flock", "--shared", "--no-fork", "/t/go.lock",
                            "mm-delay", "5", "cmd", "--", "arg"]
    # logs already asked for (validation reads them) are the ones the gate reads
    given, up, down = phasegate.with_gate(
        ["mm-link", "u", "d", "--uplink-log=/a", "--downlink-log=/b", "--", "x"],
        "/t/u", "/t/d", "/t/l")
    assert (up, down) == ("/a", "/b") and given.count("--uplink-log=/a") == 1
    assert given[-1] == "x"


def test_base_timestamp(tmp_path):
    log = tmp_path / "log"
    log.write_text("# mahimahi mm-link (Uplink) [t] > log\n# command line: x\n# queue: infinite\n"
                   "# init timestamp: 1795\n# base timestamp: 35\n35 # 1504\n")
    assert phasegate.base_timestamp(str(log)) == 35
    assert phasegate.base_timestamp(str(tmp_path / "none")) is None


@pytest.mark.parametrize("name,wait", [("da2gc", None), ("da2gc", 12), ("da2gc", 3),
                                       ("mss", None), ("mss", 2)])
def test_sparse_downlink_follows_each_uplink_opportunity(name, wait):
    """On a sparse link every uplink opportunity is followed by a downlink one exactly
    reply_wait ms later (default half a gap), except once per 10 s trace period."""
    profile = load_network(name)
    lt = link_traces(profile, wait)
    assert lt.uplink == traces.fixed_rate(profile.uplink_mbit)
    assert lt.downlink.per_ms == lt.uplink.per_ms and lt.downlink.period_ms == 10_000
    want = wait or reply_wait_ms(profile)
    assert want == wait or want == {"da2gc": 13, "mss": 3}[name]
    period = lt.downlink.period_ms
    up = np.concatenate([np.asarray(lt.uplink.times) + k * lt.uplink.period_ms
                         for k in range(period // lt.uplink.period_ms)])
    down = np.concatenate([np.asarray(lt.downlink.times) + k * period for k in range(2)])
    waits = down[np.searchsorted(down, up, side="right")] - up
    assert np.count_nonzero(waits == want) == len(up) - 1


def test_dense_downlink_has_no_reply_wait():
    assert reply_wait_ms(load_network("dsl")) is None
    assert reply_wait_ms(load_network("lte")) is None
    assert link_traces(load_network("dsl")).downlink == traces.fixed_rate(25)
    with pytest.raises(ValueError, match="reply wait"):
        link_traces(load_network("mss"), 7)


def test_unshaped_chains(tmp_path):
    assert build_chain(load_network("none"), tmp_path).argv(["cmd"]) == ["cmd"]
    assert ShellChain(delay_ms=5).argv(["x"]) == ["mm-delay", "5", "x"]
    assert ShellChain(uplink_loss=0.1, downlink_loss=0.2).argv(["x"]) == [
        "mm-loss", "downlink", "0.2", "mm-loss", "uplink", "0.1", "x"]


def test_default_delay_is_half_the_rtt(tmp_path):
    assert build_chain(load_network("mss"), tmp_path).delay_ms == 380


def test_trace_profile_uses_the_files(tmp_path):
    f = tmp_path / "cell.toml"
    f.write_text('uplink_trace = "TMobile-LTE-driving.up"\n'
                 'downlink_trace = "TMobile-LTE-driving.down"\nbuffer_ms = 100\n')
    c = build_chain(load_network(str(f)), tmp_path, 30)
    assert c.uplink_trace == tmp_path / "cell.uplink.trace"  # a copy, see below
    assert traces.read_trace(c.uplink_trace) == traces.read_trace(
        Path("/usr/share/mahimahi/traces/TMobile-LTE-driving.up"))
    assert c.uplink_queue_bytes and c.downlink_queue_bytes and not c.phase_gate


def test_mm_link_reads_the_trace_as_checked_not_the_profiles_file(tmp_path):
    """A profile's trace files are read once, when the profile is loaded and checked;
    mm-link gets a copy in the run's own folder, so replacing a file in the profile's
    folder after the check (whoever can write there could) changes nothing."""
    prof = tmp_path / "profile"
    prof.mkdir()
    (prof / "t.up").write_text("5\n10\n")
    (prof / "t.down").write_text("2\n4\n6\n8\n")
    (prof / "net.toml").write_text('uplink_trace = "t.up"\ndownlink_trace = "t.down"\n')
    profile = load_network(prof / "net.toml")
    (prof / "t.up.new").write_text("1\n1\n1\n1\n")
    os.replace(prof / "t.up.new", prof / "t.up")  # swapped after the check
    (prof / "t.down").unlink()
    (prof / "t.down").symlink_to(prof / "t.up")
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    argv = build_chain(profile, run, 5).argv(["cmd"])
    link = argv.index("mm-link")
    up, down = Path(argv[link + 1]), Path(argv[link + 2])
    assert (up.parent, down.parent) == (run, run)
    assert (up.read_text(), down.read_text()) == ("5\n10\n", "2\n4\n6\n8\n")
    assert stat.S_IMODE(up.stat().st_mode) == 0o644  # mm-link runs as the testbed user


def test_logs_in_argv(tmp_path):
    c = build_chain(load_network("lte"), tmp_path, 36).with_logs(Path("/u"), Path("/d"))
    argv = c.argv(["x"])
    assert "--uplink-log=/u" in argv and "--downlink-log=/d" in argv
    assert argv.index("--downlink-log=/d") < argv.index("--")


# ------------------------------------------------------------------ figures

def _rtt_output(n: int, lost_up: set[int], lost_down: set[int], rtt_ns: int = 24_000_000):
    t_send = [i * 10_000_000 for i in range(n)]
    seqs = [i for i in range(n) if i not in lost_up and i not in lost_down]
    client = {"session": 1, "sent": n, "t_send": t_send,
              "replies": {"seq": seqs, "t_server": [t_send[s] + rtt_ns // 2 for s in seqs],
                          "t_recv": [t_send[s] + rtt_ns for s in seqs]}}
    server = {"echo": {"1": {"seqs": [i for i in range(n) if i not in lost_up]}}}
    return client, server


def test_rtt_and_losses():
    client, server = _rtt_output(1000, {3, 4, 5}, {7})
    r = figures.rtt(client, server)
    assert (r.sent, r.at_server, r.echoed) == (1000, 997, 996)
    assert r.min == pytest.approx(24) and r.median == pytest.approx(24)
    up, down = figures.losses(r, 0.003, 0.001)
    assert (up.lost, up.trials, down.lost, down.trials) == (3, 1000, 1, 997)
    assert up.consistent() and down.consistent()


def test_loss_interval():
    assert figures.Loss(10_000, 330, 0.033).consistent()
    assert not figures.Loss(10_000, 200, 0.033).consistent()
    assert figures.Loss(10_000, 0, 0.0).consistent()
    assert not figures.Loss(10_000, 5, 0.0).consistent()
    low, high = figures.Loss(10_000, 600, 0.06).interval()
    assert low < 0.06 < high and high - low < 0.02


def test_delivered_rate():
    # 1472-byte payloads every 0.48 ms: 24.533 Mbit/s
    t = np.arange(0, 4000) * 480_000
    assert figures.delivered_mbit(t, 1472) == pytest.approx(1472 * 8 / 0.48e-3 / 1e6)
    # a 50 ms hole (the sender lost the CPU) spoils one window, not the median
    holed = np.concatenate([t[:1000], t[1100:] + 50_000_000])
    m, n = figures.delivered_mbit_windows(holed, 1472, 0.25)
    assert n >= 7 and m == pytest.approx(1472 * 8 / 0.48e-3 / 1e6, rel=0.01)
    assert figures.delivered_mbit(holed, 1472) < m * 0.98


def test_probe_packets_roundtrip():
    data = udp_probe.pack(udp_probe.ECHO, 7, 42, 123, 456, 64)
    assert len(data) == 64
    assert udp_probe.unpack(data) == (udp_probe.MAGIC, udp_probe.ECHO, 7, 42, 123, 456)
    assert udp_probe.unpack(b"junk") is None
    assert udp_probe.parse_addr("198.18.1.1:9000") == ("198.18.1.1", 9000)


def test_trace_starting_later_is_a_rotation():
    t = traces.Trace((3, 5, 5, 9, 10))
    assert traces.starting_at(t, 0) == t
    r = traces.starting_at(t, 4)  # begins at the opportunity at 5
    assert r.times == (4, 5, 8, 10, 10)
    assert (r.period_ms, r.count) == (t.period_ms, t.count)
    assert traces.starting_at(t, 14) == r  # modulo the period
    assert traces.longest_gap_ms(t) == 4 and traces.longest_gap_ms(r) == 4


def test_verizon_profile_starts_after_the_initial_outage(tmp_path):
    profile = load_network("verizon-lte-driving")
    lt = link_traces(profile)
    assert lt.uplink.times[0] < 100  # the raw trace's first uplink opportunity is at 2141 ms
    raw = traces.read_trace(profile.trace_path("uplink"))
    assert raw.times[0] == 2141 and lt.uplink.count == raw.count
    chain = build_chain(profile, tmp_path, 30)
    assert chain.uplink_trace == tmp_path / "verizon-lte-driving.uplink.trace"
    assert traces.read_trace(chain.uplink_trace) == lt.uplink
