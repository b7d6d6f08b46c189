"""A count of stored trials is read from the store or fails: a store that is broken,
foreign, a symlink or held by a writer is reported (InputError naming the file), or
counted as it is, never taken for a store of 0 trials. The runner's label and visit
checks count this way (a 0 would let a campaign store trials beside others measured
with other content), and so does the tests' watch of a running cluster campaign."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.cluster import stored_count

from analysis import synthetic
from testbed.campaign.runner import _count, _count_other_visits
from testbed.campaign.store.store import count_where
from testbed.errors import InputError

TRIALS = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp", "quic"], runs=2,
                            seed=1, failure_rate=0.0)


def _store(tmp_path: Path) -> Path:
    synthetic.write_folder(TRIALS, tmp_path / "r")
    return tmp_path / "r" / "trials.sqlite"


def _counts(db: Path) -> list[int]:
    """Every way testbed (and the tests' cluster watch) counts a store's trials."""
    return [_count(db, "setting", "tcp"), _count_other_visits(db, "tcp", "warm"),
            count_where(db, "1 = 1"), stored_count(db)]


def test_a_store_is_counted(tmp_path):
    db = _store(tmp_path)
    assert _counts(db) == [2, 2, 4, 4]


def _broken(db: Path) -> None:
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080)


def _foreign(db: Path) -> None:
    db.unlink()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE visits (url TEXT)")
    con.close()


def _empty(db: Path) -> None:
    db.unlink()
    con = sqlite3.connect(db)
    con.execute("VACUUM")
    con.close()


def _trigger(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("CREATE TRIGGER t AFTER INSERT ON trials BEGIN DELETE FROM trials; END")
    con.close()


def _symlink(db: Path) -> None:
    real = db.with_name("elsewhere.sqlite")
    db.rename(real)
    db.symlink_to(real)


def _not_a_file(db: Path) -> None:
    db.unlink()
    db.mkdir()


@pytest.mark.parametrize("spoil, said", [
    (_broken, "trials.sqlite"), (_foreign, "table visits"), (_empty, "no table trials"),
    (_trigger, "trigger t"), (_symlink, "trials.sqlite"), (_not_a_file, "trials.sqlite")],
    ids=["broken", "foreign", "empty", "a trigger", "a symlink", "a folder"])
def test_a_store_that_cannot_be_read_is_reported_not_counted_as_0(tmp_path, spoil, said):
    db = _store(tmp_path)
    spoil(db)
    for count in (lambda: _count(db, "setting", "tcp"),
                  lambda: _count_other_visits(db, "tcp", "warm"),
                  lambda: count_where(db, "1 = 1"), lambda: stored_count(db)):
        with pytest.raises(InputError) as e:
            count()
        assert str(db) in str(e.value) and said in str(e.value), e.value
        assert "\n" not in str(e.value)


def test_a_store_held_by_a_writer_counts_its_committed_rows(tmp_path):
    """A runner mid-transaction (WAL, as Store writes) holds the write lock: the count is
    of the committed rows, neither 0 nor an error."""
    db = _store(tmp_path)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM trials")
        assert _counts(db) == [2, 2, 4, 4]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
