"""applied(): a protocol setting in force in the server namespace and undone on exit,
with the commands run against a made-up kernel (no namespaces, no root)."""

from __future__ import annotations

import pytest
from support.fake_kernel import install

from testbed.campaign.run import servers as servers_mod
from testbed.errors import TestbedError as Failed
from testbed.protocols import applied, apply, netstate, server_options


@pytest.fixture
def kernel(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path)


def keys_snapshot(topo) -> str:
    return netstate.snapshot(topo, apply.MANAGED_SYSCTLS).text()


def test_a_setting_is_in_force_inside_and_gone_after(kernel):
    topo = kernel.topology
    before = keys_snapshot(topo)
    with applied(server_options("tcp-plus", fq=False), topo) as change:
        assert kernel.sysctls["net.ipv4.tcp_congestion_control"] == "cubic"
        assert kernel.sysctls["net.ipv4.tcp_wmem"] == "4096 1048576 33554432"
        assert "initcwnd 32 initrwnd 32" in kernel.routes["198.18.0.2"]
        assert change.done["pacing"] == "internal"
        assert change.nginx_env == {"LD_PRELOAD": str(apply.PACING_PRELOAD)}
        assert change.before.text() == before
        assert keys_snapshot(topo) != before
    assert keys_snapshot(topo) == before
    assert kernel.sysctls["net.ipv4.tcp_wmem"] == "4096\t16384\t4194304"


def test_the_nginx_environment_handed_out_is_a_copy(kernel):
    opts = server_options("tcp-plus", fq=False)
    with applied(opts, kernel.topology) as change:
        change.nginx_env["LD_PRELOAD"] = "/tmp/other.so"
    assert opts.nginx_env["LD_PRELOAD"] == str(apply.PACING_PRELOAD)
    with pytest.raises(TypeError):
        opts.nginx_env["LD_PRELOAD"] = "/tmp/other.so"


def test_a_sysctl_that_cannot_be_written_back_raises_naming_it(kernel):
    with pytest.raises(Failed, match=r"could not restore net\.ipv4\.tcp_wmem \(.*"
                                     r"Operation not permitted"), \
            applied(server_options("tcp-plus", fq=False), kernel.topology):
        kernel.refuse.add("net.ipv4.tcp_wmem")


def test_a_write_back_the_kernel_ignores_is_found_by_reading_back(kernel):
    with pytest.raises(Failed, match=r"could not restore net\.ipv4\.tcp_rmem \(still "), \
            applied(server_options("tcp-plus", fq=False), kernel.topology):
        kernel.ignore.add("net.ipv4.tcp_rmem")


def test_a_route_that_cannot_be_put_back_raises_naming_the_routes(kernel):
    with pytest.raises(Failed, match="could not restore routes"), \
            applied(server_options("tcp", fq=False), kernel.topology):
        kernel.broken.add("route replace")


def test_a_failed_restore_is_not_swallowed_when_the_block_fails_too(kernel):
    with pytest.raises(Failed, match="could not restore") as raised, \
            applied(server_options("tcp-plus", fq=False), kernel.topology):
        kernel.refuse.add("net.ipv4.tcp_congestion_control")
        raise RuntimeError("the trial failed")
    assert isinstance(raised.value.__context__, RuntimeError)


def test_nothing_is_changed_when_the_congestion_control_is_not_allowed(kernel):
    kernel.sysctls["net.ipv4.tcp_allowed_congestion_control"] = "reno bbr"
    before = dict(kernel.sysctls)
    with pytest.raises(Failed, match="cubic is not allowed"), \
            applied(server_options("tcp", fq=False), kernel.topology):
        pass
    assert kernel.sysctls == before


