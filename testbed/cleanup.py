"""Remove what a dead testbed run left behind.

A run (testbed.runstate) names its namespaces `tb-<id>-*`, keeps its state in
/run/testbed/<id>/ and tags the processes it starts with TESTBED_RUN=<id>.
A run is dead when its owner process is gone (pid and start time no longer
match). The command line calls `sweep()` before every command; `testbed
cleanup` calls it on demand.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

import click

from testbed import netns, runstate

NS_RE = re.compile(rf"^{re.escape(runstate.PREFIX)}(\d+)-")


@dataclass
class Swept:
    namespaces: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    state_dirs: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.namespaces or self.processes or self.state_dirs)


def _alive(run_id: str) -> bool:
    return runstate.owner_alive(runstate.STATE_ROOT / run_id)


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


def sweep() -> Swept:
    """Remove namespaces, processes and state of every dead run."""
    swept = Swept()
    dead: set[str] = set()
    if runstate.STATE_ROOT.is_dir():
        dead |= {d.name for d in runstate.STATE_ROOT.iterdir() if d.is_dir() and not _alive(d.name)}
    for name in netns.list_names():
        m = NS_RE.match(name)
        if m and not _alive(m.group(1)):
            dead.add(m.group(1))
    dead.discard(str(os.getpid()))
    if not dead:
        return swept
    for pid in tagged_processes(dead):
        try:
            os.kill(pid, signal.SIGKILL)
            swept.processes.append(pid)
        except ProcessLookupError:
            pass
    for name in netns.list_names():
        m = NS_RE.match(name)
        if m and m.group(1) in dead:
            netns.delete(name)
            swept.namespaces.append(name)
    for run_id in sorted(dead):
        d = runstate.STATE_ROOT / run_id
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            swept.state_dirs.append(str(d))
    return swept


@click.command("cleanup")
@click.option("--check", is_flag=True, help="Only list leftovers; exit 1 if there are any.")
def cleanup_command(check: bool) -> None:
    """Remove namespaces, processes and files left by testbed runs that died."""
    if check:
        from testbed import leftovers

        found = leftovers.find(exclude_run=str(os.getpid()))
        for item in found:
            click.echo(item)
        if found:
            raise SystemExit(1)
        click.echo("no leftovers")
        return
    swept = sweep()
    if not swept:
        click.echo("nothing to clean")
        return
    click.echo(f"removed {len(swept.namespaces)} namespaces, killed {len(swept.processes)} processes, "
               f"removed {len(swept.state_dirs)} state folders")
    for name in swept.namespaces:
        click.echo(f"  namespace {name}")
