"""`testbed export`: reads the store through the results loader (a quoted read-only
URI, every value checked) and writes CSV a spreadsheet cannot run."""

from __future__ import annotations

import sqlite3

from click.testing import CliRunner

from analysis import synthetic
from testbed.campaign.cli import export


def folder(path, **changes):
    trials = synthetic.campaign(sites=2, networks=["dsl"], runs=2, seed=1)
    synthetic.write_folder(trials, path)
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
