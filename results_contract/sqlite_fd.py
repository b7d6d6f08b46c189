"""A SQLite file someone else wrote, read through the fd it was opened by, writing
nothing: the one opener of such a store (the analysis commands, and the testbed's
checkpoint, resume and version check).

    with Reader.of(path) as db:          # or Reader(fd, path) for an fd opened already
        db.objects()                     # what its sqlite_master holds
        db.rows("SELECT ...", params)    # every row; db.each(...) one at a time

The path is never given to SQLite: it opens /proc/self/fd/N, the file this
process already opened without following a symlink, read-only. SQLite turns
that into the file's real path and opens it again, so the file it opened is
checked to be the same one (a symlink put in its place meanwhile is refused).
A store without a write-ahead log is opened immutable (no lock, no -wal or -shm
file made beside it); a running campaign's store has one, which is read when
it and its -shm are regular files. The store's own SQL (a generated column, a
default, a view) may call no function with side effects (trusted_schema off),
no value may be longer than MAX_VALUE, no statement attach another file, and a
connection stops after its step budget of SQLite's machine (steps(): MIN_STEPS,
or STEPS_PER_BYTE per byte of the file and its log, whichever is more). A signal's
handler that raises (Ctrl-C; the command line's SIGTERM) stops the query at once
and KeyboardInterrupt is raised, not SQLite's "interrupted" as an error. Every other
problem is one ResultsError naming the file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from results_contract.results_io import Folder, ResultsError, open_regular
from results_contract.schema import select_list, stored_name

if TYPE_CHECKING:
    import pandas as pd

MAX_VALUE = 16 << 20
"""Longest text or blob read from one cell (a trial's longest, max_in_flight, is ~1 kB)."""
MAX_SQL = 1 << 20
"""Longest statement parsed, the store's own schema included."""
MAX_STORE = 8 << 30
"""Largest store (with its write-ahead log) opened; the reference campaign's is 20 MB."""
MIN_STEPS = 10 ** 8
"""Steps of SQLite's machine any store's connection may take (about a second)."""
STEPS_PER_BYTE = 100
"""... and more per byte of a larger one: reading every row of a store takes less than
one step per byte."""
CHECK_EVERY = 10_000
"""Steps between two calls of the progress handler."""


def steps(size: int) -> int:
    """The step budget of a connection to a store of `size` bytes."""
    return max(MIN_STEPS, STEPS_PER_BYTE * size)


class Reader:
    """A bounded, read-only connection to the SQLite file `fd` (named `path` in messages);
    closes `fd` when the `with` block ends if it `owns` it."""

    def __init__(self, fd: int, path: Path, cap: int = MAX_STORE, owns: bool = True) -> None:
        self.fd, self.path, self.cap, self.owns = fd, Path(path), cap, owns
        self._db: sqlite3.Connection | None = None
        self._steps = 0
        self._budget = 0

    @classmethod
    def of(cls, path: Path, cap: int = MAX_STORE) -> Reader:
        """The store at `path` (its folder followed if a symlink: the user named it; the
        file never); ResultsError if it is missing, a symlink or not a regular file."""
        path = Path(path)
        with Folder(path.parent) as folder:
            fd = open_regular(folder.fd, path.name, path)
        if fd is None:
            raise ResultsError(f"{path}: no such file")
        return cls(fd, path, cap)

    def __enter__(self) -> Self:
        try:
            size = os.fstat(self.fd).st_size + (_log_size(self.path) or 0)
            if size > self.cap:
                raise ResultsError(f"{self.path}: {size} bytes; expected at most {self.cap}, "
                                   "not read")
            try:
                self._db = sqlite3.connect(_uri(self.fd, self.path), uri=True)
            except sqlite3.Error as e:
                raise ResultsError(f"{self.path}: cannot open as SQLite ({e})") from None
            _same_file(self.fd, self.path)
            self._bound(steps(size))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self.owns and self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def _bound(self, budget: int) -> None:
        """No side effects from the store's own SQL, no huge cell or statement, no other
        file attached, no query past `budget` steps."""
        db = self._db
        assert db is not None
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA query_only = ON")
        db.execute("PRAGMA mmap_size = 0")
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE)
        db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL)
        db.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._budget = budget
        db.set_progress_handler(self._tick, CHECK_EVERY)

    def _tick(self) -> int:
        """Non-zero: SQLite interrupts the query."""
        self._steps += CHECK_EVERY
        return int(self._steps > self._budget)

    def _failed(self, e: sqlite3.Error, what: str) -> BaseException:
        """What to raise for SQLite's error `e`. A signal's handler runs in _tick (the
        Python code SQLite calls); what it raises there (KeyboardInterrupt: Ctrl-C, or
        the command line's SIGTERM) SQLite cannot carry: the query stops as interrupted
        within the budget, and KeyboardInterrupt is raised again."""
        if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
            if self._steps <= self._budget:
                return KeyboardInterrupt()
            return ResultsError(f"{self.path}: {what}: stopped after {self._budget} steps; "
                                "expected a store that reads in fewer, not read")
        return ResultsError(f"{self.path}: {what} ({str(e)[:120]}); expected a campaign store")

    def each(self, sql: str, params: Sequence[Any] = (), what: str = "cannot read it"
             ) -> Iterator[tuple[Any, ...]]:
        """The rows of `sql`, one at a time."""
        assert self._db is not None, "entered first"
        try:
            cursor = self._db.execute(sql, params)
            while True:
                batch = cursor.fetchmany(1000)
                if not batch:
                    return
                yield from batch
        except sqlite3.Error as e:
            raise self._failed(e, what) from None

    def rows(self, sql: str, params: Sequence[Any] = (), what: str = "cannot read it"
             ) -> list[tuple[Any, ...]]:
        """Every row of `sql`."""
        return list(self.each(sql, params, what))

    def objects(self, what: str = "cannot read its schema") -> list[tuple[str, str, str]]:
        """(type, name, table) of everything in its sqlite_master, in its order."""
        return [(str(t), str(n), str(tbl)) for t, n, tbl in self.rows(
            "SELECT type, name, tbl_name FROM sqlite_master", what=what)]

    def tables(self, what: str = "cannot read its schema") -> set[str]:
        return {name for kind, name, _ in self.objects(what) if kind == "table"}

    def columns(self, table: str) -> list[str]:
        """The columns of `table` (a name of tables()), in order."""
        return [str(r[1]) for r in self.rows(f'PRAGMA table_info("{table}")',
                                             what=f"cannot read table {table}")]


