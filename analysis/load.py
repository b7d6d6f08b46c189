"""Read a campaign's trials from its store or an export, one DataFrame per campaign.

Sources: a results folder (its `trials.sqlite`), a `.sqlite` file, or a CSV
(`.csv`, `.csv.gz`) or Parquet (`.parquet`) export. All read back with the
same columns, dtypes and row order, so nothing downstream knows the source.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.schema import (
    ADDED,
    COLUMNS,
    CONNECTION_COLUMNS,
    CONNECTION_DTYPES,
    CONNECTIONS_TABLE,
    DTYPES,
    OK,
    TEXT,
)

if TYPE_CHECKING:
    import pandas as pd
# pandas is imported where it is used: `import analysis` (and with it the results
# contract, analysis.schema) stays light for the campaign store.

STORE_NAMES = ("trials.sqlite", "trials.parquet", "trials.csv", "trials.csv.gz")
"""What a results folder is searched for, in this order."""


class ResultsError(ValueError):
    """A source that is not a readable campaign store or export; names the file and the fix."""


def load(source: str | Path) -> pd.DataFrame:
    """Every trial of `source` (ok and failed), sorted by trial_id, index 0..n-1."""
    import pandas as pd

    path = resolve(Path(source))
    name = path.name.lower()
    if name.endswith((".sqlite", ".sqlite3", ".db")):
        raw = _read_sqlite(path)
    elif name.endswith(".parquet"):
        raw = pd.read_parquet(path)
    elif name.endswith((".csv", ".csv.gz")):
        # Only empty fields are missing: a site or reason spelled "NA" stays text.
        raw = pd.read_csv(path, dtype={c: "string" for c in TEXT},
                          keep_default_na=False, na_values=[""])
    else:
        raise ResultsError(f"{path}: unknown format; expected a results folder, "
                           ".sqlite, .csv, .csv.gz or .parquet")
    return normalise(raw, str(path))


def resolve(path: Path) -> Path:
    """The file to read for `path`: itself, or the store inside a results folder."""
    if not path.exists():
        raise ResultsError(f"{path}: no such file or folder")
    if not path.is_dir():
        return path
    for name in STORE_NAMES:
        if (path / name).is_file():
            return path / name
    raise ResultsError(f"{path}: no {' / '.join(STORE_NAMES)} in this folder; "
                       "pass a campaign results folder or an export made by `testbed export`")


def _read_sqlite(path: Path) -> pd.DataFrame:
    import pandas as pd

    # Read-only, so reading a running campaign's store never writes to it.
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with sqlite3.connect(uri, uri=True) as db:
            return pd.read_sql_query("SELECT * FROM trials", db)
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as e:
        raise ResultsError(f"{path}: cannot read table trials ({e})") from e


def normalise(raw: pd.DataFrame, source: str = "trials") -> pd.DataFrame:
    """`raw` with exactly the contract's columns in order, cast to their dtypes (a
    column added to the contract later is all missing in an older source)."""

    missing = [c for c in COLUMNS if c not in raw.columns and c not in ADDED]
    if missing:
        raise ResultsError(f"{source}: missing column(s) {', '.join(missing)}; "
                           "expected the campaign results contract (see analysis/schema.py)")
    df = _cast(raw, {c: DTYPES[c] for c in COLUMNS}, source)
    return df.sort_values("trial_id", kind="stable", ignore_index=True)


def _cast(raw, dtypes: dict[str, str], source) -> pd.DataFrame:
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
        except (ValueError, TypeError) as e:
            raise ResultsError(f"{source}: column {column}: expected {dtype} values ({e})") from e
    return pd.DataFrame(out, columns=list(dtypes))


CONNECTION_NAMES = ("trials.sqlite", "connections.parquet", "connections.csv",
                    "connections.csv.gz")
"""What a results folder is searched for by load_connections, in this order."""


def load_connections(source: str | Path) -> pd.DataFrame:
    """Every stored connection (table `connections`, analysis.schema.CONNECTIONS) of a
    results folder, a .sqlite store, or an export of `testbed export --table
    connections`; sorted by trial, transport, server and client. A store made before
    the table gives an empty frame with the columns."""
    import pandas as pd

    path = Path(source)
    if path.is_dir():
        found = [path / n for n in CONNECTION_NAMES if (path / n).is_file()]
        if not found:
            raise ResultsError(f"{path}: no {' / '.join(CONNECTION_NAMES)} in this folder")
        path = found[0]
    elif not path.exists():
        raise ResultsError(f"{path}: no such file or folder")
    name = path.name.lower()
    if name.endswith((".sqlite", ".sqlite3", ".db")):
        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            with sqlite3.connect(uri, uri=True) as db:
                tables = {r[0] for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
                raw = (pd.read_sql_query(f"SELECT * FROM {CONNECTIONS_TABLE}", db)
                       if CONNECTIONS_TABLE in tables
                       else pd.DataFrame(columns=list(CONNECTION_COLUMNS)))
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as e:
            raise ResultsError(f"{path}: cannot read table connections ({e})") from e
    elif name.endswith(".parquet"):
        raw = pd.read_parquet(path)
    elif name.endswith((".csv", ".csv.gz")):
        text = [c for c, d in CONNECTION_DTYPES.items() if d == "string"]
        raw = pd.read_csv(path, dtype={c: "string" for c in text}, keep_default_na=False,
                          na_values=[""])
    else:
        raise ResultsError(f"{path}: unknown format; expected a results folder, "
                           ".sqlite, .csv, .csv.gz or .parquet")
    missing = [c for c in CONNECTION_COLUMNS if c not in raw.columns]
    if missing:
        raise ResultsError(f"{path}: missing column(s) {', '.join(missing)}; expected table "
                           "connections (see analysis/schema.py)")
    df = _cast(raw, CONNECTION_DTYPES, path)
    return df.sort_values(["trial_id", "transport", "server_ip", "server_port", "client_port"],
                          kind="stable", ignore_index=True)


def ok_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Only the trials with status 'ok': the ones statistics may use."""
    return trials[trials["status"] == OK]
