"""A table of a SQLite file read through the fd it was opened by, writing nothing.

The path is never given to SQLite: it opens /proc/self/fd/N, the file this
process already opened without following a symlink, read-only. SQLite turns
that into the file's real path and opens it again, so the file it opened is
checked to be the same one (a symlink put in its place meanwhile is refused).
A store without a write-ahead log is opened immutable (no lock, no -wal or -shm
file made beside it); a running campaign's store has one, which is read when
it and its -shm are regular files. The store's own SQL (a generated column, a
default) may call no function with side effects (trusted_schema off), no value
may be longer than MAX_VALUE, and a read stops after MAX_STEPS steps of SQLite's
machine.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.results_io import Folder, ResultsError, open_regular

if TYPE_CHECKING:
    import pandas as pd

MAX_VALUE = 16 << 20
"""Longest text or blob read from one cell (a trial's longest, max_in_flight, is ~1 kB)."""
MAX_STEPS = 10 ** 10
"""Most SQLite virtual-machine steps one read may take (a million trials take ~10^9)."""


def read_table(fd: int, path: Path, table: str, columns: Sequence[str], added: Sequence[str],
               cap: int) -> pd.DataFrame:
    """`columns` of `table` (a column of `added` missing from it: all NULL; the table
    missing: no rows), in rowid order; ResultsError if the file is not a store."""
    import pandas as pd

    size = os.fstat(fd).st_size
    if size > cap:
        raise ResultsError(f"{path}: {size} bytes; expected at most {cap}, not read")
    try:
        db = sqlite3.connect(_uri(fd, path), uri=True)
    except sqlite3.Error as e:
        raise ResultsError(f"{path}: cannot open as SQLite ({e})") from None
    try:
        _same_file(fd, path)
        _bounded(db)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if table not in tables:
            if table == "trials":
                raise ResultsError(f"{path}: cannot read table trials (no such table); "
                                   "expected a campaign store")
            return pd.DataFrame(columns=list(columns))
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        select = ", ".join(c if c in have else f"NULL AS {c}"
                           for c in columns if c in have or c in added)
        if not any(c in have for c in columns):  # then the loader names what is missing
            return pd.DataFrame()
        return pd.read_sql_query(f"SELECT {select} FROM {table}", db)
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        why = str(e.__cause__ or e)[:80]  # pandas wraps SQLite's error
        raise ResultsError(f"{path}: cannot read table {table} ({why})") from None
    finally:
        db.close()


def _bounded(db: sqlite3.Connection) -> None:
    """No side effects from the store's own SQL, no huge cell, no endless query."""
    db.execute("PRAGMA trusted_schema = OFF")
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE)
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return int(steps[0] * 100_000 > MAX_STEPS)  # non-zero: SQLite interrupts

    db.set_progress_handler(tick, 100_000)


def _uri(fd: int, path: Path) -> str:
    """The URI of the open file: immutable unless a write-ahead log is beside it."""
    uri = Path(f"/proc/self/fd/{fd}").as_uri()
    found = []
    with Folder(path.parent) as folder:
        for end in ("-wal", "-shm"):  # a symlink or FIFO here: refused
            beside = open_regular(folder.fd, path.name + end, path.with_name(path.name + end))
            if beside is not None:
                os.close(beside)
            found.append(beside is not None)
    return uri + ("?mode=ro" if found[0] else "?immutable=1")


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
