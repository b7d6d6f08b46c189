"""How busy the machine was while a page loaded, and waiting for it to be quiet.

    probe = Probe(servers=lambda: [pid, ...], limit=0.5)
    waited = probe.quiet()            # before go: bounded wait until CPU busy <= limit
    mark = probe.start(browser_pid)   # right before go-N (or measure-N of a warm visit)
    load = probe.end(mark, waited)    # right after done-N: the trial's Load

On a 2-core machine user-space QUIC (h3server) may lose to kernel TCP for want
of CPU, so every trial records, over its load window:

- the whole machine's CPU busy and steal fractions, from the deltas of
  /proc/stat's aggregate `cpu` line (busy: user, nice, system, irq, softirq;
  steal apart; iowait counts as idle);
- the CPU time (user + system) of the browser's process tree (the process the
  launcher announced in launch-N and its descendants) and of the replay servers'
  trees (nginx + uWSGI, or h3server), from psutil (/proc/<pid>/stat). The testbed
  puts neither in a cgroup of its own, so the trees are summed: each process's own
  time plus that of its children it has reaped, so a child that ended during the
  load is counted through its parent. A tree whose first process ended during the
  load (a browser crash) is unknown (None). The kernel reports these times in clock
  ticks (USER_HZ, 10 ms): nginx and uWSGI serving a small page may read 0;
- the 1-minute load average at the load's end.

The functions over data (cpu_fractions, wait_quiet) are pure and take their
clock and readers as arguments; Probe wires them to the real ones.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil

STAT = "/proc/stat"
WINDOW_S = 1.0
"""The window the quiet check measures CPU busy over ("the last second")."""
MAX_WAIT_S = 60.0
"""Longest a trial waits for the machine to get below the campaign's
max_load_before_start; then it is measured anyway, with load_over_limit = 1 (a
machine busy for a minute is busy for the campaign: failing the trial would retry it
into the same load, and a campaign would never end on a loaded machine)."""


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate `cpu` line of /proc/stat, in clock ticks since boot."""

    busy: int
    """user + nice + system + irq + softirq (guest time is already in user and nice)."""
    steal: int
    """Time the hypervisor ran something else while this machine wanted the CPU."""
    total: int
    """busy + idle + iowait + steal."""


def parse_stat(text: str) -> CpuTimes:
    """The aggregate `cpu` line of a /proc/stat text (ValueError if it has none)."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            v = [int(x) for x in fields[1:]] + [0] * 8  # older kernels: fewer fields
            user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
            busy = user + nice + system + irq + softirq
            return CpuTimes(busy=busy, steal=steal, total=busy + idle + iowait + steal)
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def read_stat(path: str = STAT) -> CpuTimes:
    with open(path, encoding="ascii") as f:
        return parse_stat(f.read())


def cpu_fractions(before: CpuTimes, after: CpuTimes) -> tuple[float | None, float | None]:
    """(busy, steal): shares of the whole machine's CPU time between the two readings,
    each 0..1; (None, None) when no tick passed."""
    total = after.total - before.total
    if total <= 0:
        return None, None
    def share(x: int) -> float:
        return round(min(max(x / total, 0.0), 1.0), 4)
    return share(after.busy - before.busy), share(after.steal - before.steal)


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) of process `pid` and its descendants, each with the
    time of its children it has reaped; None when `pid` is gone."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            if p is root:
                return None
            continue  # ended between the listing and its reading: its parent has it
        total += t.user + t.system + t.children_user + t.children_system
    return total


def trees_cpu_s(pids: Iterable[int]) -> float | None:
    """The sum of tree_cpu_s over `pids` (None if any is gone, or none is given)."""
    times = [tree_cpu_s(p) for p in pids]
    if not times or any(t is None for t in times):
        return None
    return sum(t for t in times if t is not None)


@dataclass(frozen=True)
class Waited:
    """What the quiet check before a load found."""

    wait_s: float
    """Seconds spent waiting (at least one window: the check measures it)."""
    over_limit: bool
    """The machine was still busier than the limit after MAX_WAIT_S."""


def wait_quiet(limit: float, busy_over: Callable[[float], float | None],
               clock: Callable[[], float], max_wait_s: float = MAX_WAIT_S,
               window_s: float = WINDOW_S) -> Waited:
    """Measure CPU busy over `window_s` windows (busy_over blocks that long) until one
    is at most `limit` or `max_wait_s` has passed since the start."""
    t0 = clock()
    while True:
        busy = busy_over(window_s)
        waited = round(clock() - t0, 3)
        if busy is None or busy <= limit:
            return Waited(waited, False)
        if waited >= max_wait_s:
            return Waited(waited, True)


@dataclass(frozen=True)
class Mark:
    """The readings at a load's start."""

    stat: CpuTimes
    browser_pid: int | None
    browser_s: float | None
    server_pids: tuple[int, ...]
    server_s: float | None


@dataclass(frozen=True)
class Load:
    """How busy the machine was during one page load (the trial's columns)."""

    cpu_busy: float | None
    """Share of the whole machine's CPU time busy (0..1)."""
    cpu_steal: float | None
    """Share of it stolen by the hypervisor (0..1)."""
    browser_cpu_s: float | None
    """CPU seconds of the browser's process tree."""
    server_cpu_s: float | None
    """CPU seconds of the replay servers' process trees."""
    loadavg_1m: float | None
    """The 1-minute load average at the load's end."""
    load_wait_s: float | None = None
    """Seconds waited for a quiet machine before the load (None: no limit)."""
    load_over_limit: bool | None = None
    """Still busier than the limit when the load started (None: no limit)."""


def _delta(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or after < before:  # a process left the tree
        return None
    return round(after - before, 3)


class Probe:
    """Readings of the machine around each load of a block (see the module)."""

    def __init__(self, servers: Callable[[], Iterable[int]], limit: float | None = None, *,
                 stat: Callable[[], CpuTimes] = read_stat,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 max_wait_s: float = MAX_WAIT_S):
        self.servers = servers
        """The replay servers' first pids now (their trees are summed)."""
        self.limit = limit
        self.stat = stat
        self.clock = clock
        self.sleep = sleep
        self.max_wait_s = max_wait_s

    def busy_over(self, window_s: float) -> float | None:
        a = self.stat()
        self.sleep(window_s)
        return cpu_fractions(a, self.stat())[0]

    def quiet(self) -> Waited | None:
        """Wait (bounded) until the machine is at most `limit` busy; None: no limit."""
        if self.limit is None:
            return None
        return wait_quiet(self.limit, self.busy_over, self.clock, self.max_wait_s)

    def start(self, browser_pid: int | None) -> Mark:
        pids = tuple(self.servers())
        return Mark(stat=self.stat(), browser_pid=browser_pid,
                    browser_s=tree_cpu_s(browser_pid) if browser_pid else None,
                    server_pids=pids, server_s=trees_cpu_s(pids))

    def end(self, mark: Mark, waited: Waited | None = None) -> Load:
        stat = self.stat()
        browser = tree_cpu_s(mark.browser_pid) if mark.browser_pid else None
        servers = trees_cpu_s(mark.server_pids)
        busy, steal = cpu_fractions(mark.stat, stat)
        return Load(cpu_busy=busy, cpu_steal=steal,
                    browser_cpu_s=_delta(mark.browser_s, browser),
                    server_cpu_s=_delta(mark.server_s, servers),
                    loadavg_1m=round(os.getloadavg()[0], 2),
                    load_wait_s=waited.wait_s if waited is not None else None,
                    load_over_limit=waited.over_limit if waited is not None else None)
