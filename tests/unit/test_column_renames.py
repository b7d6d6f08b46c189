"""Columns renamed for one word, one meaning (docs/glossary.md): `protocol` is now
`setting`, `protocols` (requests per HTTP version) `http_versions`. Every reader takes
a store or an export still holding the old names (results_contract.schema.RENAMED) as
if it had the new ones, and a store a campaign resumes into is renamed in place."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from analysis import synthetic
from results_contract.load import load
from results_contract.schema import ADDED, COLUMNS, RENAMED, select_list, stored_name
from testbed.campaign.store import store as store_mod
from testbed.campaign.store import versions

TRIALS = synthetic.campaign(sites=2, networks=["dsl"], settings=["tcp", "quic"], runs=2,
                            seed=5, failure_rate=0.0)
OLD = {new: old for new, old in RENAMED.items()}


def old_store(path):
    """A store as made before the renames (and before every added column)."""
    synthetic.write_sqlite(TRIALS, path, without=ADDED)
    with sqlite3.connect(path) as db:
        for new, old in OLD.items():
            db.execute(f"ALTER TABLE trials RENAME COLUMN {new} TO {old}")
    db.close()
    return path


def columns_of(path):
    with sqlite3.connect(path) as db:
        out = [r[1] for r in db.execute("PRAGMA table_info(trials)")]
    db.close()
    return out


def test_the_renamed_columns():
    assert RENAMED == {"setting": "protocol", "http_versions": "protocols"}
    assert "setting" in COLUMNS and "http_versions" in COLUMNS
    assert "protocol" not in COLUMNS and "protocols" not in COLUMNS
    assert stored_name("setting", ["protocol"]) == "protocol"
    assert stored_name("setting", ["setting", "protocol"]) == "setting"
    assert stored_name("lane", ["protocol"]) is None
    assert select_list(["setting", "lane"], ["protocol"]) == "protocol AS setting, NULL AS lane"


def test_a_store_with_the_old_names_loads_with_the_new(tmp_path):
    path = old_store(tmp_path / "trials.sqlite")
    assert "protocol" in columns_of(path) and "setting" not in columns_of(path)
    got = load(path)
    assert list(got.columns) == list(COLUMNS)
    assert list(got["setting"]) == list(TRIALS["setting"])
    assert list(got["http_versions"]) == list(TRIALS["http_versions"])
    pd.testing.assert_frame_equal(got.drop(columns=list(ADDED)),
                                  load(tmp_path / ".").drop(columns=list(ADDED)))


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet"])
def test_an_export_with_the_old_names_loads_with_the_new(tmp_path, name):
    old = TRIALS.rename(columns=OLD)
    path = tmp_path / name
    if name.endswith(".parquet"):
        old.to_parquet(path, index=False)
    else:
        old.to_csv(path, index=False)
    pd.testing.assert_frame_equal(load(path), TRIALS)


def test_an_old_store_is_read_and_renamed_when_a_campaign_resumes_into_it(tmp_path):
    path = old_store(tmp_path / "trials.sqlite")
    assert store_mod.count_where(path, "setting = ?", ("quic",)) == 4
    assert {r["setting"] for r in store_mod.read_rows(path)} == {"tcp", "quic"}
    assert {r[4] for r in versions._ok_rows(path)} == {"tcp", "quic"}
    with store_mod.Store(path) as s:
        assert s.ok_plts(TRIALS["site"][0], "dsl", 2)
        assert len(s.forget_runs({1}, list(TRIALS["site"].unique()), ["dsl"], ["quic"],
                                 ["chromium"])) == 2
    have = columns_of(path)
    assert "setting" in have and "http_versions" in have
    assert "protocol" not in have and "protocols" not in have
    assert len(load(path)) == len(TRIALS) - 2
