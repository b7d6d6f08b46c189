"""`testbed export`: reads the store through the results loader (a quoted read-only
URI, every value checked) and writes CSV a spreadsheet cannot run."""

from __future__ import annotations

import sqlite3

from click.testing import CliRunner

from analysis import synthetic
from testbed.campaign.cli import export

TRIALS = synthetic.campaign(sites=2, networks=["dsl"], runs=2, seed=1)


def folder(path, **changes):
    synthetic.write_folder(TRIALS, path)
    if changes:
        with sqlite3.connect(path / "trials.sqlite") as db:
            for column, value in changes.items():
                db.execute(f"UPDATE trials SET {column} = ? WHERE rowid = 1", (value,))
        db.close()
    return path


def test_csv_text_cells_cannot_be_formulas(tmp_path):
    res = folder(tmp_path / "r", reason='=HYPERLINK("http://x","y")', worker="@SUM(A1)")
    done = CliRunner().invoke(export, [str(res), "--csv", "-"])
    assert done.exit_code == 0, done.output
    assert "'=HYPERLINK" in done.output and "'@SUM(A1)" in done.output
    assert ",=HYPERLINK" not in done.output and ",@SUM" not in done.output


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_folder_names_with_uri_characters_read_their_own_store_read_only(tmp_path):
    # `#` once cut the URI (read-write, an empty database made beside); `%` and `?`
    # broke it
    for name in ("a#b", "c%41d", "e?mode=rw"):
        res = folder(tmp_path / name)
        before = listing(tmp_path)
        done = CliRunner().invoke(export, [str(res), "--csv", "-"])
        assert done.exit_code == 0, (name, done.output)
        assert len(done.stdout.strip().splitlines()) == 1 + len(TRIALS), name
        assert listing(tmp_path) == before, name  # nothing made or left (-wal, -shm, a)


def test_a_store_with_a_write_ahead_log_is_read_with_it(tmp_path):
    res = folder(tmp_path / "r")
    writer = sqlite3.connect(res / "trials.sqlite", isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE trials SET reason = 'in the log' WHERE rowid = 1")
        assert (res / "trials.sqlite-wal").stat().st_size > 0
        done = CliRunner().invoke(export, [str(res), "--csv", "-"])
    finally:
        writer.close()
    assert done.exit_code == 0, done.output
    assert "in the log" in done.output
