"""What a protocol setting does to the servers, the server namespace and Chromium.

    opts = server_options("tcp-plus")          # a name or a ProtocolProfile
    opts.apply(topology)                       # server namespace: sysctls, route, qdisc
    with ReplayEnv(recording, opts.stack, h3server_args=opts.h3server_args,
                   nginx_env=opts.nginx_env, topology=topology) as env: ...
    chromium flags: opts.chromium_flags

TCP (nginx): everything lives in the replay topology's server namespace:
- net.ipv4.tcp_congestion_control, always set explicitly: a new namespace
  inherits the host's default (BBR on this machine), so an unset baseline
  would silently be TCP+BBR;
- the initial window: initcwnd and initrwnd on the route to the client;
- net.ipv4.tcp_slow_start_after_idle, net.ipv4.tcp_rmem / tcp_wmem (a key a
  setting leaves out gets the namespace's own starting value back, so
  settings applied one after another on one topology do not leak);
- pacing: the fq qdisc on the server's veth where the kernel has fq;
  otherwise Linux's internal pacing, which a socket uses when its
  SO_MAX_PACING_RATE is set to anything but ~0: nginx is started with
  LD_PRELOAD=.tools/lib/tcp-pacing-preload.so (setup/tcp-pacing-preload.c),
  which sets it on every TCP socket nginx listens on or accepts.
- the TCP metrics cache of the namespace is flushed, so no connection starts
  from what an earlier one learned.
QUIC (h3server): --cc, --initial-cwnd-packets, --pacing, --max-udp-payload.
Chromium: --disable-quic, or --enable-quic --origin-to-force-quic-on=*.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from testbed import proc
from testbed.chromium import STACK_FLAGS
from testbed.errors import InputError, TestbedError
from testbed.paths import PACING_PRELOAD
from testbed.profiles import ProtocolProfile, load_protocol
from testbed.topology import ReplayTopology

MANAGED_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_slow_start_after_idle",
                   "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
PROFILE_KEYS = {"net.ipv4.tcp_congestion_control": "congestion_control",
                "net.ipv4.tcp_slow_start_after_idle": "slow_start_after_idle",
                "net.ipv4.tcp_rmem": "tcp_rmem", "net.ipv4.tcp_wmem": "tcp_wmem"}
"""The protocol profile's key behind each managed sysctl (for messages)."""
CHROMIUM_FLAGS = STACK_FLAGS  # defined once, with the Chromium driver

# Each server namespace's own values of the managed sysctls, read before the first change.
_originals: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class ServerOptions:
    """A protocol setting turned into what each part needs."""

    setting: ProtocolProfile
    stack: str
    """"tcp" (nginx + uWSGI, HTTP/2) or "quic" (h3server, HTTP/3)."""
    h3server_args: tuple[str, ...] = ()
    """h3server options (QUIC)."""
    nginx_env: dict[str, str] = field(default_factory=dict)
    """Environment for nginx (TCP): LD_PRELOAD of the pacing library when pacing
    without fq."""
    chromium_flags: tuple[str, ...] = ()
    sysctls: dict[str, str] = field(default_factory=dict)
    """Server-namespace sysctls (TCP); keys of MANAGED_SYSCTLS left out return to
    the namespace's own value."""
    route: dict[str, int] = field(default_factory=dict)
    """Metrics of the server's route to the client (initcwnd, initrwnd)."""
    pacing_method: str = "none"
    """"fq", "internal" (SO_MAX_PACING_RATE via LD_PRELOAD), "quic" (h3server's pacer)
    or "none"."""

    def apply(self, topology: ReplayTopology) -> dict:
        """Put the setting into the topology's server namespace; what was set."""
        return apply(self, topology)


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
        args = ["--cc", p.congestion_control,
                "--initial-cwnd-packets", str(p.initial_window_packets),
                "--pacing", "on" if p.pacing else "off"]
        if p.max_udp_payload is not None:
            args += ["--max-udp-payload", str(p.max_udp_payload)]
        return ServerOptions(p, "quic", h3server_args=tuple(args), chromium_flags=flags,
                             pacing_method="quic" if p.pacing else "none")
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
                         route=route, pacing_method=method)


def apply(opts: ServerOptions, topology: ReplayTopology) -> dict:
    """Set the server namespace for opts; returns {key: value} of what it set."""
    ns = topology.server
    if opts.pacing_method == "internal" and not PACING_PRELOAD.exists():
        raise TestbedError(f"{PACING_PRELOAD} missing: run `make setup` (step pacing)")
    originals = _originals.setdefault(ns.name, {k: ns.read_sysctl(k) for k in MANAGED_SYSCTLS})
    done: dict[str, str] = {}
    if opts.stack == "tcp":
        cc = opts.sysctls["net.ipv4.tcp_congestion_control"]
        allowed = ns.read_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
        if cc not in allowed:
            raise TestbedError(
                f"congestion control {cc} is not allowed for namespaces ({' '.join(allowed)}); "
                "run `make setup` (step sysctl) or sysctl -w "
                f"net.ipv4.tcp_allowed_congestion_control='{' '.join(sorted({*allowed, cc}))}'")
    for key in MANAGED_SYSCTLS:
        value = opts.sysctls.get(key, originals[key])
        ns.sysctl(key, value)
        done[key] = ns.read_sysctl(key)
    topology.set_client_route(**opts.route)
    done["route"] = topology.client_route()
    if has_fq():
        if opts.pacing_method == "fq":
            proc.run(ns.exec(["tc", "qdisc", "replace", "dev", topology.server_dev, "root", "fq"]))
        else:
            proc.run(ns.exec(["tc", "qdisc", "del", "dev", topology.server_dev, "root"]),
                     check=False)
        done["qdisc"] = proc.output(ns.exec(["tc", "qdisc", "show", "dev", topology.server_dev]))
    proc.run(ns.exec(["ip", "tcp_metrics", "flush", "all"]), check=False)
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
        from testbed.netns import NetNS

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
