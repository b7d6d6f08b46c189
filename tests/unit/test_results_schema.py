"""The store and the analysis agree: one results schema (results_contract.schema.TRIALS).

Rows are written through the real campaign Store and read back by the
analysis's loader, straight from trials.sqlite and through `testbed export`.
"""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from click.testing import CliRunner

from analysis import synthetic
from results_contract import schema
from results_contract.load import load
from testbed.campaign.cli import export
from testbed.campaign.store.store import Row, Store

SAMPLE = {schema.TEXT_KIND: "x", schema.INTEGER_KIND: 7, schema.REAL_KIND: 1.5}


def full_row(run: int) -> Row:
    """A trial with a value in every column (each of its kind)."""
    values = {c.name: c.allowed[-1] if c.allowed else SAMPLE[c.kind] for c in schema.TRIALS}
    values.update(trial_id=f"s+dsl+tcp+{run}", run=run, status="ok")
    return Row(**values)


def empty_row(run: int) -> Row:
    """A failed trial: every column that may be NULL is."""
    values = {c.name: (c.allowed[-1] if c.allowed else SAMPLE[c.kind]) if c.required else None
              for c in schema.TRIALS}
    values.update(trial_id=f"s+dsl+quic+{run}", run=run, status="failed")
    return Row(**values)


def check_agreement(store: Store, frame: pd.DataFrame, columns, dtypes) -> None:
    """The store's table and the loaded frame have exactly `columns`, in order, and the
    frame the `dtypes`."""
    table = [r[1] for r in store.db.execute(f"PRAGMA table_info({schema.TABLE})")]
    assert table == list(columns), "store table"
    assert list(frame.columns) == list(columns), "loaded columns"
    assert {c: str(t) for c, t in frame.dtypes.items()} == dict(dtypes), "loaded dtypes"


@pytest.fixture
def stored(tmp_path):
    with Store(tmp_path / "trials.sqlite") as store:
        store.add(full_row(0))
        store.add(empty_row(0))
        yield store, load(tmp_path)


def test_what_the_store_writes_the_analysis_reads_as_the_schema_says(stored):
    store, frame = stored
    check_agreement(store, frame, schema.COLUMNS, schema.DTYPES)
    ok = frame[frame["status"] == "ok"].iloc[0]
    for c in schema.TRIALS:
        if c.name not in ("trial_id", "run", "status"):
            assert ok[c.name] == (c.allowed[-1] if c.allowed else SAMPLE[c.kind]), c.name
    failed = frame[frame["status"] == "failed"].iloc[0]
    assert all(pd.isna(failed[c.name]) for c in schema.TRIALS if not c.required)


def test_a_column_added_to_the_schema_alone_is_caught(stored):
    store, frame = stored
    extra = schema.Column("extra_ms", schema.REAL_KIND, False)
    with pytest.raises(AssertionError, match="store table"):
        check_agreement(store, frame, (*schema.COLUMNS, extra.name),
                        {**schema.DTYPES, extra.name: "float64"})
    # ... and a Row, being made from the schema, has exactly its columns
    assert tuple(Row.__dataclass_fields__) == schema.COLUMNS


def test_exports_read_back_as_the_store(stored, tmp_path):
    _, frame = stored
    for option, name in (("--csv", "t.csv"), ("--parquet", "t.parquet")):
        out = CliRunner().invoke(export, [str(tmp_path), option, str(tmp_path / name)])
        assert out.exit_code == 0, out.output
        pd.testing.assert_frame_equal(load(tmp_path / name), frame)


def test_synthetic_stores_are_made_like_the_campaign_store(tmp_path):
    synthetic.write_sqlite(synthetic.trials([{"site": "s", "network": "dsl", "setting": "tcp",
                                              "run": 0}]), tmp_path / "synthetic.sqlite")
    with Store(tmp_path / "real.sqlite"):
        pass
    ddl = []
    for name in ("synthetic.sqlite", "real.sqlite"):
        with sqlite3.connect(tmp_path / name) as db:
            ddl.append(db.execute("SELECT sql FROM sqlite_master WHERE name = 'trials'").fetchone())
        db.close()
    assert ddl[0] == ddl[1] == (schema.create_table(),)


def test_the_schema_is_consistent():
    assert len(set(schema.COLUMNS)) == len(schema.COLUMNS)
    assert set(schema.DTYPES) == set(schema.COLUMNS)
    assert sorted(schema.TEXT + schema.INTEGER + schema.NULLABLE_INTEGER + schema.REAL) == \
        sorted(schema.COLUMNS)
    # added columns come last and may be NULL: an older store gains them by ALTER TABLE
    added = schema.TRIALS[len(schema.TRIALS) - len(schema.ADDED):]
    assert tuple(c.name for c in added) == schema.ADDED
    assert not any(c.required for c in added)
    assert [c.name for c in schema.TRIALS if c.key] == ["trial_id"]
