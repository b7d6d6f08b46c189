"""results_contract.cells: text a spreadsheet would run as a formula is neutralised; numbers kept."""

import pandas as pd

from results_contract.cells import spreadsheet_safe


def test_text_cells_that_start_a_formula_get_a_quote():
    df = pd.DataFrame({"site": pd.array(["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)",
                                         "\tx", "news", None], dtype="string"),
                       "note": ["=1+1", "ok", "-", "a=b", "@", "", None]})
    safe = spreadsheet_safe(df)
    assert list(safe["site"].fillna("NA")) == ["'=HYPERLINK(\"x\")", "'+1", "'-2",
                                               "'@SUM(A1)", "'\tx", "news", "NA"]
    assert list(safe["note"].fillna("NA")) == ["'=1+1", "ok", "'-", "a=b", "'@", "", "NA"]
    assert safe["site"].dtype == "string"
    assert df["site"].iloc[0] == "=HYPERLINK(\"x\")"  # the input is untouched


def test_numbers_stay_numbers():
    df = pd.DataFrame({"plt_ms": [-1.5, 2.0], "run": pd.array([-3, None], dtype="Int64"),
                       "ok": [True, False], "kind": pd.Categorical(["=a", "b"])})
    safe = spreadsheet_safe(df)
    assert safe["plt_ms"].tolist() == [-1.5, 2.0]
    assert safe["run"].dtype == "Int64" and safe["run"].iloc[0] == -3
    assert safe["ok"].tolist() == [True, False]
    assert list(safe["kind"]) == ["'=a", "b"]
    assert "-1.5" in safe.to_csv(index=False)
