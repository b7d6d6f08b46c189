"""The replay network: a server namespace and a client namespace joined by veth.

    ┌──────── tb-<run>-srv ────────┐        ┌──────── tb-<run>-cli ─────────┐
    │ lo: every recorded server IP │  veth  │ Mahimahi shells start here;   │
    │ nginx+uWSGI or h3server      ├────────┤ browser inside the innermost  │
    │ protocol sysctls, route with │198.18.0│ shell. Routes: each recorded  │
    │ initcwnd to the client side  │ .1 ↔ .2│ IP /32 via .1, nothing else.  │
    └──────────────────────────────┘        └───────────────────────────────┘

The client namespace routes only the recorded IPs, so a replay can reach
nothing but the servers (an unrecorded address fails at once: no route), and
neither namespace has a link to the host: no replay packet can leave the
machine. Mahimahi masquerades its inner addresses to 198.18.0.2, the one
client the servers see; the server namespace's route to it carries the
protocol setting's initial windows. 198.18.0.0/15 is the range RFC 2544
reserves for benchmarking.
"""

from __future__ import annotations

import ipaddress
from contextlib import ExitStack
from typing import Self

from testbed.host import proc
from testbed.host.netns import NetNS
from testbed.host.runstate import Run, current

SERVER_LINK_IP = "198.18.0.1"
CLIENT_LINK_IP = "198.18.0.2"
LINK_PREFIX = 30
OWN_NETWORKS = (
    ipaddress.IPv4Network("198.18.0.0/15"),  # the link above, the probe site (emulate.probesite)
    ipaddress.IPv4Network("100.64.0.0/10"),  # Mahimahi's shells, masqueraded to the link
)
"""Address ranges the testbed uses itself: a recorded server IP is never one of them."""


def client_route_argv(server_dev: str, **metrics: int) -> list[str]:
    """The `ip route replace` (run in the server namespace) that sets its route to
    the client with route metrics such as initcwnd=32 (`ip route` names)."""
    argv = ["ip", "route", "replace", f"{CLIENT_LINK_IP}/32", "dev", server_dev,
            "src", SERVER_LINK_IP]
    for key, value in metrics.items():
        argv += [key, str(value)]
    return argv


class ReplayTopology:
    """`with ReplayTopology(ips) as topo:` both namespaces up, removed on exit."""

    def __init__(self, ips: list[str], run: Run | None = None) -> None:
        self.ips = list(dict.fromkeys(ips))
        self.run = run or current()
        self.server = NetNS("srv", self.run)
        self.client = NetNS("cli", self.run)
        self.server_dev = f"tb{self.run.id}s"
        self.client_dev = f"tb{self.run.id}c"
        self._exits = ExitStack()

    def __enter__(self) -> Self:
        with ExitStack() as exits:
            exits.enter_context(self.server)
            exits.enter_context(self.client)
            proc.run(["ip", "link", "add", self.server_dev, "netns", self.server.name,
                      "type", "veth", "peer", "name", self.client_dev, "netns", self.client.name])
            for ns, dev, ip in ((self.server, self.server_dev, SERVER_LINK_IP),
                                (self.client, self.client_dev, CLIENT_LINK_IP)):
                proc.run(ns.exec(["ip", "addr", "add", f"{ip}/{LINK_PREFIX}", "dev", dev]))
                proc.run(ns.exec(["ip", "link", "set", dev, "up"]))
            # Servers may bind port 443 without root.
            self.server.sysctl("net.ipv4.ip_unprivileged_port_start", 0)
            for ip in self.ips:
                self.server.add_address(ip)
                proc.run(self.client.exec(["ip", "route", "add", f"{ip}/32",
                                           "via", SERVER_LINK_IP, "dev", self.client_dev]))
            self.set_client_route()
            self._exits = exits.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._exits.close()

    def set_client_route(self, **metrics: int) -> None:
        """The server namespace's route to the client, with route metrics such as
        initcwnd=32, initrwnd=32 (`ip route` names)."""
        proc.run(self.server.exec(client_route_argv(self.server_dev, **metrics)))

    def client_route(self) -> str:
        return proc.output(self.server.exec(["ip", "route", "show", f"{CLIENT_LINK_IP}/32"]))
