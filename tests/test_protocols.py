"""Protocol settings → server options, and applying them. Pure."""

from __future__ import annotations

import pytest

from testbed.protocols import apply
from testbed.protocols.apply import PACING_PRELOAD, server_options

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


@pytest.mark.parametrize("name,cc", [("quic", "cubic"), ("quic-bbr", "bbr2")])
def test_quic_settings_become_h3server_flags(name, cc):
    o = server_options(name)
    assert o.stack == "quic"
    assert o.h3server_args == ("--cc", cc, "--initial-cwnd-packets", "32", "--pacing", "on",
                               "--max-udp-payload", "1350")
    assert o.chromium_flags == ("--enable-quic", "--origin-to-force-quic-on=*")
    assert o.sysctls == {} and o.route == {} and o.nginx_env == {}


def test_package_exports_server_options():
    import testbed.protocols
    assert testbed.protocols.server_options("quic").stack == "quic"


# ------------------------------------------------------------------ apply (fake namespace)

class FakeNS:
    name = "tb-0-srv"

    def __init__(self):
        self.values = {"net.ipv4.tcp_congestion_control": "bbr",
                       "net.ipv4.tcp_slow_start_after_idle": "1",
                       "net.ipv4.tcp_rmem": "4096\t131072\t33554432",
                       "net.ipv4.tcp_wmem": "4096\t16384\t4194304",
                       "net.ipv4.tcp_allowed_congestion_control": "reno bbr cubic"}
        self.commands = []

    def read_sysctl(self, key):
        return self.values[key]

    def sysctl(self, key, value):
        self.values[key] = str(value)

    def exec(self, argv):
        return ["true", *argv]


class FakeTopology:
    server_dev = "tb0s"

    def __init__(self):
        self.server = FakeNS()
        self.routes = []

    def set_client_route(self, **metrics):
        self.routes.append(metrics)

    def client_route(self):
        m = self.routes[-1]
        return "198.18.0.2 dev tb0s " + " ".join(f"{k} {v}" for k, v in m.items())


@pytest.fixture
def topo(monkeypatch):
    monkeypatch.setattr(apply, "_originals", {})
    monkeypatch.setattr(apply, "has_fq", lambda: False)
    monkeypatch.setattr(apply, "PACING_PRELOAD", PACING_PRELOAD.parent)  # exists
    return FakeTopology()


def test_apply_sets_the_namespace_and_route(topo):
    done = server_options("tcp-plus", fq=False).apply(topo)
    v = topo.server.values
    assert v["net.ipv4.tcp_congestion_control"] == "cubic"
    assert v["net.ipv4.tcp_slow_start_after_idle"] == "0"
    assert v["net.ipv4.tcp_wmem"] == "4096 1048576 33554432"
    assert topo.routes[-1] == {"initcwnd": 32, "initrwnd": 32}
    assert "initcwnd 32" in done["route"] and done["pacing"] == "internal"


def test_settings_in_turn_do_not_leak(topo):
    server_options("tcp-plus-bbr", fq=False).apply(topo)
    server_options("tcp", fq=False).apply(topo)
    v = topo.server.values
    assert v["net.ipv4.tcp_congestion_control"] == "cubic"  # not the inherited bbr
    assert v["net.ipv4.tcp_slow_start_after_idle"] == "1"
    assert v["net.ipv4.tcp_wmem"] == "4096\t16384\t4194304"  # the namespace's own again
    assert topo.routes[-1] == {"initcwnd": 10, "initrwnd": 10}
    server_options("quic").apply(topo)
    assert topo.routes[-1] == {}


def test_apply_refuses_a_disallowed_congestion_control(topo):
    topo.server.values["net.ipv4.tcp_allowed_congestion_control"] = "reno bbr"
    from testbed.errors import TestbedError
    with pytest.raises(TestbedError, match="cubic is not allowed.*make setup"):
        server_options("tcp", fq=False).apply(topo)
