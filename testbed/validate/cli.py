"""`testbed validate ...`: checks that the testbed measures what it claims.

The click declarations of the three checks (arguments, options, help); each
calls the plain function of its module (network, protocols, servers).
"""

from __future__ import annotations

from pathlib import Path

import click

from results_contract.schema import CLIENTS, DEFAULT_CLIENT
from testbed.commands.groups import Group
from testbed.validate import firefox as firefox_proof
from testbed.validate import network as network_check
from testbed.validate import protocols as protocols_check
from testbed.validate import servers as servers_check


@click.group(cls=Group)
def validate():
    """Prove the servers, network profiles and protocol settings are what they claim."""


@validate.command("network")
@click.argument("profiles", nargs=-1)
@click.option("--probes", default=network_check.PROBES, show_default=True,
              help="Small UDP probes per profile for RTT and loss.")
@click.option("--starts", default=network_check.SHELL_STARTS, show_default=True,
              help="Shell starts the probes are spread over.")
@click.option("--recalibrate", is_flag=True,
              help="Measure the chain's own delay again instead of using the stored calibration.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the rows of every profile as JSON (progress goes to standard error).")
def network(profiles, probes, starts, recalibrate, as_json):
    """Measure each network PROFILE (a name from profiles/networks/ or a TOML file;
    default: dsl lte da2gc mss) through its real Mahimahi shells: RTT, loss, link
    rates and TCP goodput against the profile; exit 1 if any is out of tolerance."""
    network_check.validate_network(profiles, probes, starts, recalibrate, as_json)


@validate.command("protocols")
@click.argument("settings", nargs=-1)
@click.option("--network", default=protocols_check.DEFAULT_NETWORK, show_default=True,
              help="Network profile the replay runs under (a name or a TOML file).")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Keep the captures (pcap), qlogs and server logs in this folder.")
@click.option("--client", type=click.Choice(CLIENTS), default=DEFAULT_CLIENT,
              show_default=True,
              help="firefox: prove Firefox's protocol per origin on the bundled site from "
                   "its own HTTP log, its HAR and the wire (default settings: "
                   + ", ".join(firefox_proof.SETTINGS) + ").")
@click.option("--json", "as_json", is_flag=True,
              help="Print the rows as JSON (progress goes to standard error).")
def protocols(settings, network, keep, client, as_json):
    """Prove that each protocol SETTING (a name from profiles/protocols/ or a TOML file;
    default: the paper's five and quic-bbr2) is in force during a real replay: congestion
    control and BBR generation (tcp-plus-bbr and quic-bbr must run the same), initial window, pacing, slow start after idle, buffers, QUIC options and
    Chromium's protocol. With --client firefox: Firefox's protocol for every origin of
    the bundled site. Exit 1 on any mismatch."""
    protocols_check.validate_protocols(settings, network, keep, client, as_json)


@validate.command("servers")
@click.option("--runs", default=servers_check.RUNS, show_default=True,
              help="Downloads per size and stack.")
@click.option("--rtt", "rtt_ms", default=servers_check.RTT_MS, show_default=True,
              help="RTT in ms (mm-delay).")
@click.option("--rate", "rate_mbit", default=servers_check.RATE_MBIT, show_default=True,
              type=click.IntRange(min=0),
              help="Link rate each way in Mbit/s (mm-link, unbounded queue); 0: no rate limit, "
                   "the paper's condition, where on a small machine the CPU is the bottleneck.")
@click.option("--size", "sizes", multiple=True, type=int,
              help="File size in bytes (repeatable; at most 100 MB); default 10 KB, 100 KB, "
                   "1 MB, 10 MB.")
@click.option("--stack", "stacks", multiple=True, type=click.Choice(["tcp", "quic"]),
              help="Run only this stack (repeatable; the gap needs both).")
@click.option("--rounds", default=servers_check.ROUNDS, show_default=True,
              help="The stacks take turns this many times (each turn restarts the servers "
                   "and the browser).")
@click.option("--initial-window", "initial_window", default=servers_check.INITIAL_WINDOW,
              show_default=True, help="Initial congestion window of both stacks, in packets.")
@click.option("--pacing/--no-pacing", default=False, show_default=True,
              help="Pace both senders (as the paper's TCP+ and QUIC settings do): fq or "
                   "Linux's internal pacing for TCP, h3server's pacer for QUIC.")
@click.option("--max-gap", default=servers_check.MAX_GAP, show_default=True,
              help="Allowed relative gap.")
@click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE",
              help="Also write the rows and every download time to this JSON file.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the rows and every download time as JSON (progress goes to "
                   "standard error).")
def servers(runs, rtt_ms, rate_mbit, sizes, stacks, rounds, initial_window, pacing, max_gap,
            output, as_json):
    """The paper's server-parity check: single files through nginx+uWSGI (HTTP/2)
    and h3server (HTTP/3) at 10 ms RTT and no loss; fails if the medians differ by
    more than 5 %."""
    servers_check.validate_servers(runs, rtt_ms, rate_mbit, sizes, stacks, rounds,
                                   initial_window, pacing, max_gap, output, as_json)
