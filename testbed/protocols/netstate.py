"""What a protocol setting may change in a replay topology's server namespace, read
as text, and put back; each in ONE `ip netns exec`.

    before = snapshot(topology, keys)     # the sysctls `keys`, routes, qdiscs
    failed, now = change(topology, steps, keys)   # commands, then a read-back
    restore(topology, before)             # put back and read back, or TestbedError

A snapshot holds the values of the named sysctls, `ip route show` and `tc qdisc
show` of the server namespace, read by one shell in the namespace (script() and
parse() build and read what it prints). change() runs named commands (steps)
in one shell too, each to its end whatever the others did, and reads the
namespace back in the same shell: what failed comes back by name with the
command's message. restore() reads the namespace and, only where it differs
from the snapshot, writes back and reads back in one more shell: anything that
still differs, or whose command failed, is named in the TestbedError it raises.
It restores the routes of the main table (re-adding or removing whole routes)
and the root qdisc of the server's link (the link's default again, or a qdisc
of the same kind; parameters a kind was given beyond its defaults are not
rebuilt, and the read-back then says so).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from testbed.errors import TestbedError
from testbed.host import proc
from testbed.host.topology import ReplayTopology

ROUTE_STATUS_FLAGS = frozenset({"linkdown", "dead", "offload", "trap", "offload_failed",
                                "rt_offload", "rt_trap", "rt_offload_failed", "unresolved"})
"""Words of `ip route show` that report a route's state, not how it was made."""
DEFAULT_QDISCS = frozenset({"noqueue", "pfifo_fast", "mq"})
"""Root qdiscs a link gets by itself (removing the root qdisc brings them back)."""
_HANDLE = re.compile(r"^(qdisc \S+) [0-9a-f]+:", re.MULTILINE)
MARK = "@@testbed"
"""Starts the lines the namespace's shell prints between the parts of its answer."""
SECTIONS = ("sysctls", "routes", "qdiscs")

Step = tuple[str, Sequence[str]]
"""(what, argv): a command run in the namespace; `what` names it in failures (one
word: a sysctl key, "routes", "qdiscs", ...; several steps may share one)."""


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

    def only(self, keys: Iterable[str]) -> Snapshot:
        """The snapshot with only the sysctls `keys`."""
        keep = set(keys)
        return Snapshot(tuple((k, v) for k, v in self.sysctls if k in keep),
                        self.routes, self.qdiscs)

    def sysctl(self, key: str) -> str:
        return dict(self.sysctls)[key]

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


def script(steps: Sequence[Step], keys: Sequence[str]) -> str:
    """The shell script run in the namespace: every step (its output, then a line
    `@@testbed step STATUS WHAT`), then the read (stops at the first failing
    command): `@@testbed sysctls`, one value per key, `@@testbed routes`, `ip route
    show`, `@@testbed qdiscs`, `tc qdisc show`."""
    lines = []
    for what, argv in steps:
        if not what or any(c.isspace() for c in what):
            raise ValueError(f"a step's name is one word: {what!r}")
        lines.append(f'{shlex.join(argv)} 2>&1; echo "{MARK} step $? {what}"')
    lines += ["set -e",
              f"echo '{MARK} sysctls'", shlex.join(["sysctl", "-n", *keys]),
              f"echo '{MARK} routes'", "ip route show",
              f"echo '{MARK} qdiscs'", "tc qdisc show"]
    return "\n".join(lines) + "\n"


