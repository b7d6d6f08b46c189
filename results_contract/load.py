"""Read a campaign's trials from its store or an export, one DataFrame per campaign.

Sources: a results folder (its `trials.sqlite`), a `.sqlite` file, or a CSV
(`.csv`, `.csv.gz`) or Parquet (`.parquet`) export. All read back with the
same columns, dtypes and row order, so nothing downstream knows the source.

A source may come from someone else and the reader may be root, so it is
opened through results_contract.results_io (never through a symlink, only a regular
file, at most what this machine can hold), SQLite by the file already opened
(results_contract.sqlite_fd), and every value is checked on load (results_contract.checks:
types, ranges, each trial once, statuses); a problem is one ResultsError
naming the file, the column and the first bad trial.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from results_contract import checks
from results_contract.results_io import (
    Folder,
    ResultsError,
    gunzip,
    memory_cap,
    open_regular,
    read_fd,
)
from results_contract.schema import (
    ADDED,
    COLUMNS,
    CONNECTION_COLUMNS,
    CONNECTION_DTYPES,
    CONNECTIONS_TABLE,
    DTYPES,
    OK,
    RENAMED,
    TABLE,
    TEXT,
    renamed,
)

if TYPE_CHECKING:
    import pandas as pd

    from results_contract.manifest import Manifest
# pandas is imported where it is used: `import analysis` (and with it the results
# contract, results_contract.schema) stays light for the campaign store.

__all__ = ["ResultsError", "load", "load_connections", "load_manifest", "normalise", "ok_trials",
           "resolve"]

STORE_NAMES = ("trials.sqlite", "trials.parquet", "trials.csv", "trials.csv.gz")
"""What a results folder is searched for, in this order."""
CONNECTION_NAMES = ("trials.sqlite", "connections.parquet", "connections.csv",
                    "connections.csv.gz")
"""What a results folder is searched for by load_connections, in this order."""
SQLITE = (".sqlite", ".sqlite3", ".db")
FORMATS = (*SQLITE, ".parquet", ".csv", ".csv.gz")

MAX_TABLE = 1 << 30
"""Most bytes of a store or export read (after gunzip)."""
TABLE_BLOWUP = 64
"""Read into a DataFrame, a table takes up to this many times its bytes (a CSV of
one-character cells)."""


def load(source: str | Path) -> pd.DataFrame:
    """Every trial of `source` (ok and failed), sorted by trial_id, index 0..n-1."""
    path, raw = _read(Path(source), STORE_NAMES, TABLE, COLUMNS, TEXT)
    return normalise(raw, str(path))


def load_connections(source: str | Path) -> pd.DataFrame:
    """Every stored connection (table `connections`, results_contract.schema.CONNECTIONS) of a
    results folder, a .sqlite store, or an export of `testbed export --table
    connections`; sorted by trial, transport, server and client. A store made before
    the table gives an empty frame with the columns."""
    text = tuple(c for c, d in CONNECTION_DTYPES.items() if d == "string")
    path, raw = _read(Path(source), CONNECTION_NAMES, CONNECTIONS_TABLE, CONNECTION_COLUMNS,
                      text)
    missing = [c for c in CONNECTION_COLUMNS if c not in raw.columns]
    if missing:
        raise ResultsError(f"{path}: missing column(s) {', '.join(missing)}; expected table "
                           "connections (see results_contract/schema.py)")
    df = _cast(raw, CONNECTION_DTYPES, path)
    checks.connections(df, str(path))
    return df.sort_values(["trial_id", "transport", "server_ip", "server_port", "client_port"],
                          kind="stable", ignore_index=True)


def load_manifest(folder: str | Path) -> Manifest | None:
    """The results folder's manifest.json (None when there is none), read never through
    a symlink, upgraded to the current version and checked by its model
    (results_contract.manifest: ManifestError, a ResultsError, naming the key)."""
    from results_contract.manifest import parse
    with Folder(Path(folder)) as f:
        data = f.json("manifest.json")
    return None if data is None else parse(data, Path(folder) / "manifest.json")


def resolve(path: Path, names: tuple[str, ...] = STORE_NAMES) -> Path:
    """The file to read for `path`: itself, or the store inside a results folder."""
    if not Path(path).is_dir():
        if not os.path.lexists(path):
            raise ResultsError(f"{path}: no such file or folder")
        return Path(path)
    with Folder(path) as folder:
        for name in names:
            fd = open_regular(folder.fd, name, Path(path) / name)
            if fd is not None:
                os.close(fd)
                return Path(path) / name
    raise ResultsError(f"{path}: no {' / '.join(names)} in this folder; "
                       "pass a campaign results folder or an export made by `testbed export`")


def _read(source: Path, names: tuple[str, ...], table: str, columns: Sequence[str],
          text: Sequence[str]) -> tuple[Path, pd.DataFrame]:
    """The table of `source` (a folder: its first file of `names`) as read, only the
    contract's `columns` of it."""
    path = resolve(source, names)
    name = path.name.lower()
    if not name.endswith(FORMATS):
        raise ResultsError(f"{path}: unknown format; expected a results folder, "
                           ".sqlite, .csv, .csv.gz or .parquet")
    with Folder(path.parent) as folder:
        fd = open_regular(folder.fd, path.name, path)
    if fd is None:
        raise ResultsError(f"{path}: no such file or folder")
    cap = memory_cap(MAX_TABLE, TABLE_BLOWUP)
    if name.endswith(SQLITE):
        from results_contract.sqlite_fd import read_table

        try:
            return path, read_table(fd, path, table, columns, ADDED, cap)
        finally:
            os.close(fd)
    raw = read_fd(fd, path, cap)
    if name.endswith(".parquet"):
        return path, _parquet(raw, path, columns, cap)
    return path, _csv(gunzip(raw, cap, path) if name.endswith(".gz") else raw, path, columns,
                      text)


