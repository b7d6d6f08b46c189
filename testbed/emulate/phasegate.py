"""Start mm-link until its two schedules start in phase, then let the command run.

mm-link builds its uplink and downlink queues in two processes; each takes
its schedule's start from its own clock reading, so the downlink schedule
starts a few ms before or after the uplink's (measured here: 0 in about 60 %
of starts on an idle machine, less under load; anything from -17 to +11 ms
otherwise). On a sparse link (DA2GC: one opportunity per 25.6 ms) an answer
that leaves the server right after an uplink opportunity waits for the next
downlink one, so every ms of that phase is a ms of RTT, different from one
shell start to the next. ShellChain.argv wraps the chain of a sparse profile
in this gate:

    python -m testbed.emulate.phasegate [--want 0] [--deadline 90] [--dir D] -- mm-link ... -- CMD

It runs as the testbed user, outermost. It adds --uplink-log/--downlink-log
to mm-link (unless given) and puts `flock --shared LOCK` in front of
mm-link's command while it holds LOCK exclusively, so the command waits.
Each log begins with a `# base timestamp:` line written when its queue is
built (mahimahi's LinkQueue takes it before reading the trace, both relative
to one initial timestamp taken before the two processes fork, so the
difference is the schedules' phase in whole ms). If the downlink schedule does
not start `want` ms after the uplink's, the gate stops that start and starts
the shells again; once it does, the gate releases LOCK and the command runs.

Every wait is bounded, and the gate never lets a start through that it has
not seen in phase:
- each start gets HEADER_WAIT_S for both headers; a start without them is
  stopped and counted like a start out of phase;
- stopping a start is SIGTERM to the outermost shell (Mahimahi then stops its
  children, removing its rules), then SIGKILL to the whole process group
  after STOP_WAIT_S, so no shell of a stopped start survives to run the
  command;
- all starts together get `deadline` seconds; after it the gate exits with
  status GAVE_UP and one line on stderr saying how many starts it made, the
  phases it saw and what it was waiting for when it gave up.
After the command ends the gate reads both headers again: had they changed
(another mm-link writing the same logs), it says so and exits GAVE_UP too.
The waiting part inside the shells is flock, a small C program: a Python
interpreter starting there competed for the CPU with mm-link's two processes
and made the phases spread further.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HEADER_WAIT_S = 5.0
"""How long one start may take to write both log headers (about 0.1 s here)."""
STOP_WAIT_S = 5.0
"""How long a stopped start's shells get to exit before they are killed."""
DEADLINE_S = 90.0
"""All starts together; the command's own run is not counted."""
PR_SET_CHILD_SUBREAPER = 36
GAVE_UP = 75
"""Exit status when no start came out in phase (EX_TEMPFAIL)."""


def base_timestamp(path: str) -> int | None:
    try:
        with open(path) as f:
            for _ in range(8):
                line = f.readline()
                if line.startswith("# base timestamp:") and line.endswith("\n"):
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


def phase_ms(up: str, down: str) -> int | None:
    """The downlink schedule's start minus the uplink's, if both logs say it."""
    a, b = base_timestamp(up), base_timestamp(down)
    return None if a is None or b is None else b - a


@dataclass
class Start:
    """What one start of the shells showed."""

    phase: int | None = None
    """None: the headers did not come (see `ended`)."""
    header_s: float = 0.0
    ended: str = ""
    """Why the start ended early: 'exited N' or 'no headers after S s'."""

    def __str__(self) -> str:
        return self.ended if self.phase is None else str(self.phase)


def _await_phase(p: subprocess.Popen, up: str, down: str, limit: float) -> Start:
    t0 = time.monotonic()
    deadline = t0 + limit
    while True:
        phase = phase_ms(up, down)
        if phase is not None:
            return Start(phase, time.monotonic() - t0)
        if p.poll() is not None:
            return Start(None, time.monotonic() - t0, f"exited {p.returncode}")
        if time.monotonic() >= deadline:
            return Start(None, limit, f"no headers after {limit:g} s")
        time.sleep(0.002)