def read_table(fd: int, path: Path, table: str, columns: Sequence[str], added: Sequence[str],
               cap: int) -> pd.DataFrame:
    """`columns` of `table` (a column of `added` missing from it: all NULL; the table
    missing: no rows), in rowid order; ResultsError if the file is not a store. `fd`
    stays open."""
    import pandas as pd

    with Reader(fd, path, cap, owns=False) as db:
        if table not in db.tables(what=f"cannot read table {table}"):
            if table == "trials":
                raise ResultsError(f"{path}: cannot read table trials (no such table); "
                                   "expected a campaign store")
            return pd.DataFrame(columns=list(columns))
        have = set(db.columns(table))
        if not any(stored_name(c, have) for c in columns):  # the loader names what is missing
            return pd.DataFrame()
        wanted = [c for c in columns if stored_name(c, have) or c in added]
        select = select_list(wanted, have)  # an old name read as its new one
        rows = db.rows(f"SELECT {select} FROM {table}", what=f"cannot read table {table}")
        return pd.DataFrame.from_records(rows, columns=wanted, coerce_float=True)


def _uri(fd: int, path: Path) -> str:
    """The URI of the open file: immutable unless a write-ahead log is beside it."""
    uri = Path(f"/proc/self/fd/{fd}").as_uri()
    return uri + ("?mode=ro" if _log_size(path) is not None else "?immutable=1")


def _log_size(path: Path) -> int | None:
    """The size of the write-ahead log beside `path`, None without one; ResultsError if
    it or its -shm is a symlink, a FIFO or anything but a regular file."""
    found = []
    with Folder(path.parent) as folder:
        for end in ("-wal", "-shm"):
            beside = open_regular(folder.fd, path.name + end, path.with_name(path.name + end))
            if beside is not None:
                found.append(os.fstat(beside).st_size)
                os.close(beside)
            elif end == "-wal":
                return None
    return found[0]


def _same_file(fd: int, path: Path) -> None:
    """SQLite opened the file `fd` is: another fd of this process refers to it (SQLite's;
    it may reuse one it kept from an earlier connection to the same file)."""
    st = os.fstat(fd)
    for name in os.listdir("/proc/self/fd"):
        try:
            other = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if int(name) != fd and (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return
    raise ResultsError(f"{path}: replaced while being opened (a symlink?); not read")
