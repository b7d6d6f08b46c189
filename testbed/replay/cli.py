"""`testbed replay RECORDING [--stack tcp|quic] [--setting NAME] [--network PROFILE] -- CMD ...`

Like Mahimahi's mm-webreplay: brings the replay up (topology, certificate,
servers), runs CMD as the testbed user in the client namespace, tears
everything down when CMD ends, and exits with CMD's status (under --network:
Mahimahi's, 0 or 1). A setting names its stack, so --setting alone is
enough (with --stack too, the two must agree). --network puts CMD inside the
profile's Mahimahi shells, the calibrated chain a campaign's trials run in
(testbed.emulate.calibrate). CMD learns how to reach the replay from its
environment:

    TESTBED_CHROMIUM_FLAGS       Chromium's flags for this replay, one per line
                                 (mapfile -t f <<<"$TESTBED_CHROMIUM_FLAGS"; chromium "${f[@]}")
    TESTBED_HOST_RESOLVER_RULES  the --host-resolver-rules value
    TESTBED_SPKI                 the --ignore-certificate-errors-spki-list value
    TESTBED_STACK                tcp or quic
    TESTBED_URL                  the recorded page
    TESTBED_REPLAY_SUMMARY       the server's JSON summary (requests, misses, ...);
                                 with --layout split over QUIC, the first QUIC
                                 server's (one per host; the line printed at the
                                 end counts them all)

--layout split serves every host on an address and with a certificate of its own
(testbed.replay.layout); the resolver rules and /etc/hosts below name those addresses.

With --client firefox, CMD runs in a mount namespace whose /etc/hosts maps every
recorded host to its recorded IP (and /etc/resolv.conf names no server), as a
Firefox trial does (testbed.host.firefox), and learns instead of Chromium's flags:

    TESTBED_FIREFOX_USER_JS      a user.js with the stack's preferences, to copy into
                                 a fresh profile
    TESTBED_CERT_CHAIN           the replay's certificate chain (leaf first, its CA
                                 last); a fresh profile trusts the CA with
                                 certutil -A -d sql:PROFILE -n replay -t C,, -i CA
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from results_contract.schema import CLIENTS, DEFAULT_CLIENT
from testbed.emulate.shells import ShellChain
from testbed.errors import InputError, TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import NetworkProfile, load_network
from testbed.host import enter, firefox, proc, safefs
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.protocols import ServerOptions, applied, replay_env, server_options
from testbed.replay import layout as layout_mod
from testbed.replay.env import STACKS, ReplayEnv, host_ips


def protocol_options(name: str | None, stack: str | None) -> tuple[str, ServerOptions | None]:
    """The stack to replay over and the protocol setting `name` (testbed.protocols), if
    given: its server options, applied to the server namespace with `applied` before
    the servers start. The setting names its stack; a --stack that says otherwise, or
    neither option, is an InputError."""
    if name is None:
        if stack is None:
            raise InputError("--stack: expected tcp or quic, or --setting NAME (a setting "
                             "names its stack); got neither")
        return stack, None
    opts = server_options(name)
    if stack is not None and opts.stack != stack:
        raise InputError(f"--setting {name}: expected a {stack} setting to match --stack "
                         f"{stack}, got a {opts.stack} setting ({opts.source}); give "
                         "--setting alone or a --stack that agrees")
    return opts.stack, opts


def network_chain(p: NetworkProfile) -> ShellChain:
    """The network profile's calibrated Mahimahi shells, as a campaign's trials have them
    (the stored calibration, or a new one, measured once per profile and machine)."""
    from testbed.emulate import calibrate

    cal = calibrate.cached(p)
    if cal is None:
        click.echo(f"testbed: calibrating network {p.name} (once per machine)...", err=True)
        cal = calibrate.for_profile(p)
    work = current().path("shells")
    work.mkdir(exist_ok=True)
    os.chmod(work, 0o755)  # the testbed user reads the link traces
    return calibrate.chain_for(p, work, cal)


def _traversable(path: Path) -> bool:
    """Whether any user may enter path (every component world-executable)."""
    p = path.resolve()
    for part in (p, *p.parents):
        if not part.stat().st_mode & stat.S_IXOTH:
            return False
    return True


def command_env(env: ReplayEnv, extra_flags=()) -> dict[str, str]:
    return {
        "TESTBED_CHROMIUM_FLAGS": "\n".join(
            dict.fromkeys([*env.chromium_flags(), *extra_flags])),
        "TESTBED_HOST_RESOLVER_RULES": env.host_resolver_rules,
        "TESTBED_SPKI": env.spki,
        "TESTBED_STACK": env.stack,
        "TESTBED_URL": env.recording.url,
        "TESTBED_REPLAY_SUMMARY": str(env.summary_path),
        "TERM": os.environ.get("TERM", "dumb"),
    }


def firefox_env(env: ReplayEnv) -> tuple[dict[str, str], dict[str, Path]]:
    """A Firefox command's environment and binds for this replay: a user.js of the
    stack's preferences, the certificate chain, and the replay's own /etc/hosts and
    /etc/resolv.conf (files in root's folder of the run)."""
    folder = current().path("firefox")
    safefs.root_dir(folder)
    launch = env.firefox_launch()
    user_js = safefs.write_file(folder / "user.js", firefox.user_js(launch["prefs"]))
    hosts = safefs.write_file(folder / "hosts", firefox.hosts_file(host_ips(env.recording)))
    resolv = safefs.write_file(folder / "resolv.conf", firefox.RESOLV_CONF)
    out = {k: v for k, v in command_env(env).items() if not k.startswith("TESTBED_CHROMIUM")
           and k not in ("TESTBED_HOST_RESOLVER_RULES", "TESTBED_SPKI")}
    out.update(TESTBED_FIREFOX_USER_JS=str(user_js), TESTBED_CERT_CHAIN=launch["trust"])
    return out, {"/etc/hosts": hosts, "/etc/resolv.conf": resolv}


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("recording")
@click.option("--stack", type=click.Choice(STACKS), default=None,
              help="tcp: nginx + uWSGI (TLS 1.3, HTTP/2); quic: h3server (HTTP/3). "
                   "Optional with --setting (it names the stack).")
@click.option("--setting", "setting", metavar="NAME",
              help="A setting (profiles/protocols/NAME or a path) applied to the "
                   "servers.")
@click.option("--network", "network", metavar="PROFILE",
              help="Run CMD inside this network profile's Mahimahi shells "
                   "(profiles/networks/PROFILE or a path), as a campaign's trials do.")
@click.option("--client", type=click.Choice(CLIENTS), default=DEFAULT_CLIENT,
              show_default=True,
              help="The browser CMD will run: what its environment tells it (firefox: "
                   "also the replay's names in /etc/hosts of CMD's own mount namespace).")
@click.option("--layout", type=click.Choice(layout_mod.LAYOUTS), default=layout_mod.DEFAULT,
              show_default=True,
              help="Which hosts share an address and a certificate: as recorded, or split "
                   "(every host on its own address with its own certificate), as a "
                   "campaign's `layout` key.")
@click.option("--deterministic-scripts/--no-deterministic-scripts", default=True,
              show_default=True,
              help="Replayed HTML runs a script first that seeds Math.random and starts Date "
                   "at the recording's time, as a campaign's `deterministic_scripts` key.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def replay(recording: str, stack: str | None, setting: str | None, network: str | None,
           client: str, layout: str, cmd: tuple[str, ...], deterministic_scripts: bool = True):
    """Run CMD (as the testbed user, in the replay's client namespace) against
    RECORDING served over STACK; everything is torn down when CMD ends, and
    CMD's exit status is returned. Put `--` before CMD."""
    loaded = layout_mod.apply(rec.load(recording), layout)
    stack, opts = protocol_options(setting, stack)
    profile = load_network(network) if network is not None else None
    with ExitStack() as exits:
        chain = network_chain(profile) if profile is not None else None
        topology = exits.enter_context(ReplayTopology(loaded.ips))
        if opts is not None:  # the setting in force, then its servers
            change = exits.enter_context(applied(opts, topology))
            env = exits.enter_context(replay_env(
                loaded, change, topology, deterministic_scripts=deterministic_scripts))
        else:
            env = exits.enter_context(ReplayEnv(loaded, stack, topology=topology,
                                                deterministic_scripts=deterministic_scripts))
        how = "".join([f", setting {opts.name}" if opts is not None else "",
                       f", network {profile.name}" if profile is not None else ""])
        click.echo(f"testbed: replaying {loaded.name} over {stack}{how} "
                   f"({len(loaded.exchanges)} exchanges, {len(loaded.ips)} IPs, layout "
                   f"{layout}), "
                   f"ready in {env.startup_seconds:.1f} s", err=True)
        cwd = Path.cwd()
        shaped = chain.argv(list(cmd)) if chain is not None else list(cmd)
        cmd_env = command_env(env, opts.chromium_flags if opts is not None else ())
        binds: dict[str, Path] = {}
        if client == "firefox":
            cmd_env, binds = firefox_env(env)
        argv = enter.as_user(shaped, netns=env.client_netns, env=cmd_env,
                             cwd=str(cwd) if _traversable(cwd) else None, binds=binds)
        before = env.summary()
        try:
            rc = proc.call(argv)
        finally:
            after = env.summary()
            click.echo(f"testbed: {after['requests'] - before['requests']} requests, "
                       f"{after['misses'] - before['misses']} misses", err=True)
        try:
            env.check_alive()
        except TestbedError as e:
            click.echo(f"testbed: warning: {e}", err=True)
    sys.exit(rc)
