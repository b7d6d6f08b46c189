"""applied(): a protocol setting in force in the server namespace and undone on exit,
with the commands run against a made-up kernel (no namespaces, no root)."""

from __future__ import annotations

import subprocess

import pytest

from testbed import proc
from testbed.campaign import servers as servers_mod
from testbed.errors import CommandFailed
from testbed.errors import TestbedError as Failed
from testbed.protocols import applied, apply, netstate, server_options
from testbed.runstate import Run
from testbed.topology import ReplayTopology


class FakeKernel:
    """What `ip netns exec NS sysctl|ip route|tc qdisc|ip tcp_metrics` would do in one
    server namespace. refuse: sysctl keys whose writes fail; ignore: keys whose writes
    succeed but change nothing; broken: command words that fail ("route replace")."""

    def __init__(self, dev: str):
        self.dev = dev
        self.sysctls = {"net.ipv4.tcp_congestion_control": "bbr",
                        "net.ipv4.tcp_slow_start_after_idle": "1",
                        "net.ipv4.tcp_rmem": "4096\t131072\t33554432",
                        "net.ipv4.tcp_wmem": "4096\t16384\t4194304",
                        "net.ipv4.tcp_allowed_congestion_control": "reno bbr cubic"}
        self.routes = {"198.18.0.0/30": f"198.18.0.0/30 dev {dev} proto kernel scope link "
                                        "src 198.18.0.1",
                       "198.18.0.2": f"198.18.0.2 dev {dev} scope link src 198.18.0.1"}
        self.refuse: set[str] = set()
        self.ignore: set[str] = set()
        self.broken: set[str] = set()

    def __call__(self, argv, *, check=True, **kw) -> subprocess.CompletedProcess:
        argv = [str(a) for a in argv]
        assert argv[:3] == ["ip", "netns", "exec"], argv
        cmd = argv[4:]
        code, out = self.answer(cmd)
        if check and code:
            raise CommandFailed(argv, code, out)
        return subprocess.CompletedProcess(argv, code, out if code == 0 else "",
                                           out if code else "")

    def answer(self, cmd: list[str]) -> tuple[int, str]:
        if " ".join(cmd[1:3]) in self.broken:
            return 2, "RTNETLINK answers: Operation not permitted"
        if cmd[:2] == ["sysctl", "-n"]:
            return 0, self.sysctls[cmd[2]] + "\n"
        if cmd[:3] == ["sysctl", "-q", "-w"]:
            key, _, value = cmd[3].partition("=")
            if key in self.refuse:
                return 255, f"sysctl: setting key \"{key}\": Operation not permitted"
            if key not in self.ignore:
                self.sysctls[key] = value
            return 0, ""
        if cmd[:3] == ["ip", "route", "show"]:
            if len(cmd) > 3:
                return 0, self.routes.get(cmd[3].removesuffix("/32"), "") + "\n"
            return 0, "\n".join(self.routes.values()) + "\n"
        if cmd[:3] == ["ip", "route", "replace"]:
            dest, words = cmd[3].removesuffix("/32"), dict(zip(cmd[4::2], cmd[5::2]))
            metrics = "".join(f" {k} {words[k]}" for k in ("initcwnd", "initrwnd") if k in words)
            self.routes[dest] = f"{dest} dev {words['dev']} scope link src {words['src']}{metrics}"
            return 0, ""
        if cmd[:3] == ["tc", "qdisc", "show"]:
            return 0, f"qdisc noqueue 0: dev lo root refcnt 2\nqdisc noqueue 0: dev {self.dev} root refcnt 2\n"
        if cmd[:3] == ["ip", "tcp_metrics", "flush"]:
            return 0, ""
        raise AssertionError(f"unexpected command {cmd}")


@pytest.fixture
def kernel(monkeypatch, tmp_path):
    topo = ReplayTopology(["192.0.2.1"], run=Run("0", tmp_path))
    k = FakeKernel(topo.server_dev)
    monkeypatch.setattr(proc, "run", k)
    monkeypatch.setattr(apply, "has_fq", lambda: False)
    monkeypatch.setattr(apply, "PACING_PRELOAD", tmp_path)  # exists
    k.topology = topo
    return k


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
    monkeypatch.setattr(servers_mod, "ReplayEnv", FakeEnv)
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
    monkeypatch.setattr(servers_mod, "ReplayEnv", FakeEnv)
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
