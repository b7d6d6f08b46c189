"""Start mm-link until its two schedules start in phase, then run the command.

mm-link builds its uplink and downlink queues in two processes; each takes
its schedule's start from its own clock reading, so the downlink schedule
starts a few ms before or after the uplink's (measured here: 0 in about 60 %
of starts, +1 in 20 %, anything from -17 to +11 ms otherwise). On a sparse
link (DA2GC: one opportunity per 25.6 ms) an answer that leaves the server
right after an uplink opportunity waits for the next downlink one, so every
ms of that phase is a ms of RTT, different from one shell start to the
next. ShellChain.argv wraps the chain of a sparse profile in this gate:

    python -m testbed.emulate.phasegate outer [--want 0] [--tries 12] [--dir D] -- mm-link ... -- CMD

The outer part (the outermost process, as the testbed user) adds
--uplink-log/--downlink-log to mm-link (unless given) and puts the inner part
in front of mm-link's command. The inner part, the first thing to run inside
mm-link, reads the `# base timestamp:` line each log starts with; if the
downlink schedule does not start `want` ms after the uplink's it leaves a
note and exits, the shells close, and the outer part starts them again;
otherwise it execs the command. After `tries` starts the last one is taken
whatever its phase. Only the standard library: it starts fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REJECTED = "rejected"
HEADER_TIMEOUT = 20.0


def base_timestamp(path: str) -> int | None:
    try:
        with open(path) as f:
            for _ in range(8):
                line = f.readline()
                if line.startswith("# base timestamp:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def with_gate(argv: list[str], uplink_log: str, downlink_log: str, verdict: str, want: int,
              accept_any: bool) -> list[str]:
    """argv (shells ending in mm-link ... -- CMD) with mm-link's logs and the inner gate."""
    i = argv.index("mm-link")
    j = argv.index("--", i)
    link = argv[i:j]
    if not any(a.startswith("--uplink-log=") for a in link):
        link.append(f"--uplink-log={uplink_log}")
    if not any(a.startswith("--downlink-log=") for a in link):
        link.append(f"--downlink-log={downlink_log}")
    up = next(a.split("=", 1)[1] for a in link if a.startswith("--uplink-log="))
    down = next(a.split("=", 1)[1] for a in link if a.startswith("--downlink-log="))
    inner = [sys.executable, "-m", "testbed.emulate.phasegate", "inner", "--uplink-log", up,
             "--downlink-log", down, "--verdict", verdict, "--want", str(want)]
    if accept_any:
        inner.append("--accept-any")
    return [*argv[:i], *link, "--", *inner, "--", *argv[j + 1:]]


def outer(argv: list[str], want: int, tries: int, folder: str | None) -> int:
    work = tempfile.mkdtemp(prefix=f"tb-{os.environ.get('TESTBED_RUN', 'x')}-phase-",
                            dir=folder)
    stop: list[int] = []
    child: list[subprocess.Popen] = []

    def forward(sig, _frame):
        stop.append(sig)
        for p in child:
            if p.poll() is None:
                p.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        rc = 1
        for attempt in range(1, tries + 1):
            verdict = os.path.join(work, f"verdict-{attempt}")
            full = with_gate(argv, os.path.join(work, "uplink.log"),
                             os.path.join(work, "downlink.log"), verdict, want,
                             accept_any=attempt == tries)
            p = subprocess.Popen(full, close_fds=False)
            child[:] = [p]
            rc = p.wait()
            if stop or not os.path.exists(verdict):
                return rc
            with open(verdict) as f:
                if f.read().strip() != REJECTED:
                    return rc
        return rc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def inner(uplink_log: str, downlink_log: str, verdict: str, want: int, accept_any: bool,
          command: list[str]) -> None:
    deadline = time.monotonic() + HEADER_TIMEOUT
    while True:
        up, down = base_timestamp(uplink_log), base_timestamp(downlink_log)
        if up is not None and down is not None:
            break
        if time.monotonic() > deadline:
            sys.exit(f"phasegate: no base timestamp in {uplink_log} and {downlink_log}")
        time.sleep(0.005)
    phase = down - up
    if phase != want and not accept_any:
        with open(verdict, "w") as f:
            f.write(REJECTED)
        sys.exit(0)
    with open(verdict, "w") as f:
        f.write(f"phase {phase:+d}")
    os.execvp(command[0], command)


def main(args: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.emulate.phasegate")
    sub = ap.add_subparsers(dest="part", required=True)
    o = sub.add_parser("outer")
    o.add_argument("--want", type=int, default=0)
    o.add_argument("--tries", type=int, default=12)
    o.add_argument("--dir", help="where to keep mm-link's logs (default: $TMPDIR)")
    o.add_argument("argv", nargs=argparse.REMAINDER)
    i = sub.add_parser("inner")
    i.add_argument("--uplink-log", required=True)
    i.add_argument("--downlink-log", required=True)
    i.add_argument("--verdict", required=True)
    i.add_argument("--want", type=int, default=0)
    i.add_argument("--accept-any", action="store_true")
    i.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        ap.error("no command")
    if ns.part == "outer":
        sys.exit(outer(argv, ns.want, ns.tries, ns.dir))
    inner(ns.uplink_log, ns.downlink_log, ns.verdict, ns.want, ns.accept_any, argv)


if __name__ == "__main__":
    main()
