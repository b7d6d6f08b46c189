"""Protocol settings → server options, and applying them. Pure."""

from __future__ import annotations

import pytest
from support.fake_kernel import install

from testbed.protocols.apply import PACING_PRELOAD, applied, server_options

# ------------------------------------------------------------------ server options

def test_tcp_baseline_names_everything_explicitly():
    o = server_options("tcp", fq=False)
    assert o.stack == "tcp" and o.h3server_args == ()
    assert o.sysctls == {"net.ipv4.tcp_congestion_control": "cubic",
                         "net.ipv4.tcp_slow_start_after_idle": "1"}
    assert o.route == {"initcwnd": 10, "initrwnd": 10}
    assert o.nginx_env == {} and o.pacing_method == "none"
    assert o.chromium_flags == ("--disable-quic",)


@pytest.mark.parametrize("name,cc", [("tcp-plus", "cubic"), ("tcp-plus-bbr", "bbr")])
def test_tcp_plus_without_fq_paces_internally(name, cc):
    o = server_options(name, fq=False)
    assert o.sysctls["net.ipv4.tcp_congestion_control"] == cc
    assert o.sysctls["net.ipv4.tcp_slow_start_after_idle"] == "0"
    assert o.sysctls["net.ipv4.tcp_wmem"] == "4096 1048576 33554432"
    assert o.sysctls["net.ipv4.tcp_rmem"] == "4096 1048576 33554432"
    assert o.route == {"initcwnd": 32, "initrwnd": 32}
    assert o.pacing_method == "internal"
    assert o.nginx_env == {"LD_PRELOAD": str(PACING_PRELOAD)}


def test_tcp_plus_with_fq_uses_the_qdisc():
    o = server_options("tcp-plus", fq=True)
    assert o.pacing_method == "fq" and o.nginx_env == {}


@pytest.mark.parametrize("name,cc", [("quic", "cubic"), ("quic-bbr", "bbr"),
                                     ("quic-bbr2", "bbr2")])
def test_quic_settings_become_h3server_flags(name, cc):
    o = server_options(name)
    assert o.stack == "quic"
    assert o.h3server_args == ("--cc", cc, "--initial-cwnd-packets", "32", "--pacing", "on",
                               "--max-udp-payload", "1350")
    assert o.chromium_flags == ("--enable-quic", "--origin-to-force-quic-on=*")
    assert o.sysctls == {} and o.route == {} and o.nginx_env == {}


def test_quic_knobs_become_h3server_and_chromium_flags(tmp_path):
    f = tmp_path / "knobs.toml"
    f.write_text('stack = "quic"\ncongestion_control = "bbr"\ninitial_window_packets = 10\n'
                 'pacing = false\nmax_udp_payload = 1472\ngso = false\nmax_ack_delay_ms = 0\n'
                 'ack_delay_exponent = 20\nclient_quic_connection_options = ["AKDU", "AKD3"]\n')
    o = server_options(str(f))
    assert o.h3server_args == ("--cc", "bbr", "--initial-cwnd-packets", "10", "--pacing", "off",
                               "--max-udp-payload", "1472", "--gso", "off",
                               "--max-ack-delay-ms", "0", "--ack-delay-exponent", "20")
    assert o.chromium_flags == ("--enable-quic", "--origin-to-force-quic-on=*",
                                "--quic-connection-options=AKDU,AKD3")


def test_package_exports_server_options():
    import testbed.protocols
    assert testbed.protocols.server_options("quic").stack == "quic"


# ------------------------------------------------------------------ applied (fake namespace)
# (tests/unit/test_protocols_applied.py: restores that fail; the e2e test: a real namespace)

@pytest.fixture
def kernel(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path)


def test_applied_sets_the_namespace_and_route(kernel):
    with applied(server_options("tcp-plus", fq=False), kernel.topology) as change:
        v = kernel.sysctls
        assert v["net.ipv4.tcp_congestion_control"] == "cubic"
        assert v["net.ipv4.tcp_slow_start_after_idle"] == "0"
        assert v["net.ipv4.tcp_wmem"] == "4096 1048576 33554432"
        assert "initcwnd 32 initrwnd 32" in kernel.routes["198.18.0.2"]
        assert "initcwnd 32" in change.done["route"] and change.done["pacing"] == "internal"


def test_settings_in_turn_do_not_leak(kernel):
    pristine_route = kernel.routes["198.18.0.2"]
    v = kernel.sysctls
    with applied(server_options("tcp-plus-bbr", fq=False), kernel.topology):
        assert v["net.ipv4.tcp_congestion_control"] == "bbr"
    with applied(server_options("tcp", fq=False), kernel.topology):
        assert v["net.ipv4.tcp_congestion_control"] == "cubic"  # not the inherited bbr
        assert v["net.ipv4.tcp_slow_start_after_idle"] == "1"
        assert v["net.ipv4.tcp_wmem"] == "4096\t16384\t4194304"  # the namespace's own
        assert "initcwnd 10 initrwnd 10" in kernel.routes["198.18.0.2"]
    with applied(server_options("quic"), kernel.topology):
        assert kernel.routes["198.18.0.2"] == pristine_route
        assert v["net.ipv4.tcp_congestion_control"] == "bbr"  # the namespace's own


def test_applied_refuses_a_disallowed_congestion_control(kernel):
    kernel.sysctls["net.ipv4.tcp_allowed_congestion_control"] = "reno bbr"
    from testbed.errors import TestbedError
    with pytest.raises(TestbedError, match="cubic is not allowed.*make setup"), \
            applied(server_options("tcp", fq=False), kernel.topology):
        pass
