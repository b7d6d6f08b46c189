"""Subprocesses from argument lists; failures name the command and its status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from testbed.errors import CommandFailed, TimedOut
from testbed.host import safefs


def python(*args: str | os.PathLike[str],
           interpreter: str | os.PathLike[str] = sys.executable) -> list[str]:
    """The argv of the testbed's Python running `args` (`"-m", module, ...`, `"-c", code`
    or a script), isolated (`-I`): neither the current directory nor a script's folder,
    PYTHON* variables or the user's site-packages are on its path, so a folder root
    stands in (a shared /tmp, someone's recording) cannot shadow a module it imports.
    The one way the testbed starts a Python process."""
    return [str(interpreter), "-I", *map(str, args)]


def run(argv: Sequence[str | os.PathLike[str]], *, check: bool = True, timeout: float | None = 60,
        input: str | None = None, env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """Run argv to completion, capturing text output; CommandFailed if it fails."""
    argv = [str(a) for a in argv]
    try:
        cp = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, input=input,
                            env=env, cwd=cwd)
    except FileNotFoundError:
        raise CommandFailed(argv, 127, f"{argv[0]}: not found") from None
    except PermissionError:
        raise CommandFailed(argv, 126, f"{argv[0]}: not executable") from None
    except subprocess.TimeoutExpired:
        raise TimedOut(argv, timeout) from None
    if check and cp.returncode != 0:
        raise CommandFailed(argv, cp.returncode, cp.stderr or cp.stdout)
    return cp


def output(argv: Sequence[str | os.PathLike[str]], **kw: Any) -> str:
    out: str = run(argv, **kw).stdout
    return out.strip()


def version(argv: Sequence[str | os.PathLike[str]], *, timeout: float = 30) -> str | None:
    """A tool's version as it prints it (`chromium --version`, `nginx -v`): the first line
    of its output (stdout, else stderr); None when it cannot run, fails or says nothing.
    The one way the testbed reads versions (the doctor, the manifest, the workers). A
    tool named by its path runs only if root may run it (safefs.check_root_program:
    InputError otherwise, before anything runs)."""
    if os.sep in str(argv[0]):
        safefs.check_root_program(Path(argv[0]))
    try:
        cp = run(argv, check=False, timeout=timeout)
    except CommandFailed:
        return None
    text = (cp.stdout or cp.stderr).strip()
    return text.splitlines()[0] if cp.returncode == 0 and text else None


def call(argv: Sequence[str | os.PathLike[str]], *, env: dict[str, str] | None = None,
         forward: Sequence[signal.Signals] = ()) -> int:
    """Run argv in the foreground on this process's stdin, stdout and stderr, to its end;
    its exit status (127: not found). `forward`: signals passed on to it while it runs
    (their handlers here restored after)."""
    argv = [str(a) for a in argv]
    try:
        child = subprocess.Popen(argv, env=env)
    except FileNotFoundError:
        return 127
    before = {sig: signal.signal(sig, lambda s, _f: child.send_signal(s)) for sig in forward}
    try:
        return child.wait()
    except BaseException:  # Ctrl-C here: it does not outlive us (as subprocess.run)
        child.kill()
        child.wait()
        raise
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


class Background:
    """A process that runs while the `with` block runs, then is stopped.

    It leads its own process group, so stopping it stops its children too:
    SIGTERM, then SIGKILL after `grace` seconds. Output goes to `log` (a path)
    or is discarded.
    """

    def __init__(self, argv: Sequence[str | os.PathLike[str]], *, log: Path | None = None,
                 env: dict[str, str] | None = None, grace: float = 3.0,
                 cwd: str | os.PathLike[str] | None = None,
                 pass_fds: Sequence[int] = ()) -> None:
        self.argv = [str(a) for a in argv]
        self.pass_fds = tuple(pass_fds)
        self.log = log
        self.env = env
        self.grace = grace
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        # The log is root's own file, never opened through a symlink (see testbed.host.safefs).
        out = safefs.open_log(self.log) if self.log else None
        try:
            stdout = subprocess.DEVNULL if out is None else out
            self.proc = subprocess.Popen(self.argv, stdout=stdout,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env,
                                         start_new_session=True, cwd=self.cwd,
                                         pass_fds=self.pass_fds)
        except FileNotFoundError:
            raise CommandFailed(self.argv, 127, f"{self.argv[0]}: not found") from None
        finally:
            if out is not None:
                out.close()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            _signal_group(self.proc.pid, signal.SIGCONT)  # a stopped process acts on it too
            try:
                self.proc.wait(self.grace)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        else:
            _signal_group(self.proc.pid, signal.SIGKILL)  # leftover children of a dead leader
        return self.proc.returncode

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_for_log(self, text: str, what: str, timeout: float = 10.0) -> None:
        """Wait until the process's log contains `text` (its readiness line).

        TestbedError "`what` did not start: <log tail>" if it exits or the
        timeout passes first; the process is left to the caller's `with`.
        """
        from testbed.errors import TestbedError

        deadline = time.monotonic() + timeout
        while text not in (safefs.read_log(self.log) if self.log else ""):
            if not self.alive() or time.monotonic() > deadline:
                raise TestbedError(f"{what} did not start: {self.tail()}")
            time.sleep(0.02)

    def tail(self, lines: int = 20) -> str:
        if not self.log:
            return ""
        return "\n".join(safefs.read_log(self.log).splitlines()[-lines:])


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
