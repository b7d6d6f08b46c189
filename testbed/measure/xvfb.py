"""Run a command with an X display of its own: `python -m testbed.measure.xvfb -- argv`.

Xvfb picks a free display number itself (`-displayfd`), so several
measurements (or other users of Xvfb on the machine) never collide on a
fixed display. Every `{display}` in argv is replaced by that number (for
Browsertime's `--xvfbParams.display`, which its screen recorder reads), and
DISPLAY is set. Xvfb is stopped when the command ends; the command's exit
status is returned. SIGTERM and SIGINT are passed on to the command.

Nobody else may draw on, read or type into the display the browser is measured
on. Xvfb listens on no TCP port and on no socket file in /tmp/.X11-unix (which
every local account can open), only on Linux's abstract socket, which belongs to
the network namespace it runs in (the trial's). And it admits only clients that
hold a random cookie (MIT-MAGIC-COOKIE-1), written to an Xauthority file in a
folder only the wrapper's user can enter and passed on as XAUTHORITY.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

SCREEN = "1920x1080x24"
FAMILY_WILD = 0xFFFF  # an Xauthority entry for any address
COOKIE = b"MIT-MAGIC-COOKIE-1"


def xauthority(path: Path, cookie: bytes) -> None:
    """Write an Xauthority file of one entry: `cookie` for any address and display.
    The format (Xau's: a family, then address, display number, method name and data,
    each a big-endian 16-bit length and its bytes) is five fields; xauth(1) would
    need a display number before Xvfb has picked one."""
    fields = [b"", b"", COOKIE, cookie]  # address, display (any), name, data
    body = struct.pack(">H", FAMILY_WILD) + b"".join(
        struct.pack(">H", len(f)) + f for f in fields)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)


def start_xvfb(auth: Path, screen: str = SCREEN) -> tuple[subprocess.Popen, str]:
    """Start Xvfb on a free display, admitting the holders of the cookie in the
    Xauthority file `auth`; returns the process and the display number."""
    r, w = os.pipe()
    try:
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", screen, "-nolisten", "tcp",
             "-nolisten", "unix", "-auth", str(auth), "-noreset"],
            pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    finally:
        os.close(w)
    with os.fdopen(r) as f:
        display = f.readline().strip()
    if not display.isdigit():
        xvfb.kill()
        xvfb.wait()
        raise SystemExit(f"Xvfb did not start (exit status {xvfb.poll()})")
    return xvfb, display


def main(args: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if args is None else args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise SystemExit("usage: python -m testbed.measure.xvfb -- COMMAND [ARG...]")
    private = Path(tempfile.mkdtemp(prefix="xauth-"))  # 0700, in the trial's TMPDIR
    auth = private / "Xauthority"
    xauthority(auth, secrets.token_bytes(16))
    try:
        return _run(argv, auth)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _run(argv: list[str], auth: Path) -> int:
    xvfb, display = start_xvfb(auth)
    try:
        argv = [a.replace("{display}", display) for a in argv]
        child = subprocess.Popen(argv, env={**os.environ, "DISPLAY": f":{display}",
                                            "XAUTHORITY": str(auth)})
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda s, _f: child.send_signal(s))
        return child.wait()
    finally:
        xvfb.terminate()
        try:
            xvfb.wait(5)
        except subprocess.TimeoutExpired:
            xvfb.kill()
            xvfb.wait()


if __name__ == "__main__":
    sys.exit(main())
