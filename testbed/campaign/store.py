"""The campaign store: one SQLite row per finished trial (see the results contract).

    with Store(results / "trials.sqlite") as store:
        store.finished()               # trial ids already stored (resume skips them)
        store.add(row)                 # one transaction: the whole row or nothing
        with store.adding(row): ...    # ... with what the block does (the trial's files)

WAL journal, so a reader (the analysis, `testbed results`) never blocks the
runner and a killed runner never leaves a half-written row. The trial id is
the primary key: a trial is stored once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Self

COLUMNS = (
    ("trial_id", "TEXT PRIMARY KEY"),
    ("campaign", "TEXT NOT NULL"),
    ("site", "TEXT NOT NULL"),
    ("network", "TEXT NOT NULL"),
    ("protocol", "TEXT NOT NULL"),
    ("run", "INTEGER NOT NULL"),
    ("status", "TEXT NOT NULL CHECK (status IN ('ok', 'failed'))"),
    ("reason", "TEXT"),
    ("attempt", "INTEGER NOT NULL"),
    ("started_at", "TEXT NOT NULL"),
    ("wall_s", "REAL NOT NULL"),
    ("plt_ms", "REAL"),
    ("fvc_ms", "REAL"),
    ("lvc_ms", "REAL"),
    ("vc85_ms", "REAL"),
    ("si_ms", "REAL"),
    ("ttfb_ms", "REAL"),
    ("requests", "INTEGER"),
    ("bytes", "INTEGER"),
    ("misses", "INTEGER"),
    ("protocols", "TEXT"),
    ("rtt_ms", "REAL NOT NULL"),
    ("origins", "INTEGER NOT NULL"),
    ("max_in_flight", "TEXT"),
)
NAMES = tuple(name for name, _ in COLUMNS)
ADDED = ("max_in_flight",)
"""Columns newer than the first stores: added (NULL in older rows) when such a store
is opened again."""


@dataclass(frozen=True)
class Row:
    """One finished trial, as stored."""

    trial_id: str
    campaign: str
    site: str
    network: str
    protocol: str
    run: int
    status: str
    reason: str | None
    attempt: int
    started_at: str
    wall_s: float
    plt_ms: float | None
    fvc_ms: float | None
    lvc_ms: float | None
    vc85_ms: float | None
    si_ms: float | None
    ttfb_ms: float | None
    requests: int | None
    bytes: int | None
    misses: int | None
    protocols: str | None
    """JSON object protocol -> request count."""
    rtt_ms: float
    origins: int
    max_in_flight: str | None = None
    """JSON object host -> the most requests to it on the wire at once (from the HAR)."""

    @staticmethod
    def protocols_json(counts: dict[str, int] | None) -> str | None:
        return None if counts is None else json.dumps(counts, sort_keys=True)

    in_flight_json = protocols_json


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cols = ", ".join(f"{n} {t}" for n, t in COLUMNS)
        if not self.path.exists():
            # made beside and renamed into place: a reader never sees a store without
            # its table
            new = self.path.with_name(self.path.name + ".new")
            new.unlink(missing_ok=True)
            try:
                db = sqlite3.connect(new, isolation_level=None)
                try:
                    db.execute(f"CREATE TABLE trials ({cols})")
                finally:
                    db.close()
                new.rename(self.path)
            finally:
                new.unlink(missing_ok=True)
        # autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(f"CREATE TABLE IF NOT EXISTS trials ({cols})")
        have = {r[1] for r in self.db.execute("PRAGMA table_info(trials)")}
        types = dict(COLUMNS)
        for name in ADDED:
            if name not in have:
                self.db.execute(f"ALTER TABLE trials ADD COLUMN {name} {types[name]}")
        return self

    def __exit__(self, *exc) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def finished(self) -> set[str]:
        assert self.db is not None
        return {r[0] for r in self.db.execute("SELECT trial_id FROM trials")}

    def add(self, row: Row) -> None:
        """Store one trial in one transaction (IntegrityError if already stored)."""
        with self.adding(row):
            pass

    @contextmanager
    def adding(self, row: Row) -> Iterator[None]:
        """Insert the row, run the block, commit; roll back if the block (or the insert:
        IntegrityError if already stored) fails. What the block does is thus done
        exactly when the row is stored, unless the process dies between the block's
        end and the commit (the runner's reconcile covers that)."""
        assert self.db is not None
        values = asdict(row)
        marks = ", ".join("?" for _ in NAMES)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(f"INSERT INTO trials ({', '.join(NAMES)}) VALUES ({marks})",
                            [values[n] for n in NAMES])
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def forget_failed(self) -> list[str]:
        """Delete the failed trials (one transaction), so that they run again; their ids."""
        assert self.db is not None
        self.db.execute("BEGIN IMMEDIATE")
        try:
            ids = [r[0] for r in self.db.execute(
                "SELECT trial_id FROM trials WHERE status = 'failed'")]
            self.db.execute("DELETE FROM trials WHERE status = 'failed'")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return ids

    def count(self) -> dict[str, int]:
        assert self.db is not None
        return dict(self.db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status"))


def read_rows(path: Path) -> list[dict]:
    """Every stored trial as a dict of the contract's columns, in trial_id order."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cur = db.execute(f"SELECT {', '.join(NAMES)} FROM trials ORDER BY trial_id")
        return [dict(zip(NAMES, r)) for r in cur]
    finally:
        db.close()
