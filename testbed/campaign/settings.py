"""A protocol setting as the runner uses it: stack, server options, flags, apply().

The protocol-settings stage (testbed.protocols) turns a profile from
profiles/protocols/ into `server_options(name)`: an object (or mapping) with
`stack`, `apply(topology)` (sysctls and the route of the server namespace),
`h3server_args`, `nginx_env` and `chromium_flags`. This module only adapts
that to one frozen shape and says which settings can share running servers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from testbed import profiles
from testbed.errors import TestbedError


@dataclass(frozen=True)
class Setting:
    name: str
    stack: str
    h3server_args: tuple[str, ...] = ()
    nginx_env: tuple[tuple[str, str], ...] = ()
    chromium_flags: tuple[str, ...] = ()
    apply: Callable | None = field(default=None, compare=False)
    digest: str = ""
    """sha256 of the profile file."""
    source: str = ""

    @property
    def server_key(self) -> tuple:
        """Settings with the same key run on the same servers (only apply() differs)."""
        return (self.stack, self.h3server_args, self.nginx_env)


def _get(opts, key, default=None):
    if isinstance(opts, dict):
        return opts.get(key, default)
    return getattr(opts, key, default)


def load(name: str) -> Setting:
    profile = profiles.load_protocol(name)
    server_options = None
    for module in ("testbed.protocols", "testbed.protocols.apply"):
        try:
            server_options = getattr(importlib.import_module(module), "server_options", None)
        except ModuleNotFoundError:
            continue
        if server_options is not None:
            break
    if server_options is None:
        raise TestbedError("protocol settings are not available (testbed.protocols."
                           "server_options is missing)")
    opts = server_options(name)
    stack = _get(opts, "stack") or profile.stack
    if stack != profile.stack:
        raise TestbedError(f"protocol {name}: server options are for {stack}, "
                           f"the profile for {profile.stack}")
    return Setting(
        name=profile.name,
        stack=stack,
        h3server_args=tuple(str(a) for a in (_get(opts, "h3server_args") or ())),
        nginx_env=tuple(sorted((str(k), str(v))
                               for k, v in (_get(opts, "nginx_env") or {}).items())),
        chromium_flags=tuple(str(a) for a in (_get(opts, "chromium_flags") or ())),
        apply=_get(opts, "apply"),
        digest=profile.digest,
        source=profile.source,
    )
