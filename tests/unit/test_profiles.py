"""Network and protocol profiles: the shipped files, and one-line errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from testbed.errors import InputError
from testbed.formats.profiles import (
    NETWORKS_DIR,
    PROTOCOLS_DIR,
    available,
    load_network,
    load_protocol,
)

PAPER_NETWORKS = {
    # name: (up, down, rtt, loss %, buffer ms)
    "dsl": (5, 25, 24, 0, 12),
    "lte": (2.8, 10.5, 74, 0, 200),
    "da2gc": (0.468, 0.468, 262, 3.3, 200),
    "mss": (1.89, 1.89, 760, 6.0, 200),
}


@pytest.mark.parametrize("name", sorted(PAPER_NETWORKS))
def test_paper_networks(name):
    p = load_network(name)
    up, down, rtt, loss, buf = PAPER_NETWORKS[name]
    assert (p.uplink_mbit, p.downlink_mbit, p.min_rtt_ms, p.buffer_ms) == (up, down, rtt, buf)
    assert p.uplink_loss_percent == p.downlink_loss_percent == loss
    assert p.name == name and len(p.digest) == 64 and p.description


def test_none_and_trace_profiles():
    none = load_network("none")
    assert not none.shaped and none.min_rtt_ms == 0
    trace = load_network("verizon-lte-driving")
    assert trace.shaped and trace.uplink_mbit is None
    assert trace.trace_path("downlink").name == "Verizon-LTE-driving.down"


def test_available_lists_shipped_profiles():
    assert {"dsl", "lte", "da2gc", "mss", "none"} <= set(available(NETWORKS_DIR))
    assert set(available(PROTOCOLS_DIR)) >= {"tcp", "tcp-plus", "tcp-plus-bbr", "quic",
                                             "quic-bbr"}


@pytest.mark.parametrize("name,stack,cc,iw,pacing", [
    ("tcp", "tcp", "cubic", 10, False),
    ("tcp-plus", "tcp", "cubic", 32, True),
    ("tcp-plus-bbr", "tcp", "bbr", 32, True),
    ("quic", "quic", "cubic", 32, True),
    ("quic-bbr", "quic", "bbr", 32, True),
    ("quic-bbr2", "quic", "bbr2", 32, True),
])
def test_paper_protocols(name, stack, cc, iw, pacing):
    p = load_protocol(name)
    assert (p.stack, p.congestion_control, p.initial_window_packets, p.pacing) == (
        stack, cc, iw, pacing)


def test_tcp_plus_is_tuned_and_baseline_is_not():
    plus, base = load_protocol("tcp-plus"), load_protocol("tcp")
    assert not plus.slow_start_after_idle and plus.tcp_wmem and plus.tcp_rmem
    assert base.slow_start_after_idle and base.tcp_wmem is None


def test_a_path_loads_like_a_name(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('min_rtt_ms = 40\nuplink_mbit = 1\ndownlink_mbit = 8\nbuffer_ms = 50\n')
    p = load_network(str(f))
    assert p.name == "mine" and p.downlink_mbit == 8


GOOD_NET = 'min_rtt_ms = 40\nuplink_mbit = 1\ndownlink_mbit = 8\nbuffer_ms = 50\n'


@pytest.mark.parametrize("text,key,expect", [
    ('downlink_mbit = -3\nuplink_mbit = 1', "downlink_mbit", "expected a number > 0, got -3"),
    ('downlink_mbit = 0\nuplink_mbit = 1', "downlink_mbit", "> 0"),
    ('downlink_mbit = "fast"\nuplink_mbit = 1', "downlink_mbit", 'expected a number, got "fast"'),
    ('downlink_mbit = true\nuplink_mbit = 1', "downlink_mbit", "expected a number, got true"),
    ('min_rtt_ms = -1', "min_rtt_ms", ">= 0"),
    ('uplink_loss_percent = 100', "uplink_loss_percent", "< 100"),
    ('uplink_loss_percent = -0.5', "uplink_loss_percent", ">= 0"),
    ('downlink_loss = 3', "downlink_loss", "unknown key (allowed:"),
    ('rtt = 20', "rtt", "unknown key"),
    ('uplink_mbit = 1', "downlink_mbit", "missing"),
    ('downlink_mbit = 1', "uplink_mbit", "missing"),
    ('uplink_mbit = 1\ndownlink_mbit = 1\nuplink_trace = "x.up"', "uplink_trace",
     "either uplink_mbit or uplink_trace"),
    ('buffer_ms = 20', "buffer_ms", "needs a shaped link"),
    ('uplink_mbit = 1\ndownlink_mbit = 1\ntrace_start_ms = 5', "trace_start_ms",
     "only for trace-driven links"),
    ('trace_start_ms = -5', "trace_start_ms", ">= 0"),
    ('uplink_mbit = 1\ndownlink_mbit = 1\nbuffer_ms = 0', "buffer_ms", "> 0"),
    ('uplink_trace = "no-such.up"\ndownlink_trace = "no-such.down"', "uplink_trace",
     "no such file"),
    ('description = 5', "description", "expected a string"),
    ('name = "x"', "name", "unknown key"),
    ('[uplink]\nrate = 3', "uplink", "unknown key"),
])
def test_bad_network_profiles(tmp_path, text, key, expect):
    f = tmp_path / "bad.toml"
    f.write_text(text + "\n")
    with pytest.raises(InputError) as e:
        load_network(str(f))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: key {key}: "), msg
    assert expect in msg, msg


GOOD_QUIC = ('stack = "quic"\ncongestion_control = "cubic"\ninitial_window_packets = 10\n'
             'pacing = true\n')
GOOD_TCP = 'stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\npacing = false\n'


@pytest.mark.parametrize("text,key,expect", [
    ('stack = "sctp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\npacing = true',
     "stack", "expected one of 'tcp' or 'quic'"),
    ('stack = "tcp"\ncongestion_control = "vegas"\ninitial_window_packets = 10\npacing = true',
     "congestion_control", "expected one of"),
    ('stack = "tcp"\ncongestion_control = "bbr2"\ninitial_window_packets = 10\npacing = true',
     "congestion_control", "expected one of cubic, reno, bbr for stack tcp"),
    ('stack = "quic"\ncongestion_control = "vegas"\ninitial_window_packets = 10\npacing = true',
     "congestion_control", "expected one of"),
    ('stack = "tcp"\ncongestion_control = "cubic"\npacing = true', "initial_window_packets",
     "missing"),
    ('stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 0\npacing = true',
     "initial_window_packets", ">= 1"),
    ('stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10.5\npacing = true',
     "initial_window_packets", "expected a whole number, got 10.5"),
    ('stack = "tcp"\ncongestion_control = "cubic"\ninitial_window_packets = 10\npacing = "yes"',
     "pacing", 'expected true or false, got "yes"'),
    (GOOD_TCP + 'tcp_wmem = [4096, 16384]', "tcp_wmem", "list of 3"),
    (GOOD_TCP + 'tcp_wmem = [65536, 16384, 4194304]', "tcp_wmem", "min <= default <= max"),
    (GOOD_TCP + 'max_udp_payload = 1350', "max_udp_payload", "only for stack quic"),
    (GOOD_QUIC + 'tcp_rmem = [1, 2, 3]', "tcp_rmem", "only for stack tcp"),
    (GOOD_QUIC + 'max_udp_payload = 1000', "max_udp_payload", "from 1200 (QUIC's smallest"),
    (GOOD_QUIC + 'max_udp_payload = 1500', "max_udp_payload", "to 1472 (the largest UDP payload"),
    (GOOD_QUIC + 'max_ack_delay_ms = 16384', "max_ack_delay_ms", "from 0 to 16383"),
    (GOOD_QUIC + 'ack_delay_exponent = -1', "ack_delay_exponent", "from 0 to 20 (RFC 9000: at most 20), got -1"),
    (GOOD_QUIC + 'client_quic_connection_options = ["AKDU", "akd3"]',
     "client_quic_connection_options", "QUIC connection option tags"),
    (GOOD_TCP + 'client_quic_connection_options = ["AKDU"]', "client_quic_connection_options",
     "only for stack quic"),
    (GOOD_TCP + 'initcwnd = 10', "initcwnd", "unknown key"),
    (GOOD_TCP + 'quic_server = "h3quinn"', "quic_server", "only for stack quic"),
    (GOOD_QUIC + 'quic_server = "msquic"', "quic_server", "expected one of"),
    (GOOD_QUIC.replace("cubic", "bbr2") + 'quic_server = "h3quinn"', "congestion_control",
     'expected one of cubic, reno, bbr with quic_server = "h3quinn", got \'bbr2\''),
    (GOOD_QUIC.replace("true", "false") + 'quic_server = "h3quinn"', "pacing",
     "quinn always paces"),
    (GOOD_QUIC + 'quic_server = "h3quinn"\ngso = true', "gso", "it has no such option"),
    (GOOD_QUIC + 'quic_server = "h3quinn"\nmax_ack_delay_ms = 5', "max_ack_delay_ms",
     "it has no such option"),
    (GOOD_QUIC + 'quic_server = "h3quinn"\nearly_data = true', "early_data",
     "it has no such option"),
])
def test_bad_protocol_profiles(tmp_path, text, key, expect):
    f = tmp_path / "bad.toml"
    f.write_text(text + "\n")
    with pytest.raises(InputError) as e:
        load_protocol(str(f))
    msg = str(e.value)
    assert msg.startswith(f"{f}: key {key}: "), msg
    assert expect in msg, msg


def test_not_toml(tmp_path):
    f = tmp_path / "broken.toml"
    f.write_text("uplink_mbit = = 3\n")
    with pytest.raises(InputError, match=r"broken.toml: not valid TOML"):
        load_network(str(f))


def test_unknown_name_lists_what_exists():
    with pytest.raises(InputError, match=r"^wifi: no such profile in .*available: .*dsl"):
        load_network("wifi")


def test_missing_path():
    with pytest.raises(InputError, match="no such profile file"):
        load_protocol("/nonexistent/x.toml")


def test_profiles_are_frozen():
    p = load_network("dsl")
    with pytest.raises(ValidationError):
        p.min_rtt_ms = 1  # type: ignore[misc]


def test_every_field_is_documented():
    from testbed.formats.profiles import NetworkProfile, ProtocolProfile
    for model in (NetworkProfile, ProtocolProfile):
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name} has no docstring"


def test_shipped_files_are_all_valid():
    for name in available(NETWORKS_DIR):
        load_network(name)
    for name in available(PROTOCOLS_DIR):
        load_protocol(name)
    assert Path(NETWORKS_DIR / "dsl.toml").exists()


# --- trace paths: Mahimahi's folder or the profile's own, and a real trace ----------------

def _trace_profile(tmp_path, up="ok.trace", down="ok.trace", sub="profiles"):
    folder = tmp_path / sub
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ok.trace").write_text("5\n10\n10\n20\n")
    (tmp_path / "outside.trace").write_text("5\n10\n")
    f = folder / "net.toml"
    f.write_text(f'min_rtt_ms = 10\nuplink_trace = "{up}"\ndownlink_trace = "{down}"\n')
    return f


def test_trace_next_to_the_profile_or_in_mahimahis_folder(tmp_path):
    f = _trace_profile(tmp_path)
    (f.parent / "traces").mkdir()
    (f.parent / "traces" / "t.down").write_text("1\n2\n")
    (f.parent / "alias.trace").symlink_to(f.parent / "ok.trace")  # a link that stays inside
    f.write_text(f.read_text().replace('downlink_trace = "ok.trace"',
                                       'downlink_trace = "traces/t.down"'))
    p = load_network(f)
    assert p.trace_path("uplink") == (f.parent / "ok.trace").resolve()
    assert p.trace_path("downlink") == (f.parent / "traces" / "t.down").resolve()
    f.write_text(f.read_text().replace('"ok.trace"', '"alias.trace"'))
    assert load_network(f).trace_path("uplink") == (f.parent / "ok.trace").resolve()
    mm = "/usr/share/mahimahi/traces/Verizon-LTE-driving"
    if Path(mm + ".up").is_file():
        f.write_text(f'uplink_trace = "{mm}.up"\ndownlink_trace = "Verizon-LTE-driving.down"\n')
        assert load_network(f).trace_path("uplink") == Path(mm + ".up")


@pytest.mark.parametrize("down", [
    "../outside.trace", "{tmp}/outside.trace", "link.trace", "/etc/passwd",
    "/usr/share/mahimahi/traces/../../../../etc/passwd", "../../../../../../../../etc/passwd",
])
def test_trace_outside_both_folders_is_refused(tmp_path, down):
    f = _trace_profile(tmp_path, down=down.replace("{tmp}", str(tmp_path)))
    (f.parent / "link.trace").symlink_to(tmp_path / "outside.trace")
    with pytest.raises(InputError, match=r"net.toml: key downlink_trace: expected a Mahimahi "
                                         r"trace file .*outside both folders"):
        load_network(f)


@pytest.mark.parametrize("text,why", [
    ("", "empty"), ("\n \n", "empty"), ("root:x:0:0\n", "line 1: expected one whole number"),
    ("5\n10\n-3\n", "line 3: expected one whole number"), ("5\n1e3\n", "line 2"),
    ("5\n" + "9" * 30 + "\n", "line 2: expected at most 2147483647 ms"),
    ("5\n2147483648\n", "at most 2147483647"), ("10\n5\n", "nondecreasing"), ("0\n0\n", "last > 0"),
    ("5\n\u0663\n", "line 2"),
])
def test_trace_that_is_not_a_trace(tmp_path, text, why):
    f = _trace_profile(tmp_path, down="bad.trace")
    (f.parent / "bad.trace").write_text(text)
    with pytest.raises(InputError, match=rf"net.toml: key downlink_trace: .*bad.trace: not a "
                                         rf"Mahimahi trace \(.*{why}") as e:
        load_network(f)
    assert "root:x" not in str(e.value)


def test_trace_largest_value_and_folder(tmp_path):
    f = _trace_profile(tmp_path, down="big.trace")
    (f.parent / "big.trace").write_text("5\n2147483647\n")
    assert load_network(f).downlink_trace == "big.trace"
    (f.parent / "big.trace").unlink()
    (f.parent / "big.trace").mkdir()
    with pytest.raises(InputError, match=r"not a regular file"):
        load_network(f)


def test_a_networks_frame_rate_fits_four_frames_in_one_rtt(tmp_path):
    from testbed.formats.profiles import FRAMES_PER_RTT, frame_rate_for

    got = {n: load_network(n).fps for n in ("dsl", "lte", "da2gc", "mss", "none")}
    assert got == {"dsl": 60, "lte": 60, "da2gc": 20, "mss": 10, "none": 60}
    for rtt in (0, 24, 66, 67, 74, 80, 200, 262, 266, 400, 760, 5000):
        rate = frame_rate_for(rtt)
        if rate < 60:  # four frames fit, and at the next lower rate they would not
            assert FRAMES_PER_RTT * 1000 / rate <= rtt
    (tmp_path / "x.toml").write_text("min_rtt_ms = 262\nvideo_fps = 30\n")
    assert load_network(tmp_path / "x.toml").fps == 30
    (tmp_path / "x.toml").write_text("min_rtt_ms = 262\nvideo_fps = 5\n")
    with pytest.raises(InputError, match="x.toml: key video_fps: expected a number >= 10"):
        load_network(tmp_path / "x.toml")
