"""Fault suite: SIGKILL a Firefox campaign at each chosen moment of its work
(support.kill_resume.MOMENTS), resume each time.

Firefox brings parts of its own to a trial: geckodriver, which makes a fresh
profile per browser in the block's temporary folder (`rust_mozprofile*` in
/run/testbed/<run>/campaign/block-*/tmp), Firefox's processes (parent, content,
socket) and its shared memory. Killed with the runner, none of them may outlive
the resume: the store ends with exactly the planned trials (none lost, none
duplicated), each trial's files once, and the host holds no process, namespace,
state folder or profile of the killed runs.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest
from support.kill_resume import MOMENTS, kill_at_moments, resume_to_the_plan, settled_leftovers
from support.needs import need_firefox
from support.paths import TESTBED

from testbed.host import runstate

PROTOCOLS = ("tcp", "quic")
RUNS = 2
"""4 Firefox trials in 2 blocks of 2."""
PROFILE = "rust_mozprofile*"
"""geckodriver's name for the profile it makes (in TMPDIR)."""
FIREFOX_PARTS = ("firefox-esr", "geckodriver", "Xvfb")

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def _user_home() -> Path:
    import pwd
    return Path(pwd.getpwnam(runstate.USER).pw_dir)


def _profiles(out: Path) -> list[Path]:
    """Firefox profiles anywhere a run's browser could have made or left one."""
    found = [p for root in (runstate.STATE_ROOT, out) for p in root.glob(f"**/{PROFILE}")]
    for root in (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), _user_home()):
        found += root.glob(PROFILE)
    return found


def _user_entries() -> set[Path]:
    """Entries the testbed user owns in the shared temporary folders (Xvfb's lock files
    and sockets among them) and shared memory, and in its home (two levels down)."""
    uid = os.stat(_user_home()).st_uid
    found = set()
    for root, pattern in ((Path("/tmp"), "*"), (Path("/tmp/.X11-unix"), "*"),
                          (Path("/var/tmp"), "*"), (Path("/dev/shm"), "*"),
                          (_user_home(), "*"), (_user_home(), "*/*")):
        for p in root.glob(pattern):
            try:
                if p.lstat().st_uid == uid:
                    found.add(p)
            except OSError:
                continue
    return found


def _browser_processes() -> set[tuple[int, str]]:
    """Firefox, geckodriver, Xvfb and Browsertime processes on the host."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        first = os.path.basename(cmd.split(" ", 1)[0])
        if first in FIREFOX_PARTS or "browsertime/bin/browsertime" in cmd:
            found.add((int(entry.name), cmd[:100]))
    return found


class _Watch(threading.Thread):
    """Where the killed runs' Firefox profiles were made, seen while they ran."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set[Path] = set()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            if runstate.STATE_ROOT.is_dir():
                self.seen |= set(runstate.STATE_ROOT.glob(f"*/campaign/block-*/tmp/{PROFILE}"))


def test_sigkill_of_a_firefox_campaign_leaves_nothing_and_resumes(tmp_path):
    need_firefox()
    campaign = tmp_path / "firefox-faults.toml"
    campaign.write_text(
        'sites = ["local-news"]\nnetworks = ["none"]\n'
        f"protocols = {list(PROTOCOLS)!r}\nruns = {RUNS}\n".replace("'", '"')
        + 'client = ["firefox"]\nretries = 1\ntimeout_s = 60\nseed = 17\nkeep_video = false\n')
    out = tmp_path / "results"
    argv = [TESTBED, "run", str(campaign), "--out", str(out)]
    planned = {f"local-news+none+{p}+{r}+firefox" for p in PROTOCOLS for r in range(RUNS)}
    processes_before = _browser_processes()
    entries_before = _user_entries()
    watch = _Watch()
    watch.start()
    try:
        kills = kill_at_moments(argv, out)
    finally:
        watch.stop.set()
        watch.join()
    assert [k[0] for k in kills] == list(MOMENTS)
    assert 0 < kills[-1][2] < len(planned), f"nothing stored or nothing left: {kills}"
    assert watch.seen, "no Firefox profile was seen in a block's temporary folder"

    ids = resume_to_the_plan(argv, out, planned, timeout=600)
    con = sqlite3.connect(out / "trials.sqlite")
    clients = {r[0] for r in con.execute("SELECT client FROM trials")}
    con.close()
    assert clients == {"firefox"}, clients
    found = settled_leftovers()
    assert not found, found
    left_processes = _browser_processes() - processes_before
    assert not left_processes, left_processes
    left_profiles = _profiles(out)
    assert not left_profiles, left_profiles
    assert not [p for p in watch.seen if p.exists()], "a profile seen during the runs remains"
    left_entries = _user_entries() - entries_before
    assert not left_entries, left_entries
    print(f"\nkills (moment, stored before, after): {kills}; "
          f"trials lost: {len(planned - set(ids))}; duplicated: {len(ids) - len(set(ids))}; "
          f"profiles seen during the runs: {len(watch.seen)}; leftovers: {len(found)}")
