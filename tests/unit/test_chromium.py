"""The one Chromium driver's command line and flags. Pure, except the profile folder."""

from __future__ import annotations

import os
import pwd
import signal
from pathlib import Path

import pytest
from support.needs import need_root

from testbed.host import chromium, paths, runstate, safefs
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


# --- Chromium's temporary files: in a folder of the run, never /tmp ------------------------

class _Stop(Exception):
    pass


def _launched(monkeypatch, **kwargs) -> tuple[chromium.Chromium, list[str]]:
    """What the driver starts (its argv), the start itself stopped short."""
    seen: list[list[str]] = []

    def popen(argv, **_):
        seen.append(argv)
        raise _Stop

    monkeypatch.setattr(chromium.subprocess, "Popen", popen)
    browser = chromium.Chromium(None, ["--x"], **kwargs)
    with pytest.raises(_Stop):
        browser.__enter__()
    return browser, seen[0]


def test_the_driver_keeps_chromiums_temporary_files_in_the_run_folder(monkeypatch):
    """TMPDIR (and HOME) is a folder of the run's own (removed with it, and by the
    driver), given to Chromium itself with umask 077: Mahimahi's shells are setuid, so
    the C library drops TMPDIR from the environment they pass on; it is set again
    inside them, just before Chromium."""
    need_root()
    for wrap in (["mm-delay", "5"], ["mm-link", "u", "d", "--"], []):
        browser, argv = _launched(monkeypatch, wrap=wrap)
        tmp = browser.tmp
        assert tmp.parent == runstate.current().dir and tmp != browser.profile
        start = argv.index("chromium")
        private = [*chromium.PRIVATE, f"TMPDIR={tmp}", f"HOME={tmp}",
                   f"XDG_CACHE_HOME={tmp}", f"XDG_CONFIG_HOME={tmp}"]
        assert argv[start - len(private) - len(wrap):start] == [*wrap, *private]
        assert ["--env", f"TMPDIR={tmp}"] == argv[argv.index("--env"):][:2]
        assert not tmp.exists() and not browser.profile.exists()  # removed: it did not start


CHROMIUM_TEMP = (".org.chromium.", "org.chromium.", ".com.google.Chrome.", "scoped_dir")
"""How the temporary folders of Chromium and chromedriver are named."""


def _chromium_temp() -> set[str]:
    return {n for n in os.listdir("/tmp") if n.startswith(CHROMIUM_TEMP)}


@pytest.mark.e2e
def test_a_killed_chromium_in_mahimahis_shells_leaves_nothing_in_tmp():
    """A real headless Chromium started by the driver inside a Mahimahi shell puts its
    temporary files in the run's folder, so SIGKILL (no clean-up at all) leaves
    nothing of it in /tmp."""
    need_root()
    from testbed.host.netns import NetNS

    before = _chromium_temp()
    with NetNS("chromium-tmp") as ns, \
            chromium.Chromium(ns.name, ["--disable-gpu"], wrap=["mm-delay", "1"]) as browser:
        made = os.listdir(browser.tmp)
        os.killpg(browser.proc.pid, signal.SIGKILL)
        browser.proc.wait(timeout=30)
    assert made, "Chromium wrote nothing in its temporary folder (TMPDIR not seen)"
    assert _chromium_temp() - before == set()
