"""What a protocol setting may change in a replay topology's server namespace, read
as text, and put back.

    before = snapshot(topology, keys)     # the sysctls `keys`, routes, qdiscs
    ...                                    # a setting changes some of them
    restore(topology, before)             # put back and read back, or TestbedError

A snapshot holds the values of the named sysctls, `ip route show` and `tc qdisc
show` of the server namespace. restore() writes back what differs and reads
everything again: anything that still differs is named in the TestbedError it
raises. It restores the routes of the main table (re-adding or removing whole
routes) and the root qdisc of the server's link (the link's default again, or a
qdisc of the same kind; parameters a kind was given beyond its defaults are not
rebuilt, and the read-back then says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from testbed import proc
from testbed.errors import TestbedError
from testbed.topology import ReplayTopology

ROUTE_STATUS_FLAGS = frozenset({"linkdown", "dead", "offload", "trap", "offload_failed",
                                "rt_offload", "rt_trap", "rt_offload_failed", "unresolved"})
"""Words of `ip route show` that report a route's state, not how it was made."""
DEFAULT_QDISCS = frozenset({"noqueue", "pfifo_fast", "mq"})
"""Root qdiscs a link gets by itself (removing the root qdisc brings them back)."""
_HANDLE = re.compile(r"^(qdisc \S+) [0-9a-f]+:", re.MULTILINE)


@dataclass(frozen=True)
class Snapshot:
    """The server namespace's sysctls (the keys asked for), routes and qdiscs."""

    sysctls: tuple[tuple[str, str], ...]
    """(key, value) as the kernel reads them out."""
    routes: str
    """`ip route show`."""
    qdiscs: str
    """`tc qdisc show`."""

    def text(self) -> str:
        """The whole snapshot as text (for comparing and for messages)."""
        lines = [f"{k} = {v}" for k, v in self.sysctls]
        return "\n".join([*lines, "# ip route show", self.routes,
                          "# tc qdisc show", self.qdiscs])

    def differences(self, other: Snapshot) -> list[str]:
        """What differs in `other`: sysctl keys, "routes", "qdiscs" (qdisc handles,
        which a re-created qdisc gets anew, do not count)."""
        mine, theirs = dict(self.sysctls), dict(other.sysctls)
        out = [k for k in mine if _norm(mine[k]) != _norm(theirs.get(k, ""))]
        if self.routes != other.routes:
            out.append("routes")
        if _HANDLE.sub(r"\1", self.qdiscs) != _HANDLE.sub(r"\1", other.qdiscs):
            out.append("qdiscs")
        return out


def _norm(value: str) -> str:
    return " ".join(value.split())


def snapshot(topology: ReplayTopology, keys: Iterable[str]) -> Snapshot:
    ns = topology.server
    return Snapshot(
        sysctls=tuple((k, ns.read_sysctl(k)) for k in keys),
        routes=proc.output(ns.exec(["ip", "route", "show"])),
        qdiscs=proc.output(ns.exec(["tc", "qdisc", "show"])))


def restore(topology: ReplayTopology, before: Snapshot) -> None:
    """Put the server namespace back as `before` and read it back; TestbedError naming
    every sysctl, the routes or the qdiscs that could not be put back."""
    ns = topology.server
    failed: dict[str, str] = {}
    for key, value in before.sysctls:
        try:
            if _norm(ns.read_sysctl(key)) != _norm(value):
                ns.sysctl(key, value)
        except TestbedError as e:
            failed[key] = str(e)
    try:
        _restore_routes(topology, before.routes)
    except TestbedError as e:
        failed["routes"] = str(e)
    try:
        _restore_qdisc(topology, before.qdiscs)
    except TestbedError as e:
        failed["qdiscs"] = str(e)
    try:
        after = snapshot(topology, dict(before.sysctls))
    except TestbedError as e:
        raise TestbedError(f"server namespace {ns.name}: could not read back what was "
                           f"restored ({e})") from e
    for what in before.differences(after):
        failed.setdefault(what, "still " + _value(after, what))
    if failed:
        detail = "; ".join(f"{what} ({why})" for what, why in failed.items())
        raise TestbedError(f"server namespace {ns.name}: could not restore {detail}")


def _value(s: Snapshot, what: str) -> str:
    if what == "routes":
        return repr(s.routes)
    if what == "qdiscs":
        return repr(s.qdiscs)
    return repr(dict(s.sysctls).get(what))


def _route_words(line: str) -> list[str]:
    return [w for w in line.split() if w not in ROUTE_STATUS_FLAGS]


def _restore_routes(topology: ReplayTopology, routes: str) -> None:
    ns = topology.server
    now = proc.output(ns.exec(["ip", "route", "show"]))
    if now == routes:
        return
    want = [line for line in routes.splitlines() if line.strip()]
    have = [line for line in now.splitlines() if line.strip()]
    wanted_dests = {line.split()[0] for line in want}
    for line in have:
        if line not in want and line.split()[0] not in wanted_dests:
            proc.run(ns.exec(["ip", "route", "del", *_route_words(line)]))
    for line in want:
        if line not in have:
            proc.run(ns.exec(["ip", "route", "replace", *_route_words(line)]))


def _root_qdisc(qdiscs: str, dev: str) -> str | None:
    """The kind of dev's root qdisc in `tc qdisc show` text."""
    for line in qdiscs.splitlines():
        words = line.split()
        if len(words) > 4 and words[0] == "qdisc" and words[3:5] == ["dev", dev] \
                and "root" in words:
            return words[1]
    return None


def _restore_qdisc(topology: ReplayTopology, qdiscs: str) -> None:
    ns, dev = topology.server, topology.server_dev
    now = proc.output(ns.exec(["tc", "qdisc", "show"]))
    want, have = _root_qdisc(qdiscs, dev), _root_qdisc(now, dev)
    if want == have:
        return
    if want is None or want in DEFAULT_QDISCS:
        proc.run(ns.exec(["tc", "qdisc", "del", "dev", dev, "root"]))
    else:
        proc.run(ns.exec(["tc", "qdisc", "replace", "dev", dev, "root", want]))
