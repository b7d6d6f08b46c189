"""applied() on a real replay topology: each of the five protocol settings in turn is
in force inside its `with` block, and after it the server namespace (the managed
sysctls, `ip route show`, `tc qdisc show`) reads exactly as before the first."""

from __future__ import annotations

import pytest
from support.needs import need, need_root

from testbed.formats.profiles import load_protocol
from testbed.host import proc
from testbed.host.topology import ReplayTopology
from testbed.protocols import applied, apply, netstate, server_options

pytestmark = pytest.mark.e2e

SETTINGS = ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr")


def namespace(topo: ReplayTopology) -> str:
    return netstate.snapshot(topo, apply.MANAGED_SYSCTLS).text()


def test_each_setting_is_in_force_inside_and_undone_after():
    need_root()
    need(None if apply.PACING_PRELOAD.exists() or apply.has_fq()
         else f"{apply.PACING_PRELOAD} missing: run `make setup` (step pacing)")
    with ReplayTopology(["203.0.113.61"]) as topo:
        ns = topo.server
        pristine = namespace(topo)
        seen = {}
        for name in SETTINGS:
            p = load_protocol(name)
            opts = server_options(name)
            with applied(opts, topo) as change:
                inside = namespace(topo)
                if p.stack == "tcp":
                    assert ns.read_sysctl("net.ipv4.tcp_congestion_control") == \
                        p.congestion_control
                    assert ns.read_sysctl("net.ipv4.tcp_slow_start_after_idle") == \
                        ("1" if p.slow_start_after_idle else "0")
                    for key, want in (("net.ipv4.tcp_rmem", p.tcp_rmem),
                                      ("net.ipv4.tcp_wmem", p.tcp_wmem)):
                        if want:
                            assert ns.read_sysctl(key).split() == [str(v) for v in want]
                    route = topo.client_route()
                    iw = p.initial_window_packets
                    assert f"initcwnd {iw}" in route and f"initrwnd {iw}" in route, route
                    if opts.pacing_method == "fq":
                        assert "qdisc fq " in proc.output(ns.exec(["tc", "qdisc", "show"]))
                    elif opts.pacing_method == "internal":
                        assert change.nginx_env == {"LD_PRELOAD": str(apply.PACING_PRELOAD)}
                    else:
                        assert change.nginx_env == {}
                    assert inside != pristine  # the route carries the initial window
                else:  # QUIC lives in h3server's options: the namespace is left alone
                    assert inside == pristine
                    assert ("--initial-cwnd-packets", str(p.initial_window_packets)) in \
                        zip(opts.h3server_args, opts.h3server_args[1:])
                seen[name] = inside
            assert namespace(topo) == pristine, f"after {name}"
        # the settings really differ from one another in the namespace
        assert len({seen[n] for n in ("tcp", "tcp-plus", "tcp-plus-bbr")}) == 3
