"""Start mm-link until its two schedules start in phase, then let the command run.

mm-link builds its uplink and downlink queues in two processes; each takes
its schedule's start from its own clock reading, so the downlink schedule
starts a few ms before or after the uplink's (measured here: 0 in about 60 %
of starts, +1 in 20 %, anything from -17 to +11 ms otherwise). On a sparse
link (DA2GC: one opportunity per 25.6 ms) an answer that leaves the server
right after an uplink opportunity waits for the next downlink one, so every
ms of that phase is a ms of RTT, different from one shell start to the
next. ShellChain.argv wraps the chain of a sparse profile in this gate:

    python -m testbed.emulate.phasegate [--want 0] [--tries 12] [--dir D] -- mm-link ... -- CMD

It runs as the testbed user, outermost. It adds --uplink-log/--downlink-log
to mm-link (unless given) and puts `flock --shared LOCK` in front of
mm-link's command while it holds LOCK exclusively, so the command waits.
Each log begins with a `# base timestamp:` line written when its queue is
built; if the downlink schedule does not start `want` ms after the uplink's,
the gate ends that start (SIGTERM to the shells) and starts them again;
otherwise it releases LOCK and the command runs. After `tries` starts the
last one is kept whatever its phase. The waiting part inside the shells is
flock, a small C program: a Python interpreter starting there competed for
the CPU with mm-link's two processes and made the phases spread further.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

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


def with_gate(argv: list[str], uplink_log: str, downlink_log: str, lock: str,
              ) -> tuple[list[str], str, str]:
    """argv (shells ending in mm-link ... -- CMD) with mm-link's logs and flock in front
    of its command; also the two log paths in use."""
    i = argv.index("mm-link")
    j = argv.index("--", i)
    link = argv[i:j]
    if not any(a.startswith("--uplink-log=") for a in link):
        link.append(f"--uplink-log={uplink_log}")
    if not any(a.startswith("--downlink-log=") for a in link):
        link.append(f"--downlink-log={downlink_log}")
    up = next(a.split("=", 1)[1] for a in link if a.startswith("--uplink-log="))
    down = next(a.split("=", 1)[1] for a in link if a.startswith("--downlink-log="))
    wait = ["flock", "--shared", "--no-fork", lock]
    return [*argv[:i], *link, "--", *wait, *argv[j + 1:]], up, down


def _phase(p: subprocess.Popen, up: str, down: str) -> int | None:
    """The downlink schedule's start minus the uplink's, once both logs say it."""
    deadline = time.monotonic() + HEADER_TIMEOUT
    while time.monotonic() < deadline and p.poll() is None:
        a, b = base_timestamp(up), base_timestamp(down)
        if a is not None and b is not None:
            return b - a
        time.sleep(0.002)
    return None


def _end(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run(argv: list[str], want: int = 0, tries: int = 12, folder: str | None = None) -> int:
    work = tempfile.mkdtemp(prefix=f"tb-{os.environ.get('TESTBED_RUN', 'x')}-phase-",
                            dir=folder)
    lock = os.path.join(work, "go.lock")
    stop: list[int] = []
    child: list[subprocess.Popen] = []
    debug = bool(os.environ.get("TESTBED_PHASEGATE_DEBUG"))

    def forward(sig, _frame):
        stop.append(sig)
        for p in child:
            if p.poll() is None:
                p.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        for attempt in range(1, tries + 1):
            full, up, down = with_gate(argv, os.path.join(work, "uplink.log"),
                                       os.path.join(work, "downlink.log"), lock)
            for log in (up, down):  # a new start must not read the last one's header
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(log)
            gate = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited (PEP 446)
            fcntl.flock(gate, fcntl.LOCK_EX)
            try:
                p = subprocess.Popen(full, close_fds=False)
                child[:] = [p]
                phase = _phase(p, up, down)
                if debug:
                    print(f"phasegate: start {attempt}: phase {phase}", file=sys.stderr)
                if stop or p.poll() is not None:
                    return p.wait()
                if phase is not None and phase != want and attempt < tries:
                    _end(p)
                    continue
            finally:
                os.close(gate)  # releases the lock: the command starts
            return p.wait()
        return 1
    finally:
        for p in child:
            _end(p)
        shutil.rmtree(work, ignore_errors=True)


def main(args: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.emulate.phasegate")
    ap.add_argument("--want", type=int, default=0,
                    help="ms the downlink schedule may start after the uplink's")
    ap.add_argument("--tries", type=int, default=12)
    ap.add_argument("--dir", help="where to keep mm-link's logs (default: $TMPDIR)")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if "mm-link" not in argv:
        ap.error("no mm-link in the command")
    sys.exit(run(argv, ns.want, ns.tries, ns.dir))


if __name__ == "__main__":
    main()
