"""The campaign store: one SQLite row per finished trial (see the results contract).

    with Store(results / "trials.sqlite") as store:
        store.finished()               # trials already stored (resume skips them);
                                       # their folders are trials/<trial_id>/
        store.add(row)                 # one transaction: the whole row or nothing
        with store.adding(row, conns): ...  # ... its connections (analysis.schema.CONNECTIONS)
                                       # and what the block does (the trial's files)

WAL journal, so a reader (the analysis, `testbed export`) never blocks the
runner and a killed runner never leaves a half-written row. The trial id is
the primary key: a trial is stored once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, field, make_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeAlias

from analysis import schema
from analysis.schema import ADDED, COLUMNS, CONNECTION_COLUMNS, TRIALS
from testbed.errors import InputError


def _json(counts: dict[str, int] | None) -> str | None:
    """A count per protocol or host as the store keeps it (a JSON object, keys sorted)."""
    return None if counts is None else json.dumps(counts, sort_keys=True)


def _field(column: schema.Column) -> tuple[Any, ...]:
    """A Row field for a column: its Python type (None allowed unless required); an
    added column defaults to None."""
    kinds: dict[str, Any] = {schema.TEXT_KIND: str, schema.INTEGER_KIND: int,
                             schema.REAL_KIND: float}
    kind = kinds[column.kind]
    kind = kind if column.required else kind | None
    return (column.name, kind, field(default=None)) if column.name in ADDED else (column.name, kind)


if TYPE_CHECKING:
    Row: TypeAlias = Any  # made from the schema at import time: its fields are not static
else:
    Row = make_dataclass(
        "Row", [_field(c) for c in TRIALS], frozen=True,
        namespace={"protocols_json": staticmethod(_json), "in_flight_json": staticmethod(_json)})
    Row.__module__ = __name__
    Row.__doc__ = """One finished trial, as stored: a field per column of the results contract