def _end(p: subprocess.Popen) -> str:
    """Stop a start: SIGTERM to the outermost shell, SIGKILL after `grace`; then the
    same for whatever of it outlived the shell (the gate is their subreaper, so
    they are its children now). How it ended."""
    how, grace = "exited", STOP_WAIT_S
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            p.terminate()
        try:
            p.wait(grace)
            how = "stopped"
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            how = f"killed after {grace:g} s"
    until = time.monotonic() + grace
    while kids := _children():
        sig = signal.SIGTERM if time.monotonic() < until else signal.SIGKILL
        for pid in kids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        time.sleep(0.01)
        _reap()
        if time.monotonic() > until + grace:
            break
    return how


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if ppid == me:
                found.append(int(entry.name))
    return found


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _subreaper() -> None:
    """Orphans of a stopped start become the gate's children, not init's."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _lock(fd: int, until: float) -> bool:
    """The gate's lock, waiting until `until` at most (a stopped start's flock may
    still hold it shared for a moment)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= until:
                return False
            time.sleep(0.005)


def gave_up(starts: list[Start], elapsed: float, waiting: str) -> str:
    phases = ", ".join(map(str, starts)) or "none"
    return (f"phasegate: no start of mm-link in phase after {len(starts)} starts in "
            f"{elapsed:.1f} s (phases seen, ms: {phases}); gave up while {waiting}")


def run(argv: list[str], want: int = 0, deadline: float = DEADLINE_S,
        folder: str | None = None) -> int:
    work = tempfile.mkdtemp(prefix=f"tb-{os.environ.get('TESTBED_RUN', 'x')}-phase-",
                            dir=folder)
    lock = os.path.join(work, "go.lock")
    stop: list[int] = []
    child: list[subprocess.Popen] = []
    debug = bool(os.environ.get("TESTBED_PHASEGATE_DEBUG"))
    t0 = time.monotonic()
    until = t0 + deadline
    starts: list[Start] = []

    def forward(sig, _frame):
        stop.append(sig)
        for p in child:
            if p.poll() is None:
                p.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    _subreaper()
    try:
        while True:
            full, up, down = with_gate(argv, os.path.join(work, "uplink.log"),
                                       os.path.join(work, "downlink.log"), lock)
            for log in (up, down):  # a new start must not read the last one's header
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(log)
            gate = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited (PEP 446)
            try:
                if not _lock(gate, until):
                    print(gave_up(starts, time.monotonic() - t0, "waiting for the last "
                                  "start's shells to release the gate's lock"), file=sys.stderr)
                    return GAVE_UP
                p = subprocess.Popen(full, close_fds=False)
                child[:] = [p]
                wait = min(HEADER_WAIT_S, max(until - time.monotonic(), 0.5))
                start = _await_phase(p, up, down, wait)
                starts.append(start)
                if debug:
                    print(f"phasegate: start {len(starts)}: {start} "
                          f"({start.header_s * 1000:.0f} ms)", file=sys.stderr)
                if stop:
                    return p.wait()
                if start.phase is None and p.poll() is not None:
                    print(f"phasegate: mm-link's shells {start.ended} before both logs had a "
                          "header", file=sys.stderr)
                    return p.returncode or GAVE_UP
                if start.phase != want:
                    how = _end(p)
                    if time.monotonic() >= until:
                        print(gave_up(starts, time.monotonic() - t0,
                                      f"the last start ({start}) was {how}"), file=sys.stderr)
                        return GAVE_UP
                    continue
            finally:
                os.close(gate)  # releases the lock: the command starts
            status = p.wait()
            after = phase_ms(up, down)
            if after is not None and after != want:
                print(f"phasegate: mm-link's logs said phase {want} ms when the command was "
                      f"let run and {after} ms after it ended: another mm-link wrote {up}",
                      file=sys.stderr)
                return GAVE_UP
            return status
    finally:
        for p in child:
            _end(p)
        shutil.rmtree(work, ignore_errors=True)


def main(args: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m testbed.emulate.phasegate")
    ap.add_argument("--want", type=int, default=0,
                    help="ms the downlink schedule may start after the uplink's")
    ap.add_argument("--deadline", type=float, default=DEADLINE_S,
                    help="seconds all starts together may take before the gate gives up")
    ap.add_argument("--dir", help="where to keep mm-link's logs (default: $TMPDIR)")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if "mm-link" not in argv:
        ap.error("no mm-link in the command")
    sys.exit(run(argv, ns.want, ns.deadline, ns.dir))


if __name__ == "__main__":
    main()
