"""analysis.cells: CSV cells a spreadsheet would run as a formula are shown as text."""

from __future__ import annotations

import pandas as pd

from analysis.cells import spreadsheet_safe


def test_text_cells_that_start_a_formula_get_a_quote():
    df = pd.DataFrame({
        "text": ["=1+1", "+1+1", "-2+3", "@SUM(A1)", "\t=x", "plain", None],
        "string": pd.array(["=cmd|' /C calc'!A0", "ok", None, "a=b", "-", "+", "x"],
                           dtype="string"),
        "category": pd.Categorical(["=x", "y", "y", "y", "y", "y", "y"]),
        "number": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    })
    out = spreadsheet_safe(df)
    assert list(out["text"][:6]) == ["'=1+1", "'+1+1", "'-2+3", "'@SUM(A1)", "'\t=x", "plain"]
    assert out["text"].isna().iloc[6]
    assert list(out["string"].fillna("NA")) == ["'=cmd|' /C calc'!A0", "ok", "NA", "a=b",
                                                "'-", "'+", "x"]
    assert out["category"].iloc[0] == "'=x"
    assert out["number"].equals(df["number"])
    assert df["text"].iloc[0] == "=1+1"  # the input is left as it was


def test_numbers_written_as_text_stay_numbers():
    out = spreadsheet_safe(pd.DataFrame({"v": ["-0.5", "+3", "-1e-3", "-.5", "+12%", "-1-1"]}))
    assert list(out["v"]) == ["-0.5", "+3", "-1e-3", "-.5", "+12%", "'-1-1"]
