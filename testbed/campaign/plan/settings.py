"""A protocol setting as the campaign uses it: testbed.protocols' frozen
ServerOptions, built from its profile and checked against it.

    opts = load("tcp-plus")     # profiles/protocols/tcp-plus.toml, or a path

The check compares the stack the profile names with the stack the options
really set up: the servers (h3server options for QUIC; nginx's environment,
sysctls and route only for TCP) and Chromium's flags (QUIC forced on every
origin, or QUIC off). A setting whose parts disagree would measure one stack
and store it as the other.
"""

from __future__ import annotations

from testbed.errors import TestbedError
from testbed.formats import profiles
from testbed.protocols import ServerOptions, server_options

FORCE_QUIC = "--origin-to-force-quic-on"


def browser_stack(flags: tuple[str, ...]) -> str | None:
    """The stack Chromium uses with these flags: "quic" (QUIC enabled and forced on),
    "tcp" (QUIC disabled), or None (neither, or both)."""
    forced = any(f.startswith(FORCE_QUIC) for f in flags)
    disabled = "--disable-quic" in flags
    if disabled and not forced:
        return "tcp"
    if forced and not disabled and "--enable-quic" in flags:
        return "quic"
    return None


def server_stack(opts: ServerOptions) -> str | None:
    """The stack the options' servers are: "quic" (h3server options and nothing for
    TCP), "tcp" (no h3server options), or None (both)."""
    tcp_parts = bool(opts.nginx_env or opts.sysctls or opts.route)
    if opts.h3server_args:
        return None if tcp_parts else "quic"
    return "tcp"


def check(opts: ServerOptions, profile: profiles.ProtocolProfile) -> None:
    """TestbedError unless the options set up the stack the profile names."""
    seen = {"server options": opts.stack, "servers": server_stack(opts),
            "Chromium's flags": browser_stack(opts.chromium_flags)}
    wrong = [f"{what} are for {stack or 'no single stack'}"
             for what, stack in seen.items() if stack != profile.stack]
    if wrong:
        raise TestbedError(f"protocol {profile.name} ({profile.source}): the profile is for "
                           f"{profile.stack}, but " + ", ".join(wrong))


def load(name: str) -> ServerOptions:
    profile = profiles.load_protocol(name)
    opts = server_options(profile)
    check(opts, profile)
    return opts
