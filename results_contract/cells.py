"""Tables made safe to open in a spreadsheet: the one place CSV cells are neutralised.

A results folder comes from someone else, so its text (a site, a reason, a
manifest value) may start with `=`, `+`, `-` or `@`, which Excel, LibreOffice
and Google Sheets read as a formula (and `\\t`, `\\r`, which some of them strip
before reading one). Every CSV the project writes goes through
`spreadsheet_safe`, which prefixes such text cells with `'` (OWASP's advice:
the spreadsheet shows the text, runs nothing). Numbers stay numbers: only text
columns (object, string or category dtype) are touched.

    spreadsheet_safe(df).to_csv(path, index=False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a cell may not start with: a spreadsheet would read it as a formula."""


def safe_cell(value: Any) -> Any:
    """`value` with `'` in front when it is text a spreadsheet would run; else itself."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose text cells cannot be formulas (see safe_cell); numeric,
    boolean and date columns unchanged, dtypes kept."""
    import pandas as pd

    out = df.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            out[column] = values.map(safe_cell)  # stays categorical while distinct
        elif pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
            out[column] = values.map(safe_cell, na_action="ignore").astype(values.dtype)
    return out
