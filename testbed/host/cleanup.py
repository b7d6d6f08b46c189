"""What dead testbed runs left behind: find it, remove it.

A run (testbed.host.runstate) names its namespaces `tb-<id>-*`, keeps its state in
/run/testbed/<id>/ and tags the processes it starts with TESTBED_RUN=<id>.
Whether a run is alive is runstate.alive's to say (its owner process: pid and
start time). The command line calls `sweep()` before every command; `testbed
cleanup` calls it on demand. `leftovers()` lists what the testbed may have
left on the host without changing anything (`testbed cleanup --check`, the
tests); what belongs to a live run is in use, not left over, and not listed.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

from testbed.host import netns, proc, runstate, safefs

NS_RE = re.compile(rf"^{re.escape(runstate.PREFIX)}(\d+)-")


@dataclass
class Swept:
    namespaces: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    state_dirs: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.namespaces or self.processes or self.state_dirs)


def tagged_processes(run_ids: set[str]) -> list[int]:
    """Processes whose environment carries TESTBED_RUN=<one of run_ids>."""
    wanted = {f"TESTBED_RUN={r}".encode() for r in run_ids}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted.intersection(env):
            found.append(int(entry.name))
    return found


def _stat(pid: str) -> tuple[int, int] | None:
    """(ppid, real uid) of a process, or None if it is gone."""
    try:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        uid_line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines()
                        if x.startswith("Uid:"))
    except (OSError, StopIteration, ValueError):
        return None
    return ppid, int(uid_line.split()[1])


def _tag(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((e[12:].decode() for e in env if e.startswith(b"TESTBED_RUN=")), None)


def orphaned_user_processes() -> list[int]:
    """Processes of the testbed user that no live run owns and nobody else waits for.

    A process is owned if its TESTBED_RUN tag names a live run, or if one of
    its ancestors is a live run's owner. The tag alone is not enough: nginx
    and Chromium overwrite their environment with their process titles.
    What a dead run left was started by its owner and, once the owner is gone,
    hangs from init: a testbed-user process whose topmost testbed-user
    ancestor has a live parent other than init (a shell, `runuser`, another
    user's program) belongs to whoever started it, not to a dead run, and is
    left alone.
    """
    try:
        uid = pwd.getpwnam(runstate.USER).pw_uid
    except KeyError:
        return []
    table = {int(p): st for p in os.listdir("/proc") if p.isdigit() and (st := _stat(p))}
    run_ids = {m.group(1) for n in netns.list_names() if (m := NS_RE.match(n))}
    if runstate.STATE_ROOT.is_dir():
        run_ids |= {d.name for d in runstate.STATE_ROOT.iterdir() if d.name.isdigit()}
    live_owners = {int(r) for r in run_ids if runstate.alive(r)}
    orphans = []
    for pid, (ppid, puid) in table.items():
        if puid != uid:
            continue
        tag = _tag(pid)
        if tag and tag.isdigit() and int(tag) in live_owners:
            continue
        ancestor, owned = ppid, False
        for _ in range(64):
            if ancestor in live_owners:
                owned = True
                break
            if ancestor <= 1 or ancestor not in table:
                break
            ancestor = table[ancestor][0]
        if not owned and _hangs_from_init(pid, table, uid):
            orphans.append(pid)
    return orphans


def _hangs_from_init(pid: int, table: dict[int, tuple[int, int]], uid: int) -> bool:
    """Whether the topmost testbed-user ancestor of pid has init (or no one) as parent."""
    for _ in range(64):
        ppid = table[pid][0]
        if ppid <= 1 or ppid not in table:
            return True
        if table[ppid][1] != uid:
            return False
        pid = ppid
    return True


def _lineage() -> set[int]:
    """This process and its ancestors (never killed by a sweep, whoever they run as)."""
    mine, pid = set(), os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        st = _stat(str(pid))
        if st is None:
            break
        pid = st[0]
    return mine


def _kill(pids: list[int], spare: set[int], swept: Swept) -> None:
    """SIGKILL each of pids not in spare; those that were still there go into swept."""
    for pid in pids:
        if pid in spare:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            swept.processes.append(pid)
        except ProcessLookupError:
            pass


def _dead_runs() -> set[str]:
    """Ids of the runs, other than this one, with a state folder or a namespace and not alive."""
    dead: set[str] = set()
    if runstate.STATE_ROOT.is_dir():
        dead |= {d.name for d in runstate.STATE_ROOT.iterdir() if not runstate.alive(d.name)}
    for name in netns.list_names():
        m = NS_RE.match(name)
        if m and not runstate.alive(m.group(1)):
            dead.add(m.group(1))
    dead.discard(str(os.getpid()))
    return dead


def sweep() -> Swept:
    """Remove namespaces, processes and state of every dead run."""
    swept = Swept()
    mine = _lineage()
    dead = _dead_runs()
    _kill(orphaned_user_processes(), mine, swept)
    if not dead:
        return swept
    _kill(tagged_processes(dead), mine, swept)
    for name in netns.list_names():
        m = NS_RE.match(name)
        if m and m.group(1) in dead:
            netns.delete(name)
            swept.namespaces.append(name)
    for run_id in sorted(dead):
        d = runstate.STATE_ROOT / run_id
        if d.is_dir() and not d.is_symlink():
            safefs.rmtree(d)  # trees the testbed user wrote in: never follows a symlink
        elif d.is_symlink() or d.exists():
            d.unlink()  # a stray file or link: unlink removes the entry, never its target
        else:
            continue
        swept.state_dirs.append(str(d))
    return swept


def _namespaces() -> list[str]:
    """Namespaces named like the testbed's (`tb-`) that no live run owns. One named
    `tb-` without a run id is no run's, so the sweep leaves it: the line says so."""
    found = []
    for n in netns.list_names():
        m = NS_RE.match(n)
        if not n.startswith(runstate.PREFIX):
            continue
        if not m:
            found.append(f"{n} (no run's: `testbed cleanup` leaves it; `ip netns delete {n}`)")
        elif not runstate.alive(m.group(1)):
            found.append(n)
    return found


def _user_processes() -> list[str]:
    """Processes of the testbed user that no live run owns: pid and command line."""
    found = []
    for pid in orphaned_user_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{pid} {cmd.strip()[:80]}")
    return found


def _host_nat_rules() -> list[str]:
    """NAT rules in the host's namespace that mention Mahimahi's 100.64.0.0/10."""
    out = proc.run(["iptables", "-t", "nat", "-S"], check=False).stdout
    return [line for line in out.splitlines() if "100.64." in line]


def _host_interfaces() -> list[str]:
    out = proc.output(["ip", "-o", "link", "show"])
    return [line.split(":")[1].strip() for line in out.splitlines()
            if line.split(":")[1].strip().startswith("tb")]


def _state_dirs(exclude: str | None = None) -> list[str]:
    """Entries of the state root whose run is not alive (exclude: this run's id)."""
    if not runstate.STATE_ROOT.is_dir():
        return []
    return [str(d) for d in runstate.STATE_ROOT.iterdir()
            if d.name != exclude and not runstate.alive(d.name)]


def leftovers(exclude_run: str | None = None) -> list[str]:
    """Every leftover, one line each; empty when the host is clean. Changes nothing."""
    items = [f"namespace {n}" for n in _namespaces()]
    items += [f"process {p}" for p in _user_processes()]
    items += [f"host NAT rule {r} (`testbed cleanup` leaves host rules: "
              f"`iptables -t nat {r.replace('-A ', '-D ', 1)}`)" for r in _host_nat_rules()]
    items += [f"interface {i}" for i in _host_interfaces()]
    items += [f"state {d}" for d in _state_dirs(exclude_run)]
    return items
