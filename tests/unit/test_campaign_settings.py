"""A campaign's protocol setting: testbed.protocols' ServerOptions, checked against
the stack its profile names."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from testbed.campaign.plan import settings
from testbed.errors import TestbedError as Refused
from testbed.formats import profiles
from testbed.host.paths import PROFILES_DIR
from testbed.protocols import ServerOptions


@pytest.mark.parametrize("name,stack", [("tcp", "tcp"), ("tcp-plus", "tcp"),
                                        ("tcp-plus-bbr", "tcp"), ("quic", "quic"),
                                        ("quic-bbr", "quic"), ("quic-quinn", "quic")])
def test_every_bundled_setting_loads_and_sets_up_its_own_stack(name, stack):
    opts = settings.load(name)
    assert isinstance(opts, ServerOptions)
    assert opts.name == name and opts.stack == stack
    # the digest is of the profile file's bytes, as the manifest records it
    raw = (PROFILES_DIR / "protocols" / f"{name}.toml").read_bytes()
    assert opts.digest == hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("name,change,complaint", [
    ("quic", {"chromium_flags": ("--disable-quic",)}, "Chromium's flags are for tcp"),
    ("tcp", {"chromium_flags": ("--enable-quic", "--origin-to-force-quic-on=*")},
     "Chromium's flags are for quic"),
    ("tcp", {"chromium_flags": ()}, "Chromium's flags are for no single stack"),
    ("tcp", {"stack": "quic"}, "server options are for quic"),
    ("quic", {"route": {"initcwnd": 32}}, "servers are for no single stack"),
    ("tcp", {"h3server_args": ("--cc", "cubic")}, "servers are for no single stack"),
    ("tcp", {"h3server_args": ("--cc", "cubic"), "sysctls": {}, "route": {}},
     "servers are for quic"),
])
def test_options_that_set_up_another_stack_than_the_profile_are_refused(name, change,
                                                                         complaint):
    profile = profiles.load_protocol(name)
    opts = dataclasses.replace(settings.server_options(profile), **change)
    with pytest.raises(Refused, match=f"the profile is for {profile.stack}, but .*{complaint}"):
        settings.check(opts, profile)


def test_the_options_of_the_profile_itself_pass():
    for name in ("tcp", "quic"):
        profile = profiles.load_protocol(name)
        settings.check(settings.server_options(profile), profile)


def test_a_quinn_setting_runs_h3quinn_on_servers_of_its_own():
    quiche, quinn = settings.load("quic"), settings.load("quic-quinn")
    assert (quiche.quic_server, quinn.quic_server) == ("h3server", "h3quinn")
    # h3quinn always paces: no --pacing (it has no such option); the rest as h3server
    assert quinn.h3server_args == ("--cc", "cubic", "--initial-cwnd-packets", "32",
                                   "--max-udp-payload", "1350")
    assert quiche.h3server_args == ("--cc", "cubic", "--initial-cwnd-packets", "32",
                                    "--pacing", "on", "--max-udp-payload", "1350")
    assert quinn.pacing_method == "quic" and quinn.chromium_flags == quiche.chromium_flags
    # the servers are restarted between the two settings
    assert quinn.server_key != quiche.server_key
