"""The loader: SQLite store, CSV and Parquet exports read back identically."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from support.paths import FIXTURES, ROOT

from analysis import ResultsError, ok_trials, synthetic
from results_contract.load import load
from results_contract.schema import COLUMNS

FIXTURE = FIXTURES / "results"


@pytest.fixture(scope="module")
def fixture_trials():
    return load(FIXTURE)


def test_fixture_is_the_documented_campaign(fixture_trials):
    t = fixture_trials
    assert len(t) == 4 * 4 * 5 * 31
    assert (t.groupby("site")["origins"].max() == 1).sum() == 2
    assert set(t["status"]) == {"ok", "failed"}
    assert list(t.columns) == list(COLUMNS)


def test_sqlite_csv_and_parquet_read_identically(fixture_trials, tmp_path):
    store = tmp_path / "results" / "trials.sqlite"
    store.parent.mkdir()
    synthetic.write_sqlite(fixture_trials, store)
    fixture_trials.to_parquet(tmp_path / "export.parquet", index=False)
    fixture_trials.to_csv(tmp_path / "export.csv.gz", index=False)

    from_sqlite = load(store.parent)
    pd.testing.assert_frame_equal(from_sqlite, load(FIXTURE / "trials.csv"))
    pd.testing.assert_frame_equal(from_sqlite, load(tmp_path / "export.parquet"))
    pd.testing.assert_frame_equal(from_sqlite, load(tmp_path / "export.csv.gz"))
    pd.testing.assert_frame_equal(from_sqlite, load(store))


def test_nulls_and_text_survive_every_format(tmp_path):
    trials = synthetic.trials([
        {"site": "NA", "network": "dsl", "setting": "tcp", "run": 0, "plt_ms": 1000.0},
        {"site": "NA", "network": "dsl", "setting": "tcp", "run": 1, "status": "failed",
         "reason": "server-died: nginx", "misses": None},
    ])
    synthetic.write_sqlite(trials, tmp_path / "t.sqlite")
    trials.to_csv(tmp_path / "t.csv", index=False)
    trials.to_parquet(tmp_path / "t.parquet", index=False)
    for path in ("t.sqlite", "t.csv", "t.parquet"):
        back = load(tmp_path / path)
        pd.testing.assert_frame_equal(back, trials)
        assert list(back["site"]) == ["NA", "NA"]  # text, not a missing value
        assert pd.isna(back.loc[0, "reason"]) and pd.isna(back.loc[1, "misses"])
        assert pd.isna(back.loc[1, "plt_ms"])


def test_only_ok_trials_pass_the_filter(fixture_trials):
    ok = ok_trials(fixture_trials)
    assert len(ok) == (fixture_trials["status"] == "ok").sum() < len(fixture_trials)
    assert set(ok["status"]) == {"ok"}


def test_bad_sources_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(ResultsError, match="no such file"):
        load(tmp_path / "missing")
    with pytest.raises(ResultsError, match="trials.sqlite"):
        load(tmp_path)
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(ResultsError, match="unknown format"):
        load(tmp_path / "x.txt")
    pd.DataFrame({"trial_id": ["a"], "site": ["s"]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ResultsError, match=r"t\.csv: missing column\(s\) campaign"):
        load(tmp_path / "t.csv")
    (tmp_path / "bad.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ResultsError, match="cannot read table trials"):
        load(tmp_path / "bad.sqlite")


def test_non_numeric_metric_is_an_input_error(tmp_path, fixture_trials):
    bad = fixture_trials.head(3).astype({"plt_ms": "string"})
    bad.loc[0, "plt_ms"] = "fast"
    bad.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ResultsError, match="column plt_ms"):
        load(tmp_path / "t.csv")


def test_package_imports_without_the_testbed():
    """The analysis imports none of the measuring side (pydantic it may: the results
    contract's manifest model is one, in the base install)."""
    code = ("import sys, analysis, analysis.report.report; "
            "bad = [m for m in ('testbed', 'click', 'mitmproxy', 'rich', 'distributed') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_results_contract_imports_without_pandas_or_the_analysis():
    """The measuring side imports the contract (the store's schema, the trial folder's
    names): every module of it imports without pandas, NumPy or the analysis."""
    modules = ", ".join(sorted(f"results_contract.{p.stem}" for p in
                               (ROOT / "results_contract").glob("*.py") if p.stem != "__init__"))
    code = (f"import sys, results_contract; import {modules}; "
            "bad = [m for m in ('pandas', 'numpy', 'scipy', 'matplotlib', 'analysis', 'testbed') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_export_from_before_max_in_flight_loads_with_it_missing(tmp_path, fixture_trials):
    old = fixture_trials.head(3).drop(columns=["max_in_flight"])
    old.to_csv(tmp_path / "old.csv", index=False)
    back = load(tmp_path / "old.csv")
    assert list(back.columns) == list(COLUMNS)
    assert back["max_in_flight"].isna().all()
    new = fixture_trials.head(2).assign(max_in_flight=['{"a.test": 12}', None])
    new.to_parquet(tmp_path / "new.parquet", index=False)
    assert list(load(tmp_path / "new.parquet")["max_in_flight"].fillna("-")) == [
        '{"a.test": 12}', "-"]
