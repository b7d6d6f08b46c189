"""A made-up kernel for one server namespace: what `ip netns exec NS ...` (sysctl, ip
route, tc qdisc, ip tcp_metrics, and the `sh -c` scripts of testbed.protocols.netstate)
would do, to stand in for testbed.host.proc.run in unit tests (no namespaces, no root)."""

from __future__ import annotations

import shlex
import subprocess

from testbed.errors import CommandFailed
from testbed.host import proc
from testbed.host.runstate import Run
from testbed.host.topology import ReplayTopology
from testbed.protocols import apply


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
        self.execs: list[list[str]] = []

    def __call__(self, argv, *, check=True, **kw) -> subprocess.CompletedProcess:
        argv = [str(a) for a in argv]
        assert argv[:3] == ["ip", "netns", "exec"], argv
        cmd = argv[4:]
        self.execs.append(cmd)
        code, out = self.shell(cmd[2]) if cmd[:2] == ["sh", "-c"] else self.answer(cmd)
        if check and code:
            raise CommandFailed(argv, code, out)
        return subprocess.CompletedProcess(argv, code, out if code == 0 else "",
                                           out if code else "")

    def shell(self, script: str) -> tuple[int, str]:
        """What `sh -c` makes of netstate.script(): lines `CMD 2>&1; echo "... $? ..."`,
        `set -e`, `echo '...'` and plain commands."""
        out, status, stop_on_error = [], 0, False
        for line in script.splitlines():
            words = shlex.split(line)
            if words == ["set", "-e"]:
                stop_on_error = True
                continue
            if words[0] == "echo":
                out.append(words[1].replace("$?", str(status)) + "\n")
                continue
            cmd, echo = words, []
            if "2>&1;" in words:
                at = words.index("2>&1;")
                cmd, echo = words[:at], words[at + 1:]
            status, said = self.answer(cmd)
            out.append(said if said.endswith("\n") or not said else said + "\n")
            if status and stop_on_error:
                return status, "".join(out)
            if echo:
                out.append(echo[1].replace("$?", str(status)) + "\n")
        return 0, "".join(out)

    def answer(self, cmd: list[str]) -> tuple[int, str]:
        if " ".join(cmd[1:3]) in self.broken:
            return 2, "RTNETLINK answers: Operation not permitted"
        if cmd[:2] == ["sysctl", "-n"]:
            return 0, "".join(self.sysctls[k] + "\n" for k in cmd[2:])
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


def install(monkeypatch, tmp_path) -> FakeKernel:
    """A FakeKernel in place of proc.run, no fq, the pacing library present; its
    topology (a ReplayTopology never entered) is kernel.topology."""
    topo = ReplayTopology(["192.0.2.1"], run=Run("0", tmp_path))
    k = FakeKernel(topo.server_dev)
    monkeypatch.setattr(proc, "run", k)
    monkeypatch.setattr(apply, "has_fq", lambda: False)
    monkeypatch.setattr(apply, "PACING_PRELOAD", tmp_path)  # exists
    k.topology = topo
    return k
