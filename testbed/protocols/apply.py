"""What a protocol setting does to the servers, the server namespace and Chromium.

    opts = server_options("tcp-plus")            # a name or a ProtocolProfile
    with applied(opts, topology) as change:      # server namespace: sysctls, route, qdisc
        with replay_env(recording, change, topology) as env: ...  # the setting's servers
    # here the server namespace is as it was before, read back (or TestbedError)
    chromium flags: opts.chromium_flags

A setting is one frozen ServerOptions; applying it is the context manager
applied(): it takes a snapshot of what it may change (testbed.protocols.netstate:
the managed sysctls, `ip route show` and `tc qdisc show` of the server
namespace) before changing anything, and on exit puts that back and reads it
back; a restore that fails raises TestbedError naming what could not be put back.

TCP (nginx): everything lives in the replay topology's server namespace:
- net.ipv4.tcp_congestion_control, always set explicitly: a new namespace
  inherits the host's default (BBR on this machine), so an unset baseline
  would silently be TCP+BBR;
- the initial window: initcwnd and initrwnd on the route to the client;
- net.ipv4.tcp_slow_start_after_idle, net.ipv4.tcp_rmem / tcp_wmem (a key a
  setting leaves out keeps the value it had when the setting was applied: the
  namespace's own, since every setting before it was undone);
- pacing: the fq qdisc on the server's veth where the kernel has fq;
  otherwise Linux's internal pacing, which a socket uses when its
  SO_MAX_PACING_RATE is set to anything but ~0: nginx is started with
  LD_PRELOAD=.tools/lib/tcp-pacing-preload.so (setup/tcp-pacing-preload.c),
  which sets it on every TCP socket nginx listens on or accepts.
- the TCP metrics cache of the namespace is flushed, so no connection starts
  from what an earlier one learned.
- TLS session tickets and early data: nginx's configuration (ReplayEnv).
QUIC (h3server): --cc, --initial-cwnd-packets, --pacing, --max-udp-payload, --gso,
--max-ack-delay-ms, --ack-delay-exponent, --early-data.
Chromium: --disable-quic, or --enable-quic --origin-to-force-quic-on=* (and
--quic-connection-options=TAG,... when a QUIC setting names some).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

from testbed.errors import InputError, TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import ProtocolProfile, load_protocol
from testbed.host import proc
from testbed.host.chromium import STACK_FLAGS
from testbed.host.paths import PACING_PRELOAD
from testbed.host.topology import CLIENT_LINK_IP, ReplayTopology, client_route_argv
from testbed.protocols import netstate
from testbed.replay.env import ReplayEnv

MANAGED_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_slow_start_after_idle",
                   "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
PROFILE_KEYS = {"net.ipv4.tcp_congestion_control": "congestion_control",
                "net.ipv4.tcp_slow_start_after_idle": "slow_start_after_idle",
                "net.ipv4.tcp_rmem": "tcp_rmem", "net.ipv4.tcp_wmem": "tcp_wmem"}
"""The protocol profile's key behind each managed sysctl (for messages)."""
ALLOWED_CC = "net.ipv4.tcp_allowed_congestion_control"
FLUSH = "tcp_metrics"
"""The step flushing the namespace's TCP metrics cache (a failure there is no failure)."""
CHROMIUM_FLAGS = STACK_FLAGS  # defined once, with the Chromium driver


