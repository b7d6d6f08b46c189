"""The servers of one replay topology, switched between protocol settings.

    servers = Servers(recording, topology)
    env = servers.use(setting)       # servers up, the setting (only it) in force
    ...
    servers.close()                  # servers stopped, the last setting undone

A replay environment (nginx+uWSGI or h3server) is restarted only when the next
setting needs other servers (another stack, other h3server options or nginx
environment) or the health check finds them dead or stopped; the setting in
force in the server namespace is undone (testbed.protocols.applied: put back
and read back) before the next one is applied, so no setting inherits
another's. A setting that could not be undone leaves the servers broken: every
later use() fails with that reason, and the runner builds the site anew.
"""

from __future__ import annotations

import logging
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from testbed.campaign.store import manifest as manifest_mod
from testbed.errors import TestbedError
from testbed.formats import recording as rec
from testbed.host import safefs
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.protocols import ServerOptions, applied, replay_env
from testbed.replay.env import ReplayEnv

log = logging.getLogger(__name__)


def stopped_in_group(pgid: int) -> list[int]:
    """Processes of process group `pgid` that are stopped (SIGSTOP, SIGTSTP) or traced:
    alive to waitpid, but answering nothing."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] in ("T", "t"):
            found.append(int(entry.name))
    return sorted(found)


class Servers:
    """The servers of one topology, switched between settings with as few restarts
    as correctness allows."""

    def __init__(self, recording: rec.Recording, topology: ReplayTopology, *,
                 deterministic_scripts: bool = True):
        self.recording = recording
        self.topology = topology
        self.deterministic_scripts = deterministic_scripts
        """The campaign's `deterministic_scripts` (testbed.replay.deterministic)."""
        self.env: ReplayEnv | None = None
        self.key: tuple | None = None
        self.pristine = manifest_mod.sysctls(topology.server.exec([]))
        self.applied: dict[str, dict[str, Any]] = {}
        """Setting name -> the sysctls it changed, its congestion control and the route
        to the client, as first applied (for the manifest)."""
        self.broken: str | None = None
        """Why the server namespace is no longer as the topology left it (a setting
        that could not be undone), or None."""
        self._setting = ExitStack()
        """Undoes the setting in force."""
        self._servers = ExitStack()
        """The replay servers running now (self.env), stopped when it closes."""
        self.qlog_dir: Path | None = None
        """Where h3server writes a qlog per connection (`<id>.sqlog`), while a campaign
        keeps them (capture "qlog"); None: no qlogs."""

    def problem(self) -> str | None:
        """The health check: why the running servers cannot serve (one line: a server
        exited, or one of its processes is stopped), or None."""
        env = self.env
        if env is None:
            return None
        try:
            env.check_alive()
        except TestbedError as e:
            return str(e).splitlines()[0]
        for name, bg in env.servers.items():
            pids = stopped_in_group(bg.pid)
            if pids:
                return (f"replay server {name} ({env.stack} stack) stopped answering: "
                        f"process {pids[0]} is stopped")
        return None

    def pids(self) -> list[int]:
        """The first process of each running replay server (its tree is the server's)."""
        return [bg.pid for bg in self.env.servers.values()] if self.env is not None else []

    def keep_qlogs(self, on: bool) -> None:
        """From the next start of h3server on, qlogs are written (on) or not. The
        folder is the testbed user's (h3server writes it), made in the run's folder and
        removed by close()."""
        if on and self.qlog_dir is None:
            parent = Path(tempfile.mkdtemp(prefix="qlog-", dir=current().dir))  # root's
            os.chmod(parent, 0o755)  # the testbed user goes through it to its own folder
            self.qlog_dir = safefs.user_dir(parent / "q")
        elif not on and self.qlog_dir is not None:
            self._drop_qlogs()

    def _drop_qlogs(self) -> None:
        folder, self.qlog_dir = self.qlog_dir, None
        if folder is not None:
            safefs.rmtree(folder)  # the testbed user's tree
            folder.parent.rmdir()

    def use(self, setting: ServerOptions) -> ReplayEnv:
        """Servers ready for a trial of `setting` (started again if the health check
        finds them dead); TestbedError if the setting before it could not be undone."""
        if self.env is not None:
            problem = self.problem()
            if problem is not None:
                log.warning("%s; starting the servers again", problem)
            if self.key != (setting.server_key, self.qlog_dir) or problem is not None:
                self._close_env()
        self._undo()
        change = self._setting.enter_context(applied(setting, self.topology))
        if setting.name not in self.applied:
            now = manifest_mod.sysctls(self.topology.server.exec([]))
            self.applied[setting.name] = {
                "changed": {k: v for k, v in now.items() if self.pristine.get(k) != v},
                "net.ipv4.tcp_congestion_control": now.get("net.ipv4.tcp_congestion_control"),
                "route": self.topology.client_route(),
            }
        if self.env is None:
            qlogs = (("--qlog-dir", str(self.qlog_dir))
                     if self.qlog_dir is not None and setting.stack == "quic" else ())
            env = replay_env(self.recording, change, self.topology, qlogs,
                             deterministic_scripts=self.deterministic_scripts)
            self.env = self._servers.enter_context(env)
            self.key = (setting.server_key, self.qlog_dir)
        return self.env

    def _undo(self) -> None:
        """The setting in force undone (once broken, always TestbedError)."""
        if self.broken is None:
            try:
                self._setting.close()
            except TestbedError as e:
                self.broken = str(e)
        if self.broken is not None:
            raise TestbedError(self.broken)

    def _close_env(self) -> None:
        self.env, self.key = None, None
        self._servers.close()

    def close(self) -> None:
        """The servers stopped, then the setting in force undone."""
        try:
            self._close_env()
        finally:
            try:
                self._setting.close()
            finally:
                self._drop_qlogs()
