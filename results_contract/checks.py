"""What every value of a loaded table must be: the ranges the analysis relies on.

results_contract.load casts a source to the contract's dtypes, then these check it:
each trial once, ids that can name a folder (results_contract.trialfiles), only the
values a column allows (status: ok or failed), every required value present,
numbers finite and in range (times from 0 to a day; counts from 0 to
MAX_NUMBER; rates to MAX_BPS), JSON cells (http_versions, max_in_flight) nested
at most MAX_DEPTH deep. The first problem is a ResultsError naming the file, the column, what
was expected and the first bad trial.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from results_contract.results_io import MAX_DEPTH, ResultsError, depth
from results_contract.schema import CONNECTIONS, REAL_KIND, TEXT_KIND, TRIALS, Column

if TYPE_CHECKING:
    import pandas as pd

MAX_MS = 24 * 3600 * 1000.0
"""Longest time a trial may report (a day, in ms); more is not a page load."""
MAX_NUMBER = 1e15
"""Largest count (bytes, packets, requests)."""
MAX_BPS = 1e18
"""Largest rate in bits per second (an exabit: a kernel's estimate may be huge, never
unbounded; unlimited pacing is stored as NULL)."""


def _fail(df: pd.DataFrame, source: str, column: str, bad: pd.Series, expected: str) -> None:
    """Raise the ResultsError for the first row where `bad` is True."""
    first = bad[bad].index[0]
    trial = str(df.at[first, "trial_id"])[:80]
    value = str(df.at[first, column])[:40]
    raise ResultsError(f"{source}: column {column}: expected {expected}, got {value!r} "
                       f"(trial {trial!r})")


def trials(df: pd.DataFrame, source: str) -> None:
    """`df` (table trials, cast) as the contract says; ResultsError at the first problem."""
    import pandas as pd

    from results_contract.trialfiles import folder_name_problem

    ids = df["trial_id"]
    dup = ids.duplicated() & ids.notna()
    if dup.any():
        _fail(df, source, "trial_id", dup, "each trial once")
    problems = pd.Series([None if pd.isna(t) else folder_name_problem(t) for t in ids],
                         index=df.index, dtype=object)
    if problems.notna().any():
        why = problems.dropna().iloc[0].removeprefix("expected ")
        _fail(df, source, "trial_id", problems.notna(), why)
    _columns(df, source, TRIALS)
    for column in JSON_COLUMNS:
        bad = pd.Series([isinstance(v, str) and _too_deep(v) for v in df[column]],
                        index=df.index, dtype=bool)
        if bad.any():
            _fail(df, source, column, bad, f"JSON nested at most {MAX_DEPTH} deep")


JSON_COLUMNS = ("http_versions", "max_in_flight")
"""Text columns holding JSON (an object of name -> count), parsed by the analysis."""


def _too_deep(text: str) -> bool:
    """Whether `text` is JSON nested deeper than MAX_DEPTH (the analysis's json.loads
    would fail on it with a RecursionError)."""
    import json

    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    try:
        return depth(json.loads(text)) > MAX_DEPTH
    except ValueError:
        return False  # not JSON: the analysis reads it as no counts
    except RecursionError:
        return True


def connections(df: pd.DataFrame, source: str) -> None:
    """`df` (table connections, cast) as the contract says."""
    _columns(df, source, CONNECTIONS)


def _columns(df: pd.DataFrame, source: str, columns: Iterable[Column]) -> None:
    import numpy as np

    for c in columns:
        values = df[c.name]
        if c.required and values.isna().any():
            _fail(df, source, c.name, values.isna(), "a value in every row")
        if c.allowed:
            bad = values.notna() & ~values.isin(c.allowed)
            if bad.any():
                _fail(df, source, c.name, bad, f"one of {', '.join(c.allowed)}")
        if c.kind == TEXT_KIND:
            continue
        numbers = values.astype("float64")
        low, high, what = _range(c)
        with np.errstate(invalid="ignore"):
            bad = numbers.notna() & ~((numbers >= low) & (numbers <= high))
        if bad.any():
            _fail(df, source, c.name, bad, what)


def _range(c: Column) -> tuple[float, float, str]:
    if c.kind == REAL_KIND and c.name.endswith("_ms"):
        return 0, MAX_MS, f"a time from 0 to {MAX_MS:.0f} ms"
    if c.name == "wall_s":
        return 0, MAX_MS / 1000, f"a time from 0 to {MAX_MS / 1000:.0f} s"
    if c.name.endswith("_bps"):
        return 0, MAX_BPS, f"a rate from 0 to {MAX_BPS:g} bit/s"
    return 0, MAX_NUMBER, f"a number from 0 to {MAX_NUMBER:g}"