def _csv(raw: bytes, path: Path, columns: Sequence[str], text: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    wanted = {*columns, *(RENAMED[c] for c in columns if c in RENAMED)}  # and old names
    text = [*text, *(RENAMED[c] for c in text if c in RENAMED)]
    try:  # Only empty fields are missing: a site or reason spelled "NA" stays text.
        df = pd.read_csv(io.BytesIO(raw), usecols=lambda c: c in wanted,
                         dtype={c: "string" for c in text}, keep_default_na=False,
                         na_values=[""], encoding="utf-8")
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise ResultsError(f"{path}: not a CSV table ({str(e)[:80]})") from None
    return df.rename(columns=renamed(df.columns))


def _parquet(raw: bytes, path: Path, columns: Sequence[str], cap: int) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(io.BytesIO(raw))
        meta = f.metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if size > cap:
            raise ResultsError(f"{path}: {size} bytes when read; expected at most {cap}")
        names = f.schema_arrow.names
        old = [RENAMED[c] for c in columns if c in RENAMED and c not in names]
        df = f.read(columns=[c for c in (*columns, *old) if c in names]).to_pandas()
        return df.rename(columns=renamed(df.columns))
    except (pa.ArrowException, OSError) as e:
        raise ResultsError(f"{path}: not a Parquet table ({str(e)[:80]})") from None


def normalise(raw: pd.DataFrame, source: str = "trials") -> pd.DataFrame:
    """`raw` with exactly the contract's columns in order, cast to their dtypes (a
    column added to the contract later is all missing in an older source), every
    value checked (results_contract.checks). A column under its older name
    (results_contract.schema.RENAMED: `protocol`, `protocols`) is read as its new one."""
    raw = raw.rename(columns=renamed(raw.columns))
    missing = [c for c in COLUMNS if c not in raw.columns and c not in ADDED]
    if missing:
        raise ResultsError(f"{source}: missing column(s) {', '.join(missing)}; "
                           "expected the campaign results contract (see results_contract/schema.py)")
    df = _cast(raw, {c: DTYPES[c] for c in COLUMNS}, source)
    checks.trials(df, source)
    return df.sort_values("trial_id", kind="stable", ignore_index=True)


def _cast(raw: pd.DataFrame, dtypes: dict[str, str], source: object) -> pd.DataFrame:
    """raw's columns `dtypes` (in that order; a missing one all NULL) cast to their
    dtypes; ResultsError naming source and column when a value is not of its type."""
    import pandas as pd

    out = {}
    for column, dtype in dtypes.items():
        values = raw[column] if column in raw.columns else pd.Series(
            [None] * len(raw), index=raw.index, dtype="object")
        try:
            if dtype != "string":
                values = pd.to_numeric(values)
            out[column] = values.astype(dtype)
        except (ValueError, TypeError, OverflowError) as e:
            raise ResultsError(f"{source}: column {column}: expected {dtype} values"
                               f"{_first_bad(raw, column, dtype)} ({str(e)[:80]})") from None
    return pd.DataFrame(out, columns=list(dtypes))


def _first_bad(raw: pd.DataFrame, column: str, dtype: str) -> str:
    """', got V (trial T)' for the first value of `column` that is not a `dtype`."""
    import pandas as pd

    values = raw[column]
    numbers = pd.to_numeric(values, errors="coerce").astype("float64")
    bad = values.notna() & (numbers.isna() | (numbers.abs() >= 2.0 ** 63 if dtype.lower()
                                              == "int64" else numbers.isna()))
    if not bad.any():
        return ""
    i = bad[bad].index[0]
    trial = f" (trial {str(raw.at[i, 'trial_id'])[:80]!r})" if "trial_id" in raw else ""
    return f", got {str(values[i])[:40]!r}{trial}"


def ok_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Only the trials with status 'ok': the ones statistics may use."""
    return trials[trials["status"] == OK]
