"""One owner turns a setting into running servers (testbed.protocols.replay_env): the
ReplayEnv it builds carries every server option of the setting in force."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from support.paths import ROOT

from testbed.formats import recording as rec
from testbed.protocols import Change, replay_env, server_options


@pytest.fixture(scope="module")
def news() -> rec.Recording:
    return rec.load(ROOT / "recordings" / "local-news")


def _env(news, setting: str, extra=()):
    opts = server_options(setting)
    return opts, replay_env(news, Change(opts, None, MappingProxyType({})), None, extra)


@pytest.mark.parametrize("setting", ["tcp", "tcp-plus", "tcp-plus-0rtt", "quic", "quic-bbr",
                                     "quic-quinn"])
def test_the_servers_carry_the_settings_options(news, setting):
    opts, env = _env(news, setting)
    assert env.stack == opts.stack
    assert (env.session_tickets, env.early_data) == (opts.session_tickets, opts.early_data)
    assert env.quic_server == opts.quic_server
    assert tuple(env.h3server_args) == opts.h3server_args
    assert env.nginx_env == opts.nginx_env


def test_tcp_plus_0rtt_serves_tickets_and_early_data(news):
    _, env = _env(news, "tcp-plus-0rtt")
    assert env.session_tickets and env.early_data


def test_extra_h3server_options_follow_the_settings(news):
    opts, env = _env(news, "quic", ("--qlog-dir", "/x"))
    assert tuple(env.h3server_args) == (*opts.h3server_args, "--qlog-dir", "/x")
