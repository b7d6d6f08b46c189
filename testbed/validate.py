"""`testbed validate ...`: checks that the testbed measures what it claims."""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute", loaded on use (each check lives with its stage).
CHECKS = {
    "servers": "testbed.replay.parity:validate_servers",
    "network": "testbed.emulate.validate:validate_network",
    "protocols": "testbed.protocols.validate:validate_protocols",
}


class _Lazy(click.Group):
    def list_commands(self, ctx):
        return sorted(CHECKS)

    def get_command(self, ctx, name):
        if name not in CHECKS:
            return None
        module, attr = CHECKS[name].split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=_Lazy)
def validate():
    """Prove the servers, network profiles and protocol settings are what they claim."""
