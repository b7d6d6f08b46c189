"""`testbed validate ...`: checks that the testbed measures what it claims."""

from __future__ import annotations

import click

from testbed.cli import LazyGroup

# name -> "module:attribute", loaded on use (each check lives with its stage).
CHECKS = {
    "servers": "testbed.replay.parity:validate_servers",
    "network": "testbed.emulate.validate:validate_network",
    "protocols": "testbed.protocols.validate:validate_protocols",
}


@click.group(cls=LazyGroup, lazy=CHECKS)
def validate():
    """Prove the servers, network profiles and protocol settings are what they claim."""
