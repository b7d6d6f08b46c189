"""Run identity: everything a testbed process creates is named after its run.

A run is one testbed process. Its id is its pid; namespaces are named
`tb-<id>-<purpose>`, its state lives in /run/testbed/<id>/ (with the pid and
start time of the owner, so a reused pid is not mistaken for a live run), and
every process it starts as the testbed user carries TESTBED_RUN=<id> in its
environment. `testbed.host.cleanup` removes what a run whose owner is gone left.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from testbed.host import safefs
from testbed.host.paths import IPTABLES_SHIM, USER

__all__ = [
    "PREFIX",
    "STATE_ROOT",
    "USER",
    "Run",
    "alive",
    "current",
    "owner_alive",
    "release",
    "start_time",
]

STATE_ROOT = Path(os.environ.get("TESTBED_STATE_DIR", "/run/testbed"))
PREFIX = "tb-"


def start_time(pid: int) -> str | None:
    """The kernel's start time of pid (clock ticks since boot), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True)
class Run:
    id: str
    dir: Path

    def name(self, purpose: str) -> str:
        """A namespace or resource name tagged with this run."""
        return f"{PREFIX}{self.id}-{purpose}"

    def path(self, *parts: str) -> Path:
        p = self.dir.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    @property
    def alternatives(self) -> Path:
        """A copy of /etc/alternatives in which iptables is the Mahimahi shim.

        Bind-mounted over /etc/alternatives only inside the mount namespaces of
        processes started by testbed.host.enter (see setup/mm-iptables-shim.c).
        """
        alt = self.dir / "alternatives"
        if not alt.exists():
            tmp = self.dir / "alternatives.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for entry in os.scandir("/etc/alternatives"):
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), tmp / entry.name)
            shim = IPTABLES_SHIM
            if (tmp / "iptables").exists() or (tmp / "iptables").is_symlink():
                (tmp / "iptables").unlink()
            os.symlink(shim, tmp / "iptables")
            tmp.rename(alt)
        return alt


def owner_alive(run_dir: Path) -> bool:
    """Whether the process named in run_dir/owner (pid and start time) still runs."""
    try:
        pid, started = (run_dir / "owner").read_text().split()
    except (FileNotFoundError, ValueError):
        return False
    return start_time(int(pid)) == started


def alive(run_id: str) -> bool:
    """Whether run `run_id` is alive: the one rule for the sweep, `cleanup --check` and tests.

    With an owner file in its state folder, while that owner runs (a reused pid
    is not mistaken for it). Without one, while a process with pid `run_id`
    exists: `current()` makes the folder before it writes the owner file, and a
    run whose state lives under another TESTBED_STATE_DIR has no folder here at
    all, yet its namespaces are named after it; neither may be taken for dead.
    """
    run_dir = STATE_ROOT / run_id
    if (run_dir / "owner").exists():
        return owner_alive(run_dir)
    return run_id.isdigit() and start_time(int(run_id)) is not None


@cache
def current() -> Run:
    """This process's run; created on first use."""
    pid = os.getpid()
    d = STATE_ROOT / str(pid)
    _state_root()
    if d.exists() and not owner_alive(d):
        safefs.rmtree(d)
    safefs.root_dir(d, exist_ok=True)
    safefs.write_file(d / "owner", f"{pid} {start_time(pid)}\n")
    return Run(id=str(pid), dir=d)


def _state_root() -> None:
    """STATE_ROOT exists, root's alone (0755): every run folder is made in it."""
    STATE_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = os.lstat(STATE_ROOT)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        os.chmod(STATE_ROOT, 0o755)
    safefs.check_root_dir(STATE_ROOT)


def release() -> None:
    """Remove this run's state folder (its namespaces are removed by their owners)."""
    if current.cache_info().currsize:
        safefs.rmtree(current().dir)
        current.cache_clear()
