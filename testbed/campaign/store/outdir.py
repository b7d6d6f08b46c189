"""The results folder of a campaign: made safely, held by one runner, kept consistent.

    with outdir.claim(out):             # the folder exists, this process holds its lock
        with outdir.writing(out):       # a full or read-only disk: one line, exit 2
            outdir.reconcile(out, store)

- claim: creates the folder (a file in the way, a read-only or full disk is an
  InputError of one line) and holds `run.lock` in it with fcntl.flock, so a
  second `testbed run` into the same folder stops at once, naming the holder's
  pid. The lock goes with the process (killed or not); the file stays.
- reconcile: the store's rows are the truth. A trial's folder is renamed into
  trials/ inside the transaction that stores its row, so a folder without a row
  is what a process killed between the two left (or a staged video, a
  half-written temporary folder): removed. A row without its folder cannot be
  made by the runner; it stops the run.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed.errors import InputError

LOCK = "run.lock"
DISK_ERRORS: dict[int | None, str] = {errno.ENOSPC: "no space left on the device",
                                      errno.EDQUOT: "disk quota exceeded",
                                      errno.EROFS: "read-only file system",
                                      errno.EACCES: "permission denied",
                                      errno.EPERM: "operation not permitted"}
FULL_OR_READ_ONLY = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _disk_error(out: Path, e: OSError) -> InputError:
    what = DISK_ERRORS.get(e.errno, e.strerror or str(e))
    where = f" ({e.filename})" if e.filename else ""
    hint = ("; free space, then run the same command again to resume"
            if e.errno in (errno.ENOSPC, errno.EDQUOT) else "")
    return InputError(f"{out}: --out: cannot write{where}: {what}{hint}")


def prepare(out: Path) -> None:
    """Create the results folder (and its parents); InputError of one line if it cannot be."""
    for p in [out, *out.parents]:
        if p.is_symlink() and not p.exists():
            raise InputError(f"{out}: --out: {p} is a dangling symlink")
        if p.exists():
            if not p.is_dir():
                raise InputError(f"{out}: --out: expected a folder, but {p} is a file")
            break
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _disk_error(out, e) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise _disk_error(out, OSError(errno.EROFS if _read_only(out) else errno.EACCES, "",
                                       str(out)))


def _read_only(path: Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


@contextmanager
def claim(out: Path) -> Iterator[None]:
    """The results folder, created if missing, held by this process while the block runs."""
    prepare(out)
    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(f"{out}: --out: {path} is a symlink (expected the lock file "
                             "of a results folder)") from None
        raise _disk_error(out, e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise InputError(f"{out}: locked by testbed run pid {holder}") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:
            raise _disk_error(out, e) from None
        yield
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def writing(out: Path) -> Iterator[None]:
    """A disk that fills up or turns read-only under the block is an InputError of one line."""
    try:
        yield
    except OSError as e:
        if e.errno in FULL_OR_READ_ONLY:
            raise _disk_error(out, e) from None
        raise
    except sqlite3.OperationalError as e:
        text = str(e)
        if "disk is full" in text or "readonly" in text or "disk I/O error" in text:
            raise InputError(f"{out}: --out: cannot write the store: {text}; free space, "
                             "then run the same command again to resume") from None
        raise


def remove(path: Path) -> None:
    """Remove a file or folder without following symlinks."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def reconcile(trials: Path, stored: set[str]) -> list[str]:
    """Make trials/ hold exactly the stored trials' folders: what has no row is
    removed (its names returned); a row without its folder is an InputError."""
    removed = []
    for entry in sorted(trials.iterdir()):
        if entry.name not in stored or not entry.is_dir() or entry.is_symlink():
            remove(entry)
            removed.append(entry.name)
    missing = sorted(t for t in stored if not (trials / t).is_dir())
    if missing:
        raise InputError(f"{trials}: {len(missing)} stored trials have no folder (first: "
                         f"{missing[0]}): the store and the files disagree; restore the "
                         "folders or give another --out")
    return removed
