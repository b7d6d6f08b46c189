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
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from testbed.host import proc

SCREEN = "1920x1080x24"


@contextmanager
def xvfb(screen: str = SCREEN) -> Iterator[str]:
    """Xvfb on a free display while the block runs; yields the display number."""
    r, w = os.pipe()
    try:
        server = proc.Background(["Xvfb", "-displayfd", str(w), "-screen", "0", screen,
                                  "-nolisten", "tcp", "-noreset"], pass_fds=(w,), grace=5.0)
        with server:
            os.close(w)
            w = -1
            with os.fdopen(r) as f:
                r = -1
                display = f.readline().strip()
            if not display.isdigit():
                raise SystemExit(f"Xvfb did not start (exit status {server.stop()})")
            yield display
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)


def main(args: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if args is None else args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise SystemExit("usage: python -m testbed.measure.xvfb -- COMMAND [ARG...]")
    with xvfb() as display:
        return proc.call([a.replace("{display}", display) for a in argv],
                         env={**os.environ, "DISPLAY": f":{display}"},
                         forward=(signal.SIGTERM, signal.SIGINT))


if __name__ == "__main__":
    sys.exit(main())
