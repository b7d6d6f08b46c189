"""The campaign store: one SQLite row per finished trial (see the results contract).

    with Store(results / "trials.sqlite") as store:
        store.finished()               # trials already stored (resume skips them);
                                       # their folders are trials/<trial_id>/
        store.add(row)                 # one transaction: the whole row or nothing
        with store.adding(row, conns): ...  # ... its connections (schema.CONNECTIONS)
                                       # and what the block does (the trial's files)
        store.stops(); store.keep_stop(s)  # adaptive runs' table stops

Every query of a campaign is here (the rest of testbed.campaign calls these functions
and methods); an error of SQLite is raised, or is an InputError naming the file,
never a count of nothing.

WAL journal, so a reader (the analysis, `testbed export`) never blocks the
runner and a killed runner never leaves a half-written row. The trial id is
the primary key: a trial is stored once.

A store from elsewhere (a results folder resumed or checkpointed, a checkpoint resumed
from) is data, never code: it is read only through results_contract.sqlite_fd (bounded, no
symlink, trusted_schema off) after its schema was checked (reading(): only the tables
of results_contract.schema and the store's own indexes; a trigger, a view or any other object
is refused), and a copy of it is a store made here holding its rows (rebuild()).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, field, make_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeAlias

from results_contract import schema
from results_contract.results_io import ResultsError
from results_contract.schema import ADDED, COLUMNS, CONNECTION_COLUMNS, STOPS, TRIALS
from results_contract.sqlite_fd import Reader
from testbed.errors import InputError

INDEX = "connections_trial"
"""The store's one index of its own (trial_id of table connections)."""
STOP_COLUMNS = tuple(c.name for c in STOPS)
REQUIRED = {schema.TABLE: tuple(c for c in COLUMNS if c not in ADDED),
            schema.CONNECTIONS_TABLE: CONNECTION_COLUMNS, schema.STOPS_TABLE: STOP_COLUMNS}
"""The tables a store may hold and the columns each must have (a store made before a
column was added lacks it)."""
INDEXES = {f"sqlite_autoindex_{schema.TABLE}_1": (schema.TABLE, ("trial_id",)),
           f"sqlite_autoindex_{schema.STOPS_TABLE}_1": (schema.STOPS_TABLE, ("site", "network")),
           INDEX: (schema.CONNECTIONS_TABLE, ("trial_id",))}
"""The indexes a store may hold: name -> (table, columns); SQLite makes the first two for
the primary keys."""
EXPECTED = (f"expected only tables {', '.join(REQUIRED)} and their indexes (a campaign store; "
            "see results_contract/schema.py)")


