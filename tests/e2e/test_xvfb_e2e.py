"""The display a browser is measured on admits only the measurement: Xvfb started by
testbed.measure.xvfb, in a network namespace as a trial's is, serves the wrapped
command and listens where only its namespace can reach (an abstract socket; no file in
/tmp/.X11-unix, no TCP port), and refuses a client without the cookie."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
from support.needs import need, need_root

pytestmark = pytest.mark.e2e

TIMEOUT = 60  # seconds for the whole probe: Xvfb's start and three short clients

# Run inside `unshare -n` as the testbed user: the wrapper around a shell that asks the
# display three times (itself with the cookie; itself without it; then prints the
# display so the outside can try) and waits for the outside's try to finish.
# A client: exit status 0 if XOpenDisplay($DISPLAY) succeeds (libX11, Chromium's own).
OPEN = ("import ctypes, sys; x = ctypes.CDLL('libX11.so.6'); "
        "x.XOpenDisplay.restype = ctypes.c_void_p; sys.exit(0 if x.XOpenDisplay(None) else 1)")

PROBE = "OPEN = " + repr(OPEN) + "\n" + textwrap.dedent("""\
    import subprocess, sys, os
    d = os.environ["DISPLAY"]
    def ask(env):
        return subprocess.run([sys.executable, "-c", OPEN], env=env, capture_output=True,
                              timeout=20).returncode
    print("with-cookie", ask(dict(os.environ)), flush=True)
    print("without-cookie", ask({k: v for k, v in os.environ.items() if k != "XAUTHORITY"}),
          flush=True)
    print("display", d, flush=True)
    sys.stdin.readline()
""")


def listening(pid: int) -> tuple[list[str], list[str]]:
    """The Unix socket paths and the TCP ports a process holds, read in its own network
    namespace (/proc/PID/net)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    unix = [row.split()[7] for row in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]
            if len(row.split()) >= 8 and row.split()[6] in inodes]
    tcp = [row.split()[1] for name in ("tcp", "tcp6")
           for row in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
           if row.split()[9] in inodes]
    return unix, tcp


def read_lines(p: subprocess.Popen, count: int) -> list[list[str]]:
    """The probe's first `count` lines, split; fails naming the line it waited for when
    they do not come within TIMEOUT seconds (Xvfb did not start, or a client hung)."""
    lines: list[list[str]] = []

    def read() -> None:
        for _ in range(count):
            lines.append(p.stdout.readline().split())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(TIMEOUT)
    if reader.is_alive():
        p.kill()
        pytest.fail(f"waited {TIMEOUT} s for the probe's line {len(lines) + 1} of {count} "
                    f"(with-cookie, without-cookie, display); got {lines}")
    return lines


def outside_connect(name: str) -> str:
    """What a connect() from this process's network namespace to the abstract Unix socket
    `name` (with its leading @) gets: the exception's name, or "connected"."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        try:
            s.connect("\0" + name[1:])
        except OSError as e:
            return type(e).__name__
    return "connected"


def test_only_the_wrapped_command_reaches_the_display(readable_tmp):
    need_root()
    need(None if shutil.which("Xvfb") else "needs Xvfb (make setup)")
    tmp_path = readable_tmp
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    probe.chmod(0o644)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    shutil.chown(tmp, "testbed")
    wrapper = ["unshare", "-n", "runuser", "-u", "testbed", "--", "env", f"TMPDIR={tmp}",
               sys.executable, "-m", "testbed.measure.xvfb", "--", sys.executable, str(probe)]
    with subprocess.Popen(wrapper, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          cwd=str(tmp)) as p:
        try:
            lines = read_lines(p, 3)
            assert lines[0] == ["with-cookie", "0"], lines
            assert lines[1][0] == "without-cookie" and lines[1][1] != "0", lines
            assert lines[2][0] == "display" and lines[2][1].startswith(":"), lines
            xvfb = next(c for c in psutil.Process(p.pid).children(recursive=True)
                        if c.name() == "Xvfb")
            unix, tcp = listening(xvfb.pid)
            # Only Linux's abstract socket, which belongs to the trial's network
            # namespace; no socket file in /tmp/.X11-unix, no TCP port.
            assert unix and all(path.startswith("@") for path in unix), unix
            assert not tcp, tcp
            # From outside the namespace (this process, the host's), the display's
            # abstract socket, by the very name Xvfb holds, cannot be reached.
            name = f"@/tmp/.X11-unix/X{lines[2][1][1:]}"
            assert name in unix, (name, unix)
            assert outside_connect(name) in ("ConnectionRefusedError", "FileNotFoundError")
            private = list(tmp.iterdir())  # the cookie's folder, its user's alone
            assert [f.name[:6] for f in private] == ["xauth-"], private
            assert private[0].stat().st_mode & 0o077 == 0
            p.stdin.write("\n")
            p.stdin.flush()
            assert p.wait(TIMEOUT) == 0
        finally:
            if p.poll() is None:
                p.kill()
    assert not list(tmp.iterdir()), "the cookie's folder was left behind"
