"""Errors the command line turns into one line and an exit code."""

from __future__ import annotations

import os
from collections.abc import Sequence


class TestbedError(Exception):
    """A failure the user can act on; printed as one line, exit 1."""

    exit_code = 1


class InputError(TestbedError):
    """Bad input (a file, a key, a value): printed as one line, exit 2, nothing written.

    The message names the file, the key and what was expected.
    """

    exit_code = 2


class CommandFailed(TestbedError):
    """A subprocess failed; the message names the command and its exit status."""

    def __init__(self, argv: Sequence[str | os.PathLike[str]], returncode: int,
                 stderr: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-1] if stderr and stderr.strip() else ""
        msg = f"`{' '.join(map(str, self.argv))}` exited with status {returncode}"
        super().__init__(msg + (f": {tail}" if tail else ""))


class TimedOut(CommandFailed):
    """A subprocess ran longer than its timeout (and was killed)."""

    def __init__(self, argv: Sequence[str | os.PathLike[str]], timeout: float | None) -> None:
        self.timeout = timeout
        super().__init__(argv, -1, f"timed out after {timeout} s")
