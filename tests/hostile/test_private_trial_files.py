"""No other account sees what the browser shows: during a campaign, every file the
browser side writes is out of reach of another local user.

One small campaign (local-news x none x tcp, one run, in Chromium and in Firefox: two
trials in two blocks, the screen recorded and kept, the TLS key log captured) runs
while root, every 0.2 s, walks the places the browser side writes: the run's state
folder (each block's ctl/, browsertime/ with the screen recording, tmp/ with
chromedriver's and geckodriver's profiles, visual/ with the video's link, the
captures' browser/), and what the testbed user made during the campaign in its home
and in the shared /tmp, /var/tmp and /dev/shm. Every entry the testbed user owns
there is handed to a probe running as `nobody`, which tries to list it (a folder) or
read it (a file). The test asserts that

- the probe listed or read none of them (each attempt: PermissionError);
- every folder the testbed user owns in a block's folders is 0700 (below tmp/,
  libraries may set their own modes: tmp/ is 0700 itself);
- the watch saw what it is about, each refused to `nobody`: the screen recording (a
  video folder or file), a Chromium profile and a Firefox profile (`rust_mozprofile*`),
  so it cannot pass having seen nothing;
- the kept recordings, moved into the results, are root's and 0644 like the trial's
  other files.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.needs import need_firefox
from support.paths import ROOT, TESTBED

from testbed.host.runstate import STATE_ROOT, USER

POLL_S = 0.2
CAMPAIGN_S = 600.0
SHARED = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))

pytestmark = pytest.mark.e2e

PROBE = r"""
import json, os, sys
for line in sys.stdin:
    kind, path = json.loads(line)
    try:
        if kind == "dir":
            os.listdir(path)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
        got = "open"
    except PermissionError:
        got = "denied"
    except FileNotFoundError:
        got = "gone"
    except OSError as e:
        got = "error: " + (e.strerror or type(e).__name__)
    print(json.dumps([path, got]), flush=True)
"""
"""Run as `nobody`: for each [kind, path] read, whether it could list or read it."""

KEY = {
    "screen recording": lambda p: p.name == "video" or p.suffix == ".mp4",
    "Chromium profile": lambda p: p.name.startswith("org.chromium.Chromium.scoped_dir"),
    "Firefox profile": lambda p: p.name.startswith("rust_mozprofile"),
}
"""What the watch must have seen (and `nobody` been refused) for the test to mean
anything."""


@dataclass
class Watch:
    """What root saw and the probe answered while the campaign ran."""

    run: Path
    """The campaign's state folder (/run/testbed/<its pid>)."""
    shared: tuple[Path, ...]
    """Places every account shares, and the testbed user's home."""
    uid: int
    probe: subprocess.Popen
    before: set[str] = field(default_factory=set)
    """What the testbed user had in the shared places before the campaign (not its)."""
    asked: dict[str, str] = field(default_factory=dict)
    """Path -> its kind (dir or file), for each entry handed to the probe."""
    answers: dict[str, str] = field(default_factory=dict)
    loose: dict[str, str] = field(default_factory=dict)
    """Folders of the testbed user's in a block's folders (see _in_block) that were not
    0700, with their mode."""
    rounds: int = 0

    def entries(self):
        """(path, lstat) of every entry of the testbed user's where the browser side
        writes."""
        yield from _below(self.run)
        for top in self.shared:
            yield from _owned(top, self.uid)

    def look(self) -> None:
        assert self.probe.stdin is not None
        for path, st in self.entries():
            name = str(path)
            if st.st_uid != self.uid or name in self.asked or name in self.before:
                continue
            kind = ("dir" if stat.S_ISDIR(st.st_mode) else
                    "file" if stat.S_ISREG(st.st_mode) else None)
            if kind is None:  # symlinks, sockets, FIFOs: nothing to list or read
                continue
            if kind == "dir" and self._in_block(path) and stat.S_IMODE(st.st_mode) != 0o700:
                self.loose[name] = f"{stat.S_IMODE(st.st_mode):04o}"
            self.asked[name] = kind
            self.probe.stdin.write(json.dumps([kind, name]) + "\n")
        self.probe.stdin.flush()
        self.rounds += 1

    def _in_block(self, path: Path) -> bool:
        """Whether path is a block's folder of the testbed user's, or below one, but not
        below tmp/ (where libraries set modes of their own: fontconfig makes its cache
        0755; tmp/ itself is 0700)."""
        parts = path.relative_to(self.run).parts if path.is_relative_to(self.run) else ()
        return (len(parts) > 2 and parts[0] == "campaign" and parts[1].startswith("block-")
                and not (len(parts) > 3 and parts[2] == "tmp"))

    def read_answers(self) -> None:
        assert self.probe.stdout is not None
        for line in self.probe.stdout:
            path, got = json.loads(line)
            self.answers[path] = got


