"""`testbed validate ...`: checks that the testbed measures what it claims."""

from __future__ import annotations

import click

from testbed.commands.groups import Group
from testbed.validate.network import validate_network
from testbed.validate.protocols import validate_protocols
from testbed.validate.servers import validate_servers


@click.group(cls=Group)
def validate():
    """Prove the servers, network profiles and protocol settings are what they claim."""


for command in (validate_network, validate_protocols, validate_servers):
    validate.add_command(command)