def parse(text: str, steps: Sequence[Step], keys: Sequence[str],
          ) -> tuple[dict[str, str], Snapshot]:
    """What `script(steps, keys)` printed: ({what: why} of the steps that failed (a
    name shared by several steps: their reasons joined), the snapshot read after
    them). TestbedError if the answer is not whole."""
    failed: dict[str, list[str]] = {}
    said: list[str] = []
    ran = 0
    parts: dict[str, list[str]] = {}
    part: list[str] | None = None
    for line in text.splitlines():
        words = line.split(" ", 3)
        if words[0] == MARK and len(words) == 4 and words[1] == "step" and part is None:
            status, what = words[2], words[3]
            if ran >= len(steps) or steps[ran][0] != what:
                raise TestbedError(f"namespace shell: step {what!r} out of order")
            ran += 1
            if status != "0":
                why = " ".join(" ".join(said).split()) or "no message"
                failed.setdefault(what, []).append(f"exit {status}: {why}")
            said = []
        elif words[0] == MARK and len(words) == 2 and words[1] in SECTIONS:
            part = parts.setdefault(words[1], [])
        elif part is not None:
            part.append(line)
        else:
            said.append(line)
    if ran != len(steps) or set(parts) != set(SECTIONS):
        raise TestbedError(f"namespace shell: answer cut short after {ran} of "
                           f"{len(steps)} steps and parts {sorted(parts)}")
    values = [v for v in parts["sysctls"] if v.strip()]
    if len(values) != len(keys):
        raise TestbedError(f"namespace shell: {len(values)} sysctl values for "
                           f"{len(keys)} keys ({', '.join(keys)})")
    snap = Snapshot(sysctls=tuple(zip(keys, values)),
                    routes="\n".join(parts["routes"]).strip(),
                    qdiscs="\n".join(parts["qdiscs"]).strip())
    return {what: "; ".join(whys) for what, whys in failed.items()}, snap


def change(topology: ReplayTopology, steps: Sequence[Step], keys: Iterable[str],
           ) -> tuple[dict[str, str], Snapshot]:
    """Run `steps` in the server namespace, each whatever the others did, then read
    the sysctls `keys`, routes and qdiscs: ({what: why} of the steps that failed,
    the snapshot), all in one `ip netns exec`; TestbedError if the shell itself or
    the read fails."""
    keys = tuple(keys)
    text = proc.output(topology.server.exec(["sh", "-c", script(steps, keys)]))
    return parse(text, steps, keys)


def snapshot(topology: ReplayTopology, keys: Iterable[str]) -> Snapshot:
    return change(topology, (), keys)[1]


def restore(topology: ReplayTopology, before: Snapshot) -> None:
    """Put the server namespace back as `before` and read it back; TestbedError naming
    every sysctl, the routes or the qdiscs that could not be put back. Nothing is
    written when the namespace already reads as `before`."""
    ns = topology.server
    keys = [k for k, _ in before.sysctls]
    try:
        now = snapshot(topology, keys)
    except TestbedError as e:
        raise TestbedError(f"server namespace {ns.name}: could not read what to "
                           f"restore ({e})") from e
    differ = before.differences(now)
    if not differ:
        return
    steps: list[Step] = [(k, ["sysctl", "-q", "-w", f"{k}={v}"])
                         for k, v in before.sysctls if k in differ]
    if "routes" in differ:
        steps += [("routes", argv) for argv in route_commands(now.routes, before.routes)]
    if "qdiscs" in differ:
        steps += [("qdiscs", argv) for argv in
                  qdisc_commands(now.qdiscs, before.qdiscs, topology.server_dev)]
    try:
        failed, after = change(topology, steps, keys)
    except TestbedError as e:
        raise TestbedError(f"server namespace {ns.name}: could not restore "
                           f"{', '.join(differ)} ({e})") from e
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


def route_commands(now: str, routes: str) -> list[list[str]]:
    """`ip route` commands that turn the routes `now` into `routes` (both `ip route
    show`): remove routes to destinations `routes` lacks, replace the others."""
    want = [line for line in routes.splitlines() if line.strip()]
    have = [line for line in now.splitlines() if line.strip()]
    wanted_dests = {line.split()[0] for line in want}
    out = [["ip", "route", "del", *_route_words(line)] for line in have
           if line not in want and line.split()[0] not in wanted_dests]
    out += [["ip", "route", "replace", *_route_words(line)] for line in want
            if line not in have]
    return out


def root_qdisc(qdiscs: str, dev: str) -> str | None:
    """The kind of dev's root qdisc in `tc qdisc show` text."""
    for line in qdiscs.splitlines():
        words = line.split()
        if len(words) > 4 and words[0] == "qdisc" and words[3:5] == ["dev", dev] \
                and "root" in words:
            return words[1]
    return None


def qdisc_commands(now: str, qdiscs: str, dev: str) -> list[list[str]]:
    """`tc` commands that give dev the root qdisc kind it has in `qdiscs`."""
    want, have = root_qdisc(qdiscs, dev), root_qdisc(now, dev)
    if want == have:
        return []
    if want is None or want in DEFAULT_QDISCS:
        return [["tc", "qdisc", "del", "dev", dev, "root"]]
    return [["tc", "qdisc", "replace", "dev", dev, "root", want]]
