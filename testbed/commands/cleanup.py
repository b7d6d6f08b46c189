"""`testbed cleanup [--check]`: what dead runs left on the host (testbed.host.cleanup),
listed or removed."""

from __future__ import annotations

import os

import click

from testbed.errors import InputError
from testbed.host.cleanup import leftovers, sweep


@click.command("cleanup")
@click.option("--check", is_flag=True,
              help="Only list leftovers (changes nothing); exit 1 if there are any.")
def cleanup(check: bool) -> None:
    """Remove namespaces, processes and files left by testbed runs that died."""
    if os.geteuid() != 0:
        raise InputError("testbed cleanup: needs root (namespaces, other users' processes); "
                         "run it with sudo")
    if check:
        found = leftovers(exclude_run=str(os.getpid()))
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
