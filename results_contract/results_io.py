"""Files of a results folder that may be hostile: the one place they are opened.

A results folder (or an export) comes from someone else and the reader may be
root (`testbed report`, `compare`, `trial`, `export`). Whoever wrote it could
have planted a symlink to a file of the host, a FIFO, a gzip bomb, JSON nested
thousands deep or a file bigger than this machine can hold. So, below the
folder the user named, every folder and file is opened one step at a time with
O_NOFOLLOW (a symlink is refused, never followed), only a regular file is
read, and only up to a cap; gzip is inflated up to a cap; JSON is parsed only
up to MAX_DEPTH levels. Every problem is a ResultsError of one line naming the
file and what was expected.

    with Folder(Path("results/paper")) as f:
        manifest = f.json("manifest.json")         # None when absent
        fd = f.open("trials", trial_id, "video.mp4")
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any, Self


class ResultsError(ValueError):
    """A source that is not a readable campaign store or export; names the file and the fix."""


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

MAX_FILE = 64 << 20
"""Most bytes read from one kept file (a HAR is about 100 kB gzipped)."""
MAX_JSON = 32 << 20
"""Most bytes of JSON parsed from one file (after gunzip): parsed, JSON takes up to
JSON_BLOWUP times its size in memory (`[{},{},...]`)."""
JSON_BLOWUP = 32
MAX_DEPTH = 64
"""Deepest nesting of JSON objects and arrays read (a HAR nests 6 deep, a manifest 5)."""


def memory_cap(limit: int, blowup: int) -> int:
    """`limit`, or less when this machine's available memory could not hold `blowup`
    times as much."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return limit
    return min(limit, max(1 << 20, available // blowup))


def step(dirfd: int, name: str, flags: int, path: Path) -> int | None:
    """`name` opened below `dirfd` without following a symlink; None if absent."""
    try:
        return os.open(name, flags, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP (a symlink), ENOTDIR, ENXIO
        raise ResultsError(f"{path}: a symlink or not a regular file or folder "
                           f"({e.strerror}); not read") from None


class Folder:
    """The folder the user named (followed if a symlink: the user chose it), and what
    is below it, never through a symlink."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def fd(self) -> int:
        """The folder's descriptor, while the `with` block runs."""
        assert self._fd is not None, "entered first"
        return self._fd

    def __enter__(self) -> Self:
        try:
            self._fd = os.open(self.path, DIR_FLAGS & ~os.O_NOFOLLOW)
        except FileNotFoundError:
            raise ResultsError(f"{self.path}: no such file or folder") from None
        except OSError as e:
            raise ResultsError(f"{self.path}: cannot open the folder ({e.strerror})") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def folder(self, *parts: str) -> int | None:
        """An fd of the folder `parts` below this one (the caller closes it); None if
        one of them is absent."""
        fd = os.dup(self.fd)
        for i, part in enumerate(parts):
            try:
                nxt = step(fd, part, DIR_FLAGS, self.path.joinpath(*parts[:i + 1]))
            finally:
                os.close(fd)
            if nxt is None:
                return None
            fd = nxt
        return fd

    def open(self, *parts: str) -> int | None:
        """An fd of the regular file `parts` below this folder (the caller closes it),
        None if it is not there; ResultsError for a symlink, FIFO or folder."""
        dirfd = self.folder(*parts[:-1])
        if dirfd is None:
            return None
        try:
            return open_regular(dirfd, parts[-1], self.path.joinpath(*parts))
        finally:
            os.close(dirfd)

    def read(self, *parts: str, limit: int = MAX_FILE) -> bytes | None:
        """The bytes of the file `parts` (at most `limit`), None if it is not there."""
        fd = self.open(*parts)
        return None if fd is None else read_fd(fd, self.path.joinpath(*parts), limit)

    def json(self, *parts: str) -> Any:
        """The JSON in the file `parts` (gunzipped when it ends in .gz), None if absent."""
        path = self.path.joinpath(*parts)
        cap = memory_cap(MAX_JSON, JSON_BLOWUP)
        raw = self.read(*parts, limit=MAX_FILE if path.name.endswith(".gz") else cap)
        if raw is None:
            return None
        if path.name.endswith(".gz"):
            raw = gunzip(raw, cap, path)
        return parse_json(raw, path)


def open_regular(dirfd: int, name: str, path: Path) -> int | None:
    """`name` below `dirfd` if it is a regular file (not followed if a symlink)."""
    fd = step(dirfd, name, FILE_FLAGS, path)
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResultsError(f"{path}: not a regular file; not read")
    return fd


def read_fd(fd: int, path: Path, limit: int) -> bytes:
    """At most `limit` bytes of `fd` (closed); ResultsError when there are more."""
    with os.fdopen(fd, "rb") as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise ResultsError(f"{path}: more than {limit} bytes; expected a smaller file, not read")
    return raw


def gunzip(raw: bytes, limit: int, path: Path) -> bytes:
    """`raw` inflated, at most `limit` bytes of it (a gzip bomb stops there)."""
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = inflater.decompress(raw, limit)
    except zlib.error as e:
        raise ResultsError(f"{path}: not gzip ({e})") from None
    if inflater.unconsumed_tail:
        raise ResultsError(f"{path}: inflates to more than {limit} bytes; not read")
    return out


def parse_json(raw: bytes, path: Path) -> Any:
    """`raw` parsed as JSON nested at most MAX_DEPTH deep."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels; "
                           "not read") from None
    except ValueError as e:  # also not UTF-8
        raise ResultsError(f"{path}: not JSON ({str(e)[:80]})") from None
    if depth(data) > MAX_DEPTH:
        raise ResultsError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels; not read")
    return data


def depth(value: Any) -> int:
    """How deep lists and dicts nest in `value` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is None:
            continue
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in children if isinstance(c, dict | list))
    return deepest
