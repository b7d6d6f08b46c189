"""A replay environment: the topology, the certificate and one server stack, up
for the length of a `with` block.

    with ReplayEnv("recordings/example", stack="quic") as env:
        argv = enter.as_user(["chromium", *env.chromium_flags(), ...],
                             netns=env.client_netns)
        before = env.summary(); ...load the page...; after = env.summary()

TCP stack: uWSGI (testbed.replay.app) behind nginx (TLS 1.3, HTTP/2) on 443
and 80 of every recorded IP. QUIC stack: h3server on UDP 443 of every
recorded IP. Servers run as the testbed user in the server namespace; the
block starts only when every listener answers a handshake from the client
namespace.

Files (see testbed.host.safefs): the replay's folder is root's (0750, group
testbed) and holds what root writes: nginx.conf, the leaf certificate (key
0640, group testbed) and the servers' logs (opened by root, written through
the inherited descriptor). The servers write only in its `var/` subfolder
(the testbed user's): nginx's pid, error log and temp paths, uWSGI's socket
and the summary, which root reads without following a symlink. The servers read
the recording from a descriptor of its folder that root opened and checked
again, inherited (`/proc/self/fd/N` for h3server), never from its path. On exit (also on an exception or Ctrl-C) the servers are stopped
and the topology, if this object made it, removed; a failing teardown is
reported without hiding the error that ended the block.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from testbed.errors import InputError, TestbedError
from testbed.formats import recording as rec
from testbed.host import enter, firefox, proc, safefs
from testbed.host.chromium import STACK_FLAGS
from testbed.host.paths import QUIC_SERVERS, chown_to_user
from testbed.host.runstate import USER, current
from testbed.host.topology import ReplayTopology
from testbed.replay import app, certs, deterministic, layout, nginx, server_summary
from testbed.replay.matching import normalise_host

log = logging.getLogger(__name__)

STACKS = ("tcp", "quic")

# Topologies with a stack running on them (one stack at a time per topology).
_busy: set[int] = set()


def host_ips(recording: rec.Recording) -> dict[str, str]:
    """Every recorded host name (not an IP) to its recorded IP."""
    ips: dict[str, str] = {}
    for o in recording.origins:
        host = normalise_host(o.host)
        if not layout.is_ip(host):
            ips.setdefault(host, o.ip)
    return ips


def resolver_rules(recording: rec.Recording) -> str:
    """Chromium's --host-resolver-rules: every recorded host to its recorded IP, every
    other name unresolvable (a replay never asks real DNS)."""
    ips = host_ips(recording)
    return ", ".join([*(f"MAP {h} {ip}" for h, ip in sorted(ips.items())), "MAP * ~NOTFOUND"])


def https_origins(recording: rec.Recording) -> list[tuple[str, int]]:
    """The recorded HTTPS origins as (host, port), each once."""
    seen = {(normalise_host(o.host), int(o.port)) for o in recording.origins
            if o.scheme == "https"}
    return sorted(seen)


def stack_flags(stack: str) -> list[str]:
    return list(STACK_FLAGS[stack])


class ReplayEnv:
    """Serve `recording` over `stack` ("tcp" or "quic") inside a replay topology.

    recording: a Recording, a recording name (recordings/NAME) or a folder; one laid
    out by testbed.replay.layout.apply is served in its layout (addresses as it has
    them, a certificate per host for `split`).
    h3server_args: extra h3server options (--cc, --pacing, ...), QUIC only.
    nginx_env: extra environment for nginx (e.g. a pacing LD_PRELOAD), TCP only.
    session_tickets, early_data: nginx issues TLS session tickets and accepts early
    data (TCP only; h3server takes --early-data in h3server_args).
    topology: an entered ReplayTopology to use (kept on exit); default: one made
    for the recording's IPs and removed on exit.
    deterministic_scripts: every HTML response runs testbed.replay.deterministic's script
    first (Math.random seeded, Date from the recording's time); both stacks serve the
    same rewritten copy of the recording, made in the replay's folder.
    """

    _keep_dir = False

    def __init__(self, recording: rec.Recording | str | os.PathLike[str], stack: str = "tcp", *,
                 h3server_args: Sequence[str] = (), nginx_env: dict[str, str] | None = None,
                 topology: ReplayTopology | None = None, startup_timeout: float = 30.0,
                 session_tickets: bool = False, early_data: bool = False,
                 quic_server: str = "h3server", deterministic_scripts: bool = True):
        if stack not in STACKS:
            raise InputError(f"stack {stack!r}: expected one of {', '.join(STACKS)}")
        self.recording = recording if isinstance(recording, rec.Recording) else rec.load(
            recording)
        self.stack = stack
        if quic_server not in QUIC_SERVERS:
            raise InputError(f"quic_server {quic_server!r}: expected one of "
                             f"{', '.join(QUIC_SERVERS)}")
        self.quic_server = quic_server
        """The HTTP/3 server (stack quic): h3server (quiche) or h3quinn (quinn)."""
        self.h3server_args = tuple(str(a) for a in h3server_args)
        self.nginx_env = dict(nginx_env or {})
        self.session_tickets = session_tickets
        self.early_data = early_data
        self.topology = topology
        self.startup_timeout = startup_timeout
        self.deterministic_scripts = deterministic_scripts
        self.served: rec.Recording = self.recording
        """What the servers serve: the recording, or its copy with the script in."""
        self.deterministic: deterministic.Report | None = None
        """What the script pinned and where it went (deterministic_scripts), once started."""
        self.dir: Path | None = None
        self.var: Path | None = None
        """The servers' own folder (the testbed user writes there, root only reads)."""
        self.leaf: certs.Leaf | None = None
        """The (first) certificate; all of a replay's have one key, so one SPKI."""
        self.leaves: list[tuple[certs.Leaf, tuple[str, ...]]] = []
        """Each certificate and the addresses it is served on (testbed.replay.layout)."""
        self.listens = nginx.listeners(self.recording, stack)
        self.servers: dict[str, proc.Background] = {}
        self.startup_seconds: float | None = None
        self._exits = ExitStack()

    # --- what a client needs -------------------------------------------------------
    @property
    def client_netns(self) -> str:
        return self._topo().client.name

    @property
    def server_netns(self) -> str:
        return self._topo().server.name

    @property
    def spki(self) -> str:
        if self.leaf is None:
            raise TestbedError("ReplayEnv not started")
        return self.leaf.spki

    @property
    def host_resolver_rules(self) -> str:
        return resolver_rules(self.recording)

    @property
    def summary_path(self) -> Path:
        """The (first) server's summary; `summary()` reads them all."""
        return self.summary_paths[0]

    @property
    def summary_paths(self) -> list[Path]:
        """Each server's summary: one, or (QUIC, a layout of several certificates) one
        per QUIC server."""
        if self.var is None:
            raise TestbedError("ReplayEnv not started")
        n = len(self.leaves) if self.stack == "quic" else 1
        return [self.var / ("summary.json" if i == 0 else f"summary-{i}.json")
                for i in range(max(n, 1))]

    def chromium_flags(self) -> list[str]:
        """The flags that point Chromium at this replay over this stack."""
        return [*stack_flags(self.stack),
                f"--ignore-certificate-errors-spki-list={self.spki}",
                f"--host-resolver-rules={self.host_resolver_rules}"]

    def firefox_launch(self) -> dict:
        """What the Firefox launcher (testbed/measure/firefox_launcher.py) puts into a
        trial's fresh profile for this replay over this stack: the preferences and the
        certificate chain whose leaf it trusts. Names: firefox_binds."""
        if self.leaf is None:
            raise TestbedError("ReplayEnv not started")
        prefs = {**firefox.QUIET_PREFS,
                 **firefox.stack_prefs(self.stack, https_origins(self.recording))}
        return {"prefs": prefs, "trust": str(self.leaf.chain_path)}

    def summary(self) -> dict:
        """The running server's summary (see testbed.replay.server_summary); diff two reads
        around a page load for that load's requests and misses. uWSGI rewrites it
        after every response; h3server at most every 50 ms, so read it ~0.1 s after
        the load's last response."""
        return server_summary.merge([server_summary.read(p) for p in self.summary_paths])

    def check_alive(self) -> None:
        """TestbedError naming the server that died (its first line: a trial's reason),
        with the end of its log."""
        for name, bg in self.servers.items():
            if not bg.alive():
                tail = bg.tail(15)
                code = bg.proc.returncode if bg.proc else None
                killed = (f" ({signal.Signals(-code).name})"
                          if code is not None and code < 0 and -code in signal.valid_signals()
                          else "")
                raise TestbedError(
                    f"replay server {name} ({self.stack} stack) exited with status "
                    f"{'?' if code is None else code}{killed}"
                    + (f"\nits log ends:\n{tail}" if tail else f"; log {bg.log} is empty"))

    # --- lifecycle ---------------------------------------------------------------------
    def _topo(self) -> ReplayTopology:
        if self.topology is None:
            raise TestbedError("ReplayEnv not started")
        return self.topology

    def __enter__(self) -> Self:
        t0 = time.monotonic()
        self._preconditions()
        exits = ExitStack()
        try:
            if self.topology is None:
                self.topology = ReplayTopology(self.recording.ips)
                exits.enter_context(self.topology)
                exits.callback(setattr, self, "topology", None)
            else:
                missing = set(self.recording.ips) - set(self.topology.ips)
                if missing:
                    raise InputError(f"the given topology lacks recorded IPs {sorted(missing)}")
            if id(self.topology) in _busy:
                raise TestbedError("a replay stack already runs on this topology "
                                   "(one stack at a time)")
            _busy.add(id(self.topology))
            exits.callback(_busy.discard, id(self.topology))
            self.dir = self._make_dir()
            exits.callback(self._remove_dir)
            if self.deterministic_scripts:
                self._pin_scripts(exits)
            self._issue_leaves()
            if self.stack == "tcp":
                self._start_tcp(exits)
            else:
                self._start_quic(exits)
            self._wait_ready()
        except BaseException as e:
            self._keep_dir = True  # the servers' logs explain the failure
            _close(exits, e)
            raise
        self._exits = exits
        self.startup_seconds = time.monotonic() - t0
        log.info("replay %s over %s ready in %.2f s", self.recording.name, self.stack,
                 self.startup_seconds)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None and self.dir is not None:
            self._keep_dir = True  # the servers' logs explain the failure
        _close(self._exits, exc)
        self._exits = ExitStack()

    # --- parts -----------------------------------------------------------------------------
    def _preconditions(self) -> None:
        if os.geteuid() != 0:
            raise TestbedError("replay needs root (namespaces); run with sudo")
        needed = ["nginx", "uwsgi"] if self.stack == "tcp" else []
        for tool in needed:
            if shutil.which(tool, path=enter.SAFE_PATH) is None:
                raise TestbedError(f"{tool} not found; run `make setup`")
        binary = QUIC_SERVERS[self.quic_server]
        if self.stack == "quic":  # a build nobody else can change (TESTBED_H3SERVER too)
            safefs.check_root_program(binary)
        if self.stack == "quic" and not os.access(binary, os.X_OK):
            raise TestbedError(f"{binary} missing; build it: `make setup` "
                               f"(or `cargo build --release` in h3server/)")
        manifest = self.recording.path / "manifest.json"
        if proc.run(enter.as_user(["test", "-r", str(manifest)]), check=False).returncode != 0:
            raise InputError(f"{manifest}: the {USER} user cannot read it (the servers run as "
                             f"{USER}); keep recordings in a world-readable folder")

    def _make_dir(self) -> Path:
        """Root's folder for the replay (0750, group testbed), with the servers' var/."""
        d = Path(tempfile.mkdtemp(prefix=f"replay-{self.stack}-", dir=current().dir))
        chown_to_user(d, group_only=True)
        os.chmod(d, 0o750)
        safefs.check_root_dir(d)
        self.var = safefs.user_dir(d / "var", *(["tmp"] if self.stack == "tcp" else []),
                                   mode=0o750)
        return d

    def _remove_dir(self) -> None:
        if self.dir is not None and not self._keep_dir:
            safefs.rmtree(self.dir)
        elif self.dir is not None:
            log.warning("replay files (server logs) kept in %s until the run ends", self.dir)

    def _server(self, exits: ExitStack, name: str, argv: list[str],
                env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> None:
        assert self.dir is not None  # made on entry
        bg = proc.Background(enter.as_user(argv, netns=self.server_netns, env=env,
                                           cwd=str(self.var)),
                             log=self.dir / f"{name}.log", pass_fds=pass_fds)
        exits.enter_context(bg)
        self.servers[name] = bg
        exits.callback(self.servers.pop, name, None)

    def _pin_scripts(self, exits: ExitStack) -> None:
        """The copy of the recording the servers serve, its HTML running the script."""
        assert self.dir is not None  # made on entry
        with ExitStack() as reading:  # the recording as checked, as a server would read it
            fd = self._checked_folder(reading, self.recording)
            self.served, self.deterministic = deterministic.served_recording(
                self.recording, self.dir / "served", deterministic.pin_for(self.recording), fd)
        exits.callback(setattr, self, "served", self.recording)

    def _checked_folder(self, exits: ExitStack,
                        recording: rec.Recording | None = None) -> int:
        """The recording folder, opened once and checked again through that descriptor,
        which the servers inherit and read from (never the path, which its owner may
        point elsewhere meanwhile): InputError if it no longer holds what was loaded."""
        recording = recording or self.served
        path = recording.path
        fd = exits.enter_context(rec.open_folder(path))
        if rec.load_folder(fd, path).content_sha256 != recording.content_sha256:
            raise InputError(f"{path / 'manifest.json'}: changed since it was loaded "
                             "(expected the recording as checked)")
        return fd

    def _issue_leaves(self) -> None:
        """A leaf per certificate of the recording's layout, all with one key."""
        assert self.dir is not None  # made on entry
        key = certs.new_key()
        wanted = layout.certificates(self.recording)
        self.leaves = [(certs.issue_leaf(names, self.dir, group=True, key=key,
                                         stem="leaf" if i == 0 else f"leaf-{i}"), ips)
                       for i, (names, ips) in enumerate(wanted)]
        self.leaf = self.leaves[0][0]

    def _start_tcp(self, exits: ExitStack) -> None:
        assert self.dir is not None and self.var is not None and self.leaf is not None  # entered
        sock = self.var / "uwsgi.sock"
        conf = nginx.NginxConfig(
            prefix=self.var, cert=self.leaf.chain_path, key=self.leaf.key_path, socket=sock,
            listens=tuple(self.listens),
            largest_body=max((x.body_size for x in self.served.exchanges), default=0),
            session_tickets=self.session_tickets, early_data=self.early_data,
            servers=tuple(nginx.Server(leaf.chain_path, leaf.key_path,
                                       tuple(x for x in self.listens if x.ip in ips))
                          for leaf, ips in self.leaves) if len(self.leaves) > 1 else ())
        conf_path = safefs.write_file(self.dir / "nginx.conf", nginx.render(conf))
        fd = self._checked_folder(exits)
        self._server(exits, "uwsgi", nginx.uwsgi_argv(socket=sock),
                     env={app.RECORDING_FD: str(fd), app.RECORDING: str(self.served.path),
                          app.SUMMARY: str(self.summary_path)}, pass_fds=(fd,))
        self._server(exits, "nginx", nginx.nginx_argv(self.var, conf_path), env=self.nginx_env)

    def _start_quic(self, exits: ExitStack) -> None:
        """One QUIC server per certificate (h3server and h3quinn serve one each): one
        for the `recorded` layout, one per host for `split`."""
        assert self.leaves  # made on entry
        fd = self._checked_folder(exits)
        # Root's RUST_LOG only: an SSLKEYLOGFILE of root's would have the server append
        # every session's secrets there (a trial's keys: testbed.measure.captures).
        env = {"RUST_LOG": os.environ["RUST_LOG"]} if "RUST_LOG" in os.environ else {}
        many = len(self.leaves) > 1
        for i, ((leaf, ips), summary) in enumerate(zip(self.leaves, self.summary_paths,
                                                       strict=True)):
            argv = [str(QUIC_SERVERS[self.quic_server]), "--recording", f"/proc/self/fd/{fd}"]
            for lst in self.listens:
                if lst.ip in ips:
                    argv += ["--listen", f"{lst.ip}:{lst.port}"]
            argv += ["--cert", str(leaf.chain_path), "--key", str(leaf.key_path),
                     "--summary", str(summary), *self.h3server_args]
            name = f"{self.quic_server}-{i}" if many else self.quic_server
            self._server(exits, name, argv, env=env, pass_fds=(fd,))

    def _probe_targets(self) -> list[str]:
        sni: dict[str, str] = {}
        for o in self.recording.origins:
            sni.setdefault(o.ip, o.host)
        kind = {True: "quic" if self.stack == "quic" else "tls", False: "tcp"}
        return [f"{kind[lst.tls]}:{lst.ip}:{lst.port}" + (f":{sni[lst.ip]}" if lst.tls else "")
                for lst in self.listens]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        if self.stack == "tcp":
            # The app writes its summary once the recording is in memory.
            while not self.summary_path.exists():
                self.check_alive()
                if time.monotonic() > deadline:
                    raise TestbedError(f"uWSGI did not load the recording within "
                                       f"{self.startup_timeout:.0f} s; see {self.dir}/uwsgi.log")
                time.sleep(0.02)
        left = max(1.0, deadline - time.monotonic())
        cp = proc.run(self._topo().client.exec(
            proc.python("-m", "testbed.replay.readiness", "--timeout", f"{left:.1f}",
                        *self._probe_targets())), check=False, timeout=left + 30)
        self.check_alive()
        if cp.returncode != 0:
            raise TestbedError(f"replay servers ({self.stack}) not ready: {cp.stderr.strip()}")


def _close(exits: ExitStack, original: BaseException | None) -> None:
    """Run the teardown; if it fails while `original` propagates, log it instead of
    letting it replace the original error."""
    try:
        exits.close()
    except BaseException as e:
        if original is None:
            raise
        log.error("replay teardown failed too (after %s): %s", type(original).__name__, e)