def _json(counts: dict[str, int] | None) -> str | None:
    """A count per HTTP version or host as the store keeps it (a JSON object, keys sorted)."""
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
        namespace={"versions_json": staticmethod(_json), "in_flight_json": staticmethod(_json)})
    Row.__module__ = __name__
    Row.__doc__ = """One finished trial, as stored: a field per column of the results contract
(results_contract.schema.TRIALS), in its order; http_versions and max_in_flight are JSON
objects (Row.versions_json, Row.in_flight_json)."""


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
                    _create(db)
                finally:
                    db.close()
                new.rename(self.path)
            finally:
                new.unlink(missing_ok=True)
        else:  # written before, maybe elsewhere: no trigger, view or other object
            with reading(self.path):
                pass
        # autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA trusted_schema = OFF")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        _create(self.db)  # a store made before a table (connections, stops) gains it
        # a store made before a column was added to the contract gains it (NULL in its rows)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(trials)")}
        for column_name, old in schema.RENAMED.items():  # one under its older name: renamed
            if old in have and column_name not in have:
                self.db.execute(f"ALTER TABLE trials RENAME COLUMN {old} TO {column_name}")
                have = (have - {old}) | {column_name}
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
                    settings: Sequence[str], clients: Sequence[str]) -> list[str]:
        """Delete the trials of these runs among these sites, networks, settings
        and clients (one transaction), so that they run again; their ids. A row of a
        store older than the client column (NULL) is Chromium's."""
        names = {"run": sorted(set(runs)), "site": sites, "network": networks,
                 "setting": settings,
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

    # --- adaptive runs (testbed.campaign.plan.adaptive): table stops ------------------
    def stops(self) -> list[tuple[Any, ...]]:
        """Every row of table stops, its columns in STOP_COLUMNS' order."""
        assert self.db is not None
        return self.db.execute(
            f"SELECT {', '.join(STOP_COLUMNS)} FROM {schema.STOPS_TABLE}").fetchall()

    def ok_plts(self, site: str, network: str, before: int) -> list[tuple[str, float]]:
        """(setting, plt_ms) of the ok trials of `site` and `network` of the runs before
        `before` that have a PLT, in run order."""
        assert self.db is not None
        return [(setting, float(plt)) for setting, plt in self.db.execute(
            "SELECT setting, plt_ms FROM trials WHERE site = ? AND network = ? AND "
            "run < ? AND status = 'ok' AND plt_ms > 0 ORDER BY run", (site, network, before))]

    def keep_stop(self, stop: dict[str, Any]) -> None:
        """Store a group's stop (a value per STOP_COLUMNS), replacing the group's earlier
        one."""
        assert self.db is not None
        self.db.execute(
            f"INSERT OR REPLACE INTO {schema.STOPS_TABLE} ({', '.join(STOP_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in STOP_COLUMNS)})",
            [stop[c] for c in STOP_COLUMNS])


def _create(db: sqlite3.Connection) -> None:
    """The tables and the index of a store, those it lacks."""
    db.execute(schema.create_table(if_not_exists=True))
    db.execute(schema.create_connections_table(if_not_exists=True))
    db.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON {schema.CONNECTIONS_TABLE} (trial_id)")
    db.execute(schema.create_stops_table(if_not_exists=True))


@contextmanager
def reading(path: Path, contract: bool = True) -> Iterator[Reader]:
    """The store at `path` (a file, not a symlink), read-only through results_contract.sqlite_fd,
    once its schema holds only the known tables and indexes (INDEXES, REQUIRED) and, if
    `contract`, its tables have the contract's columns; InputError naming the file and
    what was expected otherwise, or if a read fails (never a silent "no rows")."""
    try:
        with Reader.of(path) as db:
            _check(db, contract)
            yield db
    except ResultsError as e:
        raise InputError(str(e)) from None


def _check(db: Reader, contract: bool) -> None:
    objects = db.objects()
    for kind, name, table in objects:
        if kind == "table" and name in REQUIRED:
            continue
        if kind == "index" and INDEXES.get(name, ("",))[0] == table:
            indexed = tuple(r[2] for r in db.rows(f'PRAGMA index_info("{name}")'))
            if indexed == INDEXES[name][1]:
                continue
        raise InputError(f"{db.path}: sqlite_master: {kind} {name} (on {table}); {EXPECTED}")
    tables = {name for kind, name, _ in objects if kind == "table"}
    if schema.TABLE not in tables:
        raise InputError(f"{db.path}: no table {schema.TABLE}; {EXPECTED}")
    for table in sorted(tables) if contract else ():
        have = set(db.columns(table))
        lacking = [c for c in REQUIRED[table] if not schema.stored_name(c, have)]
        if lacking:
            raise InputError(f"{db.path}: table {table}: no column {', '.join(lacking)}; "
                             "expected a campaign store (see results_contract/schema.py)")


def _select(db: Reader, table: str, columns: Sequence[str]) -> str:
    """SELECT of `columns` of `table` (NULL for one the store lacks; an older name,
    schema.RENAMED, read as its new one)."""
    return f"SELECT {schema.select_list(columns, db.columns(table))} FROM {table}"


def rebuild(source: Path, new: Path) -> list[str]:
    """Make the store `new` (which must not exist) here, with the rows of the tables of
    the store `source` (reading(): one consistent snapshot, even while a runner writes
    into it) and nothing else of it; its trial_ids. InputError naming `source` and the
    row if one breaks the contract's constraints (a NULL, a status, a trial twice)."""
    made = sqlite3.connect(new, isolation_level=None)
    try:
        _create(made)
        made.execute("BEGIN")
        with reading(source) as db:
            db.rows("BEGIN")  # one read transaction: the tables as of one moment
            tables = db.tables()
            for table, columns in ((schema.TABLE, COLUMNS),
                                   (schema.CONNECTIONS_TABLE, CONNECTION_COLUMNS),
                                   (schema.STOPS_TABLE, STOP_COLUMNS)):
                if table not in tables:
                    continue
                insert = (f"INSERT INTO {table} ({', '.join(columns)}) "
                          f"VALUES ({', '.join('?' for _ in columns)})")
                for row in db.each(_select(db, table, columns), what=f"cannot read table {table}"):
                    try:
                        made.execute(insert, row)
                    except sqlite3.IntegrityError as e:
                        raise InputError(f"{source}: table {table}: row {row[0]!r}: {e}; "
                                         "expected a campaign store (see results_contract/schema.py)"
                                         ) from None
        made.execute("COMMIT")
        return [r[0] for r in made.execute(f"SELECT trial_id FROM {schema.TABLE}")]
    finally:
        made.close()


def count_where(path: Path, where: str, params: Sequence[Any] = ()) -> int:
    """Stored trials of the store at `path` matching `where` (a column of the contract
    the store lacks: NULL), read as reading() reads."""
    with reading(path, contract=False) as db:
        have = set(db.columns(schema.TABLE))
        select = _select(db, schema.TABLE,
                         [c for c in COLUMNS if c in ADDED or schema.stored_name(c, have)])
        return int(db.rows(f"SELECT COUNT(*) FROM ({select}) WHERE {where}", params)[0][0])


def read_rows(path: Path) -> list[dict]:
    """Every stored trial as a dict of the contract's columns, in trial_id order; a
    column added to the contract after the store was made (ADDED) is None."""
    with reading(path) as db:
        cur = db.each(f"{_select(db, schema.TABLE, COLUMNS)} ORDER BY trial_id")
        return [dict(zip(COLUMNS, r)) for r in cur]


def read_connections(path: Path) -> list[dict]:
    """Every stored connection as a dict of results_contract.schema.CONNECTIONS, ordered by
    trial, transport, server and client; [] for a store made before the table."""
    with reading(path) as db:
        if schema.CONNECTIONS_TABLE not in db.tables():
            return []
        cur = db.each(
            f"SELECT {', '.join(CONNECTION_COLUMNS)} FROM {schema.CONNECTIONS_TABLE} "
            "ORDER BY trial_id, transport, server_ip, server_port, client_ip, client_port")
        return [dict(zip(CONNECTION_COLUMNS, r)) for r in cur]