class FakeEnv:
    def __init__(self, recording, stack, **kw):
        self.stack, self.kw, self.servers = stack, kw, {}

    def check_alive(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_servers_that_could_not_undo_a_setting_refuse_every_later_one(kernel, monkeypatch):
    monkeypatch.setattr(apply, "ReplayEnv", FakeEnv)  # protocols.replay_env makes it
    monkeypatch.setattr(servers_mod.manifest_mod, "sysctls", lambda prefix: {})
    servers = servers_mod.Servers(recording=None, topology=kernel.topology)
    env = servers.use(server_options("tcp-plus", fq=False))
    assert env.kw["nginx_env"] == {"LD_PRELOAD": str(apply.PACING_PRELOAD)}
    kernel.refuse.add("net.ipv4.tcp_wmem")
    with pytest.raises(Failed, match="could not restore net.ipv4.tcp_wmem"):
        servers.use(server_options("tcp", fq=False))
    assert servers.broken and "tcp_wmem" in servers.broken
    kernel.refuse.clear()
    with pytest.raises(Failed, match="could not restore net.ipv4.tcp_wmem"):
        servers.use(server_options("quic"))


def test_servers_undo_the_setting_in_force_before_the_next(kernel, monkeypatch):
    monkeypatch.setattr(apply, "ReplayEnv", FakeEnv)  # protocols.replay_env makes it
    monkeypatch.setattr(servers_mod.manifest_mod, "sysctls", lambda prefix: {})
    before = keys_snapshot(kernel.topology)
    servers = servers_mod.Servers(recording=None, topology=kernel.topology)
    servers.use(server_options("tcp-plus-bbr", fq=False))
    servers.use(server_options("quic"))
    assert keys_snapshot(kernel.topology) == before  # QUIC changes nothing of its own
    servers.use(server_options("tcp", fq=False))
    assert kernel.sysctls["net.ipv4.tcp_wmem"] == "4096\t16384\t4194304"
    assert "initcwnd 10" in kernel.routes["198.18.0.2"]
    servers.close()
    assert keys_snapshot(kernel.topology) == before


def test_a_write_the_kernel_refuses_while_applying_raises_naming_it_and_is_undone(kernel):
    before = keys_snapshot(kernel.topology)
    kernel.refuse.add("net.ipv4.tcp_rmem")
    with pytest.raises(Failed, match=r"could not set tcp-plus: net\.ipv4\.tcp_rmem \(exit 255: "
                                     r".*Operation not permitted"), \
            applied(server_options("tcp-plus", fq=False), kernel.topology):
        pass
    assert keys_snapshot(kernel.topology) == before  # what was set is put back


def test_a_switch_is_one_exec_to_read_one_to_change_and_two_to_undo(kernel):
    topo = kernel.topology
    kernel.execs.clear()
    with applied(server_options("tcp-plus", fq=False), topo):
        assert len(kernel.execs) == 2  # snapshot; the change and its read-back
    assert len(kernel.execs) == 4  # the namespace read; the write-back and its read-back
    kernel.execs.clear()
    with applied(server_options("quic"), topo):
        pass
    # QUIC only flushes the TCP metrics cache: the exit reads, finds nothing to put back
    assert len(kernel.execs) == 3
    assert not any("-w" in cmd[2] or "route replace" in cmd[2] for cmd in kernel.execs[2:])


def test_the_namespace_shell_answer_is_parsed_by_part_and_by_step():
    steps = [("net.ipv4.tcp_wmem", ["sysctl", "-q", "-w", "net.ipv4.tcp_wmem=1 2 3"]),
             ("routes", ["ip", "route", "replace", "198.18.0.2"]),
             ("routes", ["ip", "route", "del", "10.0.0.0/8"])]
    script = netstate.script(steps, ["net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"])
    assert "'net.ipv4.tcp_wmem=1 2 3'" in script
    text = ("sysctl: setting key \"net.ipv4.tcp_wmem\": Invalid argument\n"
            "@@testbed step 255 net.ipv4.tcp_wmem\n"
            "@@testbed step 0 routes\n"
            "RTNETLINK answers: No such process\n"
            "@@testbed step 2 routes\n"
            "@@testbed sysctls\n4096\t16384\t4194304\n4096 131072 6291456\n"
            "@@testbed routes\n198.18.0.2 dev tb0s scope link\n"
            "@@testbed qdiscs\nqdisc noqueue 0: dev tb0s root refcnt 2\n")
    failed, snap = netstate.parse(text, steps, ["net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"])
    assert failed == {"net.ipv4.tcp_wmem": 'exit 255: sysctl: setting key '
                                           '"net.ipv4.tcp_wmem": Invalid argument',
                      "routes": "exit 2: RTNETLINK answers: No such process"}
    assert snap.sysctls == (("net.ipv4.tcp_wmem", "4096\t16384\t4194304"),
                            ("net.ipv4.tcp_rmem", "4096 131072 6291456"))
    assert snap.routes == "198.18.0.2 dev tb0s scope link"
    assert snap.qdiscs == "qdisc noqueue 0: dev tb0s root refcnt 2"
    with pytest.raises(Failed, match="cut short after 1 of 3 steps"):
        netstate.parse(text.split("@@testbed step 0")[0], steps, ["net.ipv4.tcp_wmem"])
    with pytest.raises(Failed, match="1 sysctl values for 2 keys"):
        netstate.parse(text.replace("4096 131072 6291456\n", ""), steps,
                       ["net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"])
