"""Run a command with an X display of its own: `python -m testbed.measure.xvfb -- argv`.

Xvfb picks a free display number itself (`-displayfd`), so several
measurements (or other users of Xvfb on the machine) never collide on a
fixed display. Every `{display}` in argv is replaced by that number (for
Browsertime's `--xvfbParams.display`, which its screen recorder reads), and
DISPLAY is set. Xvfb is stopped when the command ends; the command's exit
status is returned. SIGTERM and SIGINT are passed on to the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

SCREEN = "1920x1080x24"


def start_xvfb(screen: str = SCREEN) -> tuple[subprocess.Popen, str]:
    """Start Xvfb on a free display; returns the process and the display number."""
    r, w = os.pipe()
    try:
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", screen, "-nolisten", "tcp",
             "-noreset"],
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
    xvfb, display = start_xvfb()
    try:
        argv = [a.replace("{display}", display) for a in argv]
        child = subprocess.Popen(argv, env={**os.environ, "DISPLAY": f":{display}"})
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
