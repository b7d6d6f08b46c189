"""The symlink race: a testbed-user process never makes root write outside the
testbed's folders.

While replays run (`testbed replay local-news --stack tcp|quic -- true`,
taking turns: 4 in `make faults`, 10 in `make test-long`), a process of the testbed user loops over every folder it can
write under /run/testbed, a results folder of its own and /tmp, replacing
every file there with a symlink (and planting symlinks under the names root
writes: nginx.conf, leaf.key, the servers' logs, summary.json...). Half point
at a root-only canary file (mode 0600, known content) outside the testbed's
folders, half at a name next to it that does not exist. Afterwards the canary
has the same content, mode and mtime, nothing else appeared in its folder,
no replay ended with a traceback, and every replay that stopped stopped for a
symlink (RACE_REFUSAL).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT, TESTBED

from testbed.host import runstate
from testbed.host.runstate import STATE_ROOT, USER

RACE_REFUSAL = re.compile(
    r"testbed: error: (\S+: a symlink or not (a regular file|a folder)"
    r"|\S+: not a regular file|\S+: not opened as a folder"
    r"|replay server \S+ \((tcp|quic) stack\) exited with status)")
"""What a replay raced by the testbed user may end with (exit 1): root refusing a
symlink where its file or folder should be, or a replay server, which runs as that
user, dying on one. Anything else (a crash, a missing part) fails the test."""
REPLAYS = 4
"""Two per stack, each raced from its start (about 16 s a replay on 2 cores): every kind of
file root writes for either stack is met by the attacker at least twice."""
LONG_REPLAYS = 10
"""`make test-long`: five per stack, more chances for the race to land between a check and
a write."""

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

# Runs as the testbed user: argv = canary, dangling target, stop file, folders to sweep
# (the state root first: it is swept on every pass, the others on every 20th).
ATTACKER = r"""
import os, sys, time
os.nice(5)  # racing, not starving the replays of the 2 cores
canary, dangling, stop, *roots = sys.argv[1:]
NAMES = ("nginx.conf", "leaf.key", "leaf.pem", "nginx.log", "uwsgi.log", "h3server.log",
         "owner", "summary.json", "nginx.pid", "nginx-error.log", "flags-1.json", "go-1.json",
         "complete.js", "browsertime.log", "manifest.json", "trials.sqlite")
replaced = planted = 0
seen = set()
mine = []
n = 0
def link(path):
    global n
    n += 1
    tmp = os.path.join(os.path.dirname(path), f".x{os.getpid()}-{n}")
    try:
        os.symlink(canary if n % 2 else dangling, tmp)
        os.rename(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
loops = 0
while not os.path.lexists(stop):
    loops += 1
    for i, root in enumerate(roots):
        if i and loops % 20:  # the state root every pass; results and /tmp (which may
            continue          # hold thousands of files) every 20th, so walking them
        for d, dirs, files in os.walk(root):  # never keeps it from the replays' folders
            if not os.access(d, os.W_OK | os.X_OK):
                continue
            if d.startswith("/run/testbed"):
                seen.add(d)
            for name in files:
                p = os.path.join(d, name)
                if not name.startswith(".x") and p != stop and link(p):
                    replaced += 1
            for name in NAMES:
                p = os.path.join(d, name)
                if not os.path.lexists(p) and link(p):
                    planted += 1
                    mine.append(p)
    time.sleep(0.001)
for p in mine:  # what it planted in folders that outlive the replays (/tmp)
    if os.path.islink(p) and os.readlink(p) in (canary, dangling):
        os.unlink(p)
print(replaced, planted, len(seen))
"""


def test_no_replay_writes_through_the_testbed_user_s_symlinks(tmp_path):
    race(tmp_path, REPLAYS)


@pytest.mark.long(strengthens="tests/faults/test_symlink_race.py::"
                  "test_no_replay_writes_through_the_testbed_user_s_symlinks")
def test_ten_raced_replays_write_nothing_through_the_testbed_user_s_symlinks(tmp_path):
    race(tmp_path, LONG_REPLAYS)


def race(tmp_path: Path, replays: int) -> None:
    """`replays` replays raced by the testbed user's symlinks; the canary untouched."""
    # Outside every folder of the testbed's, root's alone.
    secret = tmp_path / "host"
    secret.mkdir(mode=0o700)
    canary = secret / "canary"
    canary.write_text("CANARY root only\n")
    canary.chmod(0o600)
    before = canary.stat()
    dangling = secret / "created-by-root"
    # A results folder the testbed user can write (it must never be root's target).
    results = Path(f"/tmp/tb-race-results-{os.getpid()}")
    results.mkdir()
    subprocess.run(["chown", USER, results], check=True)
    stop = results / "stop"
    runstate.current()  # the attacker is this run's child: a replay's sweep leaves it be
    attacker = subprocess.Popen(
        ["runuser", "-u", USER, "--", "/usr/bin/python3", "-I", "-c", ATTACKER, str(canary),
         str(dangling), str(stop), str(STATE_ROOT), str(results), "/tmp"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    codes: list[int] = []
    reasons: list[str] = []
    try:
        for i in range(replays):
            stack = "tcp" if i % 2 == 0 else "quic"
            cp = subprocess.run([TESTBED, "replay", "local-news", "--stack", stack, "--", "true"],
                                check=False, capture_output=True, text=True, timeout=120,
                                cwd=ROOT)
            assert "Traceback" not in cp.stderr, cp.stderr[-3000:]
            assert cp.returncode in (0, 1), cp.stderr[-2000:]
            codes.append(cp.returncode)
            if cp.returncode:
                reasons.append(cp.stderr.strip().splitlines()[-1][:160])
                # refused for the race, and only for it: root met a symlink where its
                # file should be, or a server (the testbed user's own) died on one
                assert RACE_REFUSAL.search(cp.stderr), cp.stderr[-2000:]
            assert attacker.poll() is None, attacker.stderr.read()
    finally:
        subprocess.run(["runuser", "-u", USER, "--", "touch", str(stop)], check=False)
        try:
            out, _ = attacker.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            attacker.kill()
            out, _ = attacker.communicate()
        shutil.rmtree(results, ignore_errors=True)
        runstate.release()
    replaced, planted, folders = (int(x) for x in out.split())
    print(f"{replays} replays ({codes.count(0)} ok, {codes.count(1)} refused); the testbed "
          f"user replaced {replaced} files and planted {planted} symlinks in {folders} of "
          f"its folders under {STATE_ROOT}", *sorted(set(reasons)), sep="\n", file=sys.stderr)
    after = canary.stat()
    assert canary.read_text() == "CANARY root only\n"
    assert (after.st_mode, after.st_mtime_ns, after.st_size, after.st_uid) == \
        (before.st_mode, before.st_mtime_ns, before.st_size, before.st_uid)
    assert sorted(os.listdir(secret)) == ["canary"], "root created a file through a symlink"
    # The race was real: the attacker reached the servers' folders of the replays.
    assert folders >= replays // 2 and replaced + planted > 0, (replaced, planted, folders)
