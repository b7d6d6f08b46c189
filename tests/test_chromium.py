"""The one Chromium driver's command line and flags. Pure, except the profile folder."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from needs import need_root

from testbed import chromium, paths, safefs
from testbed.protocols import apply
from testbed.record import browser as record_browser
from testbed.replay.env import STACKS, stack_flags


def test_command_is_the_base_flags_then_the_profile_then_the_callers():
    argv = chromium.command(Path("/p"), ["--disable-quic", "about:blank"])
    assert argv[0] == "chromium"
    assert argv[1:1 + len(chromium.BASE_FLAGS)] == list(chromium.BASE_FLAGS)
    assert argv[-3:] == ["--user-data-dir=/p", "--disable-quic", "about:blank"]
    assert "--headless=new" in argv and not any("no-sandbox" in a for a in argv)
    assert chromium.command(Path("/p"), binary="/opt/c")[0] == "/opt/c"


def test_stack_flags_are_defined_once_and_used_everywhere():
    assert set(chromium.STACK_FLAGS) == set(STACKS)
    assert apply.CHROMIUM_FLAGS is chromium.STACK_FLAGS
    for stack in STACKS:
        assert stack_flags(stack) == list(chromium.STACK_FLAGS[stack])
        assert apply.server_options(stack).chromium_flags == chromium.STACK_FLAGS[stack]
    recording = record_browser.flags(8080, "abc=")
    assert all(f in recording for f in chromium.STACK_FLAGS["tcp"])
    assert not any(f in recording for f in chromium.STACK_FLAGS["quic"])


def test_make_profile_is_an_empty_folder_of_the_testbed_user(tmp_path):
    need_root()
    profile = chromium.make_profile(prefix="t-", parent=tmp_path)
    try:
        st = profile.stat()
        assert profile.parent == tmp_path and profile.name.startswith("t-")
        assert st.st_uid == pwd.getpwnam(paths.USER).pw_uid
        assert not os.listdir(profile)
    finally:
        safefs.rmtree(profile)
    assert not profile.exists()


def test_browsertimes_launcher_replaces_every_stack_flag():
    """The launcher (standard library only: it cannot import this module) drops the
    stack flags Chromium was started with before adding the trial's own."""
    from testbed.measure import launcher

    assert set(chromium.STACK_FLAGS) == {"tcp", "quic"}
    for flags in chromium.STACK_FLAGS.values():
        assert all(f.startswith(launcher.REPLACED) for f in flags), flags