(analysis.schema.TRIALS), in its order; protocols and max_in_flight are JSON objects
(Row.protocols_json, Row.in_flight_json)."""


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            # made beside and renamed into place: a reader never sees a store without
            # its table
            new = self.path.with_name(self.path.name + ".new")
            new.unlink(missing_ok=True)
            try:
                db = sqlite3.connect(new, isolation_level=None)
                try:
                    db.execute(schema.create_table())
                finally:
                    db.close()
                new.rename(self.path)
            finally:
                new.unlink(missing_ok=True)
        # autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(schema.create_table(if_not_exists=True))
        # a store made before table connections gains it (empty for its trials)
        self.db.execute(schema.create_connections_table(if_not_exists=True))
        self.db.execute(f"CREATE INDEX IF NOT EXISTS connections_trial ON "
                        f"{schema.CONNECTIONS_TABLE} (trial_id)")
        self.db.execute(schema.create_stops_table())  # adaptive runs (an older store gains it)
        # a store made before a column was added to the contract gains it (NULL in its rows)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(trials)")}
        for column in TRIALS:
            if column.name in ADDED and column.name not in have:
                self.db.execute(f"ALTER TABLE trials ADD COLUMN {schema.sql_declaration(column)}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def finished(self) -> set[str]:
        """The stored trial_ids (also the names of their folders in trials/)."""
        assert self.db is not None
        return {r[0] for r in self.db.execute("SELECT trial_id FROM trials")}

    def add(self, row: Row, connections: Sequence[dict[str, Any]] = ()) -> None:
        """Store one trial in one transaction (IntegrityError if already stored)."""
        with self.adding(row, connections):
            pass

    @contextmanager
    def adding(self, row: Row, connections: Sequence[dict[str, Any]] = ()) -> Iterator[None]:
        """Insert the row, run the block, commit; roll back if the block (or the insert:
        IntegrityError if already stored) fails. What the block does is thus done
        exactly when the row is stored, unless the process dies between the block's
        end and the commit (the runner's reconcile covers that)."""
        assert self.db is not None
        values = asdict(row)
        marks = ", ".join("?" for _ in COLUMNS)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(f"INSERT INTO trials ({', '.join(COLUMNS)}) VALUES ({marks})",
                            [values[n] for n in COLUMNS])
            cmarks = ", ".join("?" for _ in CONNECTION_COLUMNS)
            self.db.executemany(
                f"INSERT INTO {schema.CONNECTIONS_TABLE} ({', '.join(CONNECTION_COLUMNS)}) "
                f"VALUES ({cmarks})",
                [[row.trial_id if n == "trial_id" else c.get(n) for n in CONNECTION_COLUMNS]
                 for c in connections])
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def forget_failed(self) -> list[str]:
        """Delete the failed trials (one transaction), so that they run again; their ids."""
        return self._forget("status = 'failed'", [])

    def forget_runs(self, runs: Iterable[int], sites: Sequence[str], networks: Sequence[str],
                    protocols: Sequence[str], clients: Sequence[str]) -> list[str]:
        """Delete the trials of these runs among these sites, networks, protocol settings
        and clients (one transaction), so that they run again; their ids. A row of a
        store older than the client column (NULL) is Chromium's."""
        names = {"run": sorted(set(runs)), "site": sites, "network": networks,
                 "protocol": protocols,
                 f"COALESCE(client, '{schema.DEFAULT_CLIENT}')": clients}
        where = " AND ".join(f"{col} IN ({', '.join('?' for _ in vals)})"
                             for col, vals in names.items())
        return self._forget(where, [v for vals in names.values() for v in vals])

    def _forget(self, where: str, params: list[Any]) -> list[str]:
        assert self.db is not None
        self.db.execute("BEGIN IMMEDIATE")
        try:
            ids = [r[0] for r in self.db.execute(
                f"SELECT trial_id FROM trials WHERE {where}", params)]
            self.db.execute(f"DELETE FROM {schema.CONNECTIONS_TABLE} WHERE trial_id IN "
                            f"(SELECT trial_id FROM trials WHERE {where})", params)
            self.db.execute(f"DELETE FROM trials WHERE {where}", params)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return ids

    def count(self) -> dict[str, int]:
        assert self.db is not None
        return dict(self.db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status"))


def snapshot(db: Path) -> sqlite3.Connection:
    """The store at `db` opened read-only for a check before a run; without a WAL file
    every row is in the database file, so it is opened immutable and SQLite creates
    no -wal and -shm files beside it."""
    wal = db.with_name(db.name + "-wal").exists()
    return sqlite3.connect(f"file:{db}?mode=ro{'' if wal else '&immutable=1'}", uri=True)


def _read_only(path: Path) -> sqlite3.Connection:
    """The store at `path`, opened read-only (a URI made from the path quoted, so a `#`,
    `?` or `%` in a folder's name stays part of the path)."""
    return sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro", uri=True)


def read_rows(path: Path) -> list[dict]:
    """Every stored trial as a dict of the contract's columns, in trial_id order; a
    column added to the contract after the store was made (ADDED) is None."""
    db = _read_only(path)
    try:
        have = {r[1] for r in db.execute("PRAGMA table_info(trials)")}
        lacking = [c for c in COLUMNS if c not in have and c not in ADDED]
        if lacking:
            raise InputError(f"{path}: table trials: no column {', '.join(lacking)}; "
                             "expected a campaign store (see analysis/schema.py)")
        select = ", ".join(c if c in have else f"NULL AS {c}" for c in COLUMNS)
        cur = db.execute(f"SELECT {select} FROM trials ORDER BY trial_id")
        return [dict(zip(COLUMNS, r)) for r in cur]
    finally:
        db.close()


def read_connections(path: Path) -> list[dict]:
    """Every stored connection as a dict of analysis.schema.CONNECTIONS, ordered by
    trial, transport, server and client; [] for a store made before the table."""
    db = _read_only(path)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if schema.CONNECTIONS_TABLE not in tables:
            return []
        cur = db.execute(
            f"SELECT {', '.join(CONNECTION_COLUMNS)} FROM {schema.CONNECTIONS_TABLE} "
            "ORDER BY trial_id, transport, server_ip, server_port, client_ip, client_port")
        return [dict(zip(CONNECTION_COLUMNS, r)) for r in cur]
    finally:
        db.close()
