"""Network namespaces owned by the testbed, removed when their block ends."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from typing import Self

from testbed.host import proc
from testbed.host.runstate import Run, current


def exists(name: str) -> bool:
    return name in list_names()


def list_names() -> list[str]:
    out = proc.output(["ip", "netns", "list"])
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def pids(name: str) -> list[int]:
    out = proc.run(["ip", "netns", "pids", name], check=False).stdout
    return [int(p) for p in out.split()]


def kill_all(name: str, timeout: float = 3.0) -> None:
    """SIGTERM every process in the namespace, SIGKILL what is left after timeout."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = pids(name)
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = pids(name)
        if not left:
            return


def delete(name: str) -> None:
    kill_all(name)
    proc.run(["ip", "netns", "delete", name], check=False)


EHASH_ENTRIES = 1024
"""Buckets of each namespace's own TCP established hash table. A namespace made
plainly shares the host's (262,144 buckets on this machine), and every sock_diag
dump of its connections (the telemetry's, every 10 ms while a page loads) walks all
of them: ~1 ms of kernel time a dump, 0.5 s of CPU a trial, on the cores the browser
uses. With its own table a dump takes microseconds. A replay namespace holds some
hundred connections at most (time-wait included), so 1024 is ample."""
CHILD_EHASH = "/proc/sys/net/ipv4/tcp_child_ehash_entries"
"""The kernel's knob for it (Linux >= 6.1): read in the namespace that creates the
new one, so it is set in a throwaway namespace (`unshare --net`) and the host's
value is never touched."""


def add_argv(name: str, ehash_entries: int | None = EHASH_ENTRIES) -> list[str]:
    """The command that creates namespace `name`, with its own established hash table
    of ehash_entries buckets where the kernel can (else sharing the host's)."""
    if ehash_entries is None or not os.path.exists(CHILD_EHASH):
        return ["ip", "netns", "add", name]
    # sh's $1 is the name: nothing of it is parsed by the shell
    return ["unshare", "--net", "--", "sh", "-c",
            (f"sysctl -q -w net.ipv4.tcp_child_ehash_entries={int(ehash_entries)} "
            '&& exec ip netns add "$1"'), "sh", name]


class NetNS:
    """`with NetNS("replay") as ns:` a namespace `tb-<run>-replay` with loopback up.

    ip_forward is on inside it (Mahimahi checks it where its shells start), and it
    has its own TCP established hash table (EHASH_ENTRIES).
    On exit every process left in it is stopped and it is deleted.
    """

    def __init__(self, purpose: str, run: Run | None = None) -> None:
        self.run = run or current()
        self.name = self.run.name(purpose)

    def __enter__(self) -> Self:
        if exists(self.name):
            delete(self.name)
        proc.run(add_argv(self.name))
        try:
            proc.run(self.exec(["ip", "link", "set", "lo", "up"]))
            self.sysctl("net.ipv4.ip_forward", "1")
        except BaseException:
            delete(self.name)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        delete(self.name)

    def exec(self, argv: Sequence[str]) -> list[str]:
        """argv run inside this namespace (as the caller's user)."""
        return ["ip", "netns", "exec", self.name, *map(str, argv)]

    def sysctl(self, key: str, value: str | int) -> None:
        proc.run(self.exec(["sysctl", "-q", "-w", f"{key}={value}"]))

    def read_sysctl(self, key: str) -> str:
        return proc.output(self.exec(["sysctl", "-n", key]))

    def add_address(self, ip: str, dev: str = "lo") -> None:
        proc.run(self.exec(["ip", "addr", "add", f"{ip}/32", "dev", dev]))