def _frozen(mapping: Mapping[str, str | int] | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class ServerOptions:
    """A protocol setting turned into what each part needs (frozen: its mappings are
    read-only views)."""

    setting: ProtocolProfile
    stack: str
    """"tcp" (nginx + uWSGI, HTTP/2) or "quic" (h3server, HTTP/3)."""
    h3server_args: tuple[str, ...] = ()
    """The HTTP/3 server's options (QUIC)."""
    quic_server: str = "h3server"
    """Which HTTP/3 server (QUIC): "h3server" (quiche) or "h3quinn" (quinn)."""
    nginx_env: Mapping[str, str] = field(default_factory=_frozen)
    """Environment for nginx (TCP): LD_PRELOAD of the pacing library when pacing
    without fq."""
    chromium_flags: tuple[str, ...] = ()
    sysctls: Mapping[str, str] = field(default_factory=_frozen)
    """Server-namespace sysctls (TCP); keys of MANAGED_SYSCTLS left out keep the
    namespace's value."""
    route: Mapping[str, int] = field(default_factory=_frozen)
    """Metrics of the server's route to the client (initcwnd, initrwnd)."""
    pacing_method: str = "none"
    """"fq", "internal" (SO_MAX_PACING_RATE via LD_PRELOAD), "quic" (the HTTP/3 server's pacer)
    or "none"."""
    session_tickets: bool = False
    """TCP: nginx issues TLS session tickets (resumption)."""
    early_data: bool = False
    """Early data accepted: nginx's ssl_early_data (TCP), h3server's --early-data (QUIC)."""

    def __post_init__(self):
        for name in ("nginx_env", "sysctls", "route"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "h3server_args", tuple(self.h3server_args))
        object.__setattr__(self, "chromium_flags", tuple(self.chromium_flags))

    @property
    def name(self) -> str:
        return self.setting.name

    @property
    def digest(self) -> str:
        """sha256 of the profile file."""
        return self.setting.digest

    @property
    def source(self) -> str:
        return self.setting.source

    @property
    def server_key(self) -> tuple:
        """Settings with the same key run on the same servers (only the server
        namespace differs)."""
        return (self.stack, self.quic_server, self.h3server_args,
                tuple(sorted(self.nginx_env.items())),
                self.session_tickets, self.early_data)


@dataclass(frozen=True)
class Change:
    """A setting in force in a server namespace (what `applied` yields)."""

    options: ServerOptions
    before: netstate.Snapshot
    """The server namespace before the change: what leaving `applied` puts back."""
    done: Mapping[str, str]
    """What was set, read back: each managed sysctl, "route" (the route to the
    client), "qdisc" (the server link's, where the kernel has fq), "pacing"."""

    @property
    def nginx_env(self) -> dict[str, str]:
        """nginx's environment for the setting (a copy of its own)."""
        return dict(self.options.nginx_env)


def has_fq() -> bool:
    """Whether this kernel has the fq qdisc (CONFIG_NET_SCH_FQ)."""
    return _has_fq()


@cache
def _has_fq() -> bool:
    for path in (Path("/proc/config.gz"),):
        if path.exists():
            import gzip
            text = gzip.decompress(path.read_bytes()).decode(errors="replace")
            if "CONFIG_NET_SCH_FQ=y" in text or "CONFIG_NET_SCH_FQ=m" in text:
                return True
            if "# CONFIG_NET_SCH_FQ is not set" in text:
                return False
    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    return any(Path(f"/lib/modules/{release}").rglob("sch_fq.ko*"))


def server_options(setting: str | Path | ProtocolProfile, fq: bool | None = None,
                   ) -> ServerOptions:
    """The options of a protocol setting (a name from profiles/protocols/, a TOML
    path, or a loaded profile). fq: whether to pace with fq (default: if the
    kernel has it)."""
    p = setting if isinstance(setting, ProtocolProfile) else load_protocol(setting)
    flags = CHROMIUM_FLAGS[p.stack]
    if p.stack == "quic":
        server = p.quic_server or "h3server"
        args = ["--cc", p.congestion_control,
                "--initial-cwnd-packets", str(p.initial_window_packets)]
        if server == "h3server":  # h3quinn always paces (the profile says pacing = true)
            args += ["--pacing", "on" if p.pacing else "off"]
        if p.max_udp_payload is not None:
            args += ["--max-udp-payload", str(p.max_udp_payload)]
        if p.gso is not None:
            args += ["--gso", "on" if p.gso else "off"]
        if p.max_ack_delay_ms is not None:
            args += ["--max-ack-delay-ms", str(p.max_ack_delay_ms)]
        if p.ack_delay_exponent is not None:
            args += ["--ack-delay-exponent", str(p.ack_delay_exponent)]
        if p.client_quic_connection_options:
            flags = (*flags, "--quic-connection-options=" + ",".join(p.client_quic_connection_options))
        if p.early_data:
            args += ["--early-data", "on"]
        return ServerOptions(p, "quic", h3server_args=tuple(args), quic_server=server,
                             chromium_flags=flags,
                             pacing_method="quic" if p.pacing else "none",
                             early_data=p.early_data)
    sysctls = {"net.ipv4.tcp_congestion_control": p.congestion_control,
               "net.ipv4.tcp_slow_start_after_idle": "1" if p.slow_start_after_idle else "0"}
    if p.tcp_rmem:
        sysctls["net.ipv4.tcp_rmem"] = " ".join(map(str, p.tcp_rmem))
    if p.tcp_wmem:
        sysctls["net.ipv4.tcp_wmem"] = " ".join(map(str, p.tcp_wmem))
    route = {"initcwnd": p.initial_window_packets, "initrwnd": p.initial_window_packets}
    use_fq = has_fq() if fq is None else fq
    env: dict[str, str] = {}
    method = "none"
    if p.pacing:
        method = "fq" if use_fq else "internal"
        if method == "internal":
            env["LD_PRELOAD"] = str(PACING_PRELOAD)
    return ServerOptions(p, "tcp", nginx_env=env, chromium_flags=flags, sysctls=sysctls,
                         route=route, pacing_method=method,
                         session_tickets=p.session_tickets, early_data=p.early_data)


@contextmanager
def applied(opts: ServerOptions, topology: ReplayTopology) -> Iterator[Change]:
    """The setting in force in the topology's server namespace while the block runs.

    Before changing anything it takes a snapshot (netstate: the managed sysctls,
    routes, qdiscs); on exit, however the block ends, it puts the snapshot back and
    reads it back: TestbedError naming what could not be restored. Each of the
    three (snapshot, change and read-back, restore) is one `ip netns exec`; the
    restore writes nothing when nothing differs (a QUIC setting's case)."""
    if opts.pacing_method == "internal" and not PACING_PRELOAD.exists():
        raise TestbedError(f"{PACING_PRELOAD} missing: run `make setup` (step pacing)")
    seen = netstate.snapshot(topology, (*MANAGED_SYSCTLS, ALLOWED_CC))
    _check_allowed(opts, seen.sysctl(ALLOWED_CC))
    before = seen.only(MANAGED_SYSCTLS)
    with ExitStack() as exits:
        exits.callback(netstate.restore, topology, before)
        done = _change(opts, topology, before)
        yield Change(opts, before, MappingProxyType(done))


def replay_env(recording: rec.Recording, change: Change, topology: ReplayTopology,
               h3server_args: Sequence[str] = (), *,
               deterministic_scripts: bool = True) -> ReplayEnv:
    """The replay servers of the setting `change` put in force: the one place a setting
    becomes running servers (campaigns, `testbed replay`, `validate protocols|servers`).
    Its stack, the QUIC server it names, its h3server options followed by
    `h3server_args` (a qlog folder), nginx's environment as `applied` made it, and its
    session tickets and 0-RTT on either stack; `deterministic_scripts` as ReplayEnv takes
    it. Enter it after `applied`."""
    opts = change.options
    return ReplayEnv(recording, opts.stack, topology=topology,
                     h3server_args=(*opts.h3server_args, *h3server_args),
                     nginx_env=change.nginx_env, quic_server=opts.quic_server,
                     session_tickets=opts.session_tickets, early_data=opts.early_data,
                     deterministic_scripts=deterministic_scripts)


def _check_allowed(opts: ServerOptions, allowed_text: str) -> None:
    """TestbedError, before any change, if namespaces may not use opts' congestion
    control."""
    if opts.stack == "tcp":
        cc = opts.sysctls["net.ipv4.tcp_congestion_control"]
        allowed = allowed_text.split()
        if cc not in allowed:
            raise TestbedError(
                f"congestion control {cc} is not allowed for namespaces ({' '.join(allowed)}); "
                "run `make setup` (step sysctl) or sysctl -w "
                f"net.ipv4.tcp_allowed_congestion_control='{' '.join(sorted({*allowed, cc}))}'")


def change_steps(opts: ServerOptions, before: netstate.Snapshot, dev: str, fq: bool,
                 ) -> list[netstate.Step]:
    """The commands that put opts in force in a server namespace that reads as
    `before` (dev: the server's link; fq: whether the kernel has fq)."""
    steps: list[netstate.Step] = [(k, ["sysctl", "-q", "-w", f"{k}={opts.sysctls[k]}"])
                                  for k in MANAGED_SYSCTLS if k in opts.sysctls]
    if opts.route:  # QUIC leaves the route to the client as it is
        steps.append(("route", client_route_argv(dev, **opts.route)))
    if fq:
        if opts.pacing_method == "fq":
            steps.append(("qdisc", ["tc", "qdisc", "replace", "dev", dev, "root", "fq"]))
        elif netstate.root_qdisc(before.qdiscs, dev) == "fq":
            steps.append(("qdisc", ["tc", "qdisc", "del", "dev", dev, "root"]))
    # a cache, not a setting: nothing to put back (a kernel without it has nothing cached)
    steps.append((FLUSH, ["ip", "tcp_metrics", "flush", "all"]))
    return steps


def _change(opts: ServerOptions, topology: ReplayTopology, before: netstate.Snapshot,
            ) -> dict[str, str]:
    """Set the server namespace for opts (one `ip netns exec`, read back in it);
    {key: value} of what it set; TestbedError naming what could not be set."""
    dev, fq = topology.server_dev, has_fq()
    failed, now = netstate.change(topology, change_steps(opts, before, dev, fq),
                                  MANAGED_SYSCTLS)
    failed.pop(FLUSH, None)
    if failed:
        detail = "; ".join(f"{what} ({why})" for what, why in failed.items())
        raise TestbedError(f"server namespace {topology.server.name}: could not set "
                           f"{opts.name}: {detail}")
    done = dict(now.sysctls)
    done["route"] = "\n".join(line for line in now.routes.splitlines()
                              if line.split()[:1] == [CLIENT_LINK_IP])
    if fq:
        done["qdisc"] = "\n".join(line for line in now.qdiscs.splitlines()
                                  if f" dev {dev} " in f"{line} ")
    done["pacing"] = opts.pacing_method
    return done


def check_sysctls(settings: Iterable[ServerOptions], ns=None) -> None:
    """Write every TCP setting's sysctls once in a scratch namespace (or `ns`), before
    any trial: InputError naming the profile file and key of a value the kernel
    refuses (a buffer size beyond its range, a congestion control it lacks or
    does not allow namespaces to use)."""
    tcp = [o for o in settings if o.stack == "tcp"]
    if not tcp:
        return
    if ns is None:
        from testbed.host.netns import NetNS

        with NetNS("sysctl-check") as scratch:
            check_sysctls(tcp, scratch)
        return
    allowed = ns.read_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
    for o in tcp:
        for key, value in o.sysctls.items():
            where = f"{o.setting.source}: key {PROFILE_KEYS.get(key, key)}"
            if key == "net.ipv4.tcp_congestion_control" and value not in allowed:
                raise InputError(f"{where}: expected a congestion control this kernel lets "
                                 f"namespaces use ({' '.join(allowed)}), got {value!r}")
            cp = proc.run(ns.exec(["sysctl", "-q", "-w", f"{key}={value}"]), check=False)
            if cp.returncode != 0:
                why = (cp.stderr.strip().splitlines() or ["refused"])[-1].rsplit(": ", 1)[-1]
                raise InputError(f"{where}: the kernel refuses {key} = {value!r} ({why})")
            got = " ".join(ns.read_sysctl(key).split())
            if got != value:
                raise InputError(f"{where}: the kernel set {key} to {got!r} when given "
                                 f"{value!r}")
