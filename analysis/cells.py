"""Tables written as CSV for people to open in a spreadsheet.

A spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` (and, in some,
a tab or CR before one) as a formula: `=HYPERLINK(...)` or `=cmd|...` in a site
name, a failure reason or a manifest value someone else wrote would run on the
reader's machine. So every text cell that begins with one of them gets a `'`
in front (OWASP's advice; the spreadsheet shows the text as it was). A cell
that is a plain number ("-0.5", "+3") is a number to a spreadsheet, not a
formula, and stays as it is.

    spreadsheet_safe(table).to_csv(path, index=False)
"""

from __future__ import annotations

import re

import pandas as pd

_FORMULA = re.compile(r"[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?")


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose text cells a spreadsheet would run as a formula begin with
    `'`; numbers, missing values and other columns unchanged."""
    out = df.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            out[column] = values.map(_cell, na_action="ignore")
    return out


def _cell(value):
    if isinstance(value, str) and _FORMULA.match(value) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value