def _below(top: Path):
    """(path, lstat) of everything below top root can see (never following a symlink);
    entries that vanish while walked are skipped."""
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        for name in dirs + files:
            p = Path(folder) / name
            try:
                yield p, os.lstat(p)
            except OSError:
                continue


def _owned(top: Path, uid: int):
    """(path, lstat) of the entries of top that uid owns, and of everything below them."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid == uid:
            yield Path(entry.path), st
            if stat.S_ISDIR(st.st_mode):
                yield from _below(Path(entry.path))


def _watch_until(runner: subprocess.Popen, watch: Watch) -> None:
    deadline = time.monotonic() + CAMPAIGN_S
    while runner.poll() is None and time.monotonic() < deadline:
        watch.look()
        time.sleep(POLL_S)


def test_nobody_can_list_or_read_what_the_browser_writes_during_a_trial(tmp_path):
    need_firefox()
    campaign = tmp_path / "private.toml"
    campaign.write_text(
        'sites = ["local-news"]\nnetworks = ["none"]\nprotocols = ["tcp"]\nruns = 1\n'
        'client = ["chromium", "firefox"]\ncapture = ["keylog"]\nretries = 0\n'
        'timeout_s = 60\nseed = 3\nkeep_video = true\n')
    out = tmp_path / "results"
    home = Path(pwd.getpwnam(USER).pw_dir)
    uid = pwd.getpwnam(USER).pw_uid
    probe = subprocess.Popen(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c",
                              PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd="/")
    places = (*SHARED, home)
    before = {str(p) for top in places for p, _ in _owned(top, uid)}
    runner = subprocess.Popen([TESTBED, "run", str(campaign), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watch = Watch(STATE_ROOT / str(runner.pid), places, uid, probe, before)
    reader = threading.Thread(target=watch.read_answers, daemon=True)
    reader.start()
    try:
        _watch_until(runner, watch)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:  # stopped as a user would, so it cleans up
            runner.terminate()
            try:
                runner.wait(timeout=60)
            except subprocess.TimeoutExpired:
                runner.kill()
                runner.wait()
        assert probe.stdin is not None
        probe.stdin.close()
        try:
            probe.wait(timeout=30)
        except subprocess.TimeoutExpired:
            probe.kill()
            probe.wait()
        reader.join(timeout=10)
    assert runner.returncode == 0, err[-2000:]
    assert watch.rounds > 10, f"the campaign ended before it was watched ({watch.rounds} rounds)"

    unanswered = set(watch.asked) - set(watch.answers)
    assert not unanswered, f"the probe did not answer for {sorted(unanswered)[:5]}"
    opened = sorted(p for p, got in watch.answers.items() if got == "open")
    assert not opened, (f"nobody listed or read {len(opened)} of the browser side's "
                        f"{len(watch.answers)} entries, e.g. {opened[:8]}")
    assert not watch.loose, f"folders of the {USER} user not 0700: {watch.loose}"
    for what, matches in KEY.items():
        seen = [p for p in watch.asked if matches(Path(p))]
        assert seen, f"no {what} seen during the campaign: the watch proved nothing"
        refused = [p for p in seen if watch.answers[p] == "denied"]
        assert refused, f"{what}: seen ({seen[:3]}) but never refused to nobody"
    # the kept recordings, in the results, are the results' like every other file
    videos = {str(v): (v.stat().st_uid, stat.S_IMODE(v.stat().st_mode))
              for v in (out / "trials").glob("*/video.mp4")}
    assert len(videos) == 2 and set(videos.values()) == {(0, 0o644)}, videos
