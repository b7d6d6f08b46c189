"""Stores from someone else are data, never code: `testbed checkpoint`, `testbed run
--resume-from` and the version check read a results folder's trials.sqlite through the
one bounded opener (results_contract.sqlite_fd) and rebuild the known tables from its rows. A
trigger, a view, an unknown table or a table without the contract's columns is refused
in one line naming the file, exit 2, nothing written; a query on such a store stops
after its step budget or on SIGTERM; a folder named with `#` or `?` is read like any
other."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.hostile_harness import ROOT, TESTBED, Case, run_case
from support.scripted_campaign import ScriptedRunner
from support.scripted_results import write_campaign

from analysis import synthetic
from testbed.campaign.plan import config
from testbed.campaign.store import reference
from testbed.errors import InputError

TRIALS = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp", "quic"], runs=2,
                            seed=1, failure_rate=0.0)

SLOWER_TCP = ("CREATE TRIGGER slower_tcp AFTER INSERT ON trials BEGIN UPDATE trials "
              "SET plt_ms = NEW.plt_ms * 0.8 WHERE trial_id = NEW.trial_id "
              "AND setting LIKE 'quic%'; END")
"""What a store's author could leave behind: every QUIC row stored later is made faster."""

ENDLESS = ("CREATE VIEW trials AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
           "SELECT i + 1 FROM n) SELECT 'x' || i AS trial_id, 'ok' AS status FROM n")
"""A `trials` that never ends."""


def store_with(*sql: str):
    """A results folder r/ whose store got `sql` after it was written."""
    def prepare(folder: Path, host=None) -> None:
        synthetic.write_folder(TRIALS, folder / "r")
        db = sqlite3.connect(folder / "r" / "trials.sqlite")
        with db:
            for statement in sql:
                db.execute(statement)
        db.close()
    return prepare


CHECKPOINT = ["checkpoint", "{dir}/r", "--out", "{dir}/ref"]

CASES = [
    Case("a trigger", CHECKPOINT, ["{dir}/r/trials.sqlite", "trigger slower_tcp",
                                   "expected only"],
         prepare=store_with(SLOWER_TCP)),
    Case("a view over an endless query", CHECKPOINT,
         ["{dir}/r/trials.sqlite", "view trials", "expected only"],
         prepare=store_with("DROP TABLE trials", ENDLESS), timeout=60),
    Case("an unknown table", CHECKPOINT, ["{dir}/r/trials.sqlite", "table notes"],
         prepare=store_with("CREATE TABLE notes (x TEXT)")),
    Case("an index on an expression", CHECKPOINT, ["{dir}/r/trials.sqlite", "index by_plt"],
         prepare=store_with("CREATE INDEX by_plt ON trials (plt_ms * 2)")),
    Case("trials without a column of the contract", CHECKPOINT,
         ["{dir}/r/trials.sqlite", "table trials", "plt_ms"],
         prepare=store_with("ALTER TABLE trials DROP COLUMN plt_ms")),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_foreign_store_with_unknown_objects_is_refused(case, tmp_path):
    run_case(case, tmp_path)


def test_a_resume_from_a_store_with_a_trigger_is_refused_and_writes_nothing(tmp_path):
    store_with(SLOWER_TCP)(tmp_path)
    (tmp_path / "r" / "manifest.json").unlink()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match=r"r/trials.sqlite: .*trigger slower_tcp") as e:
        reference.seed(out, tmp_path / "r", "c")
    assert "\n" not in str(e.value)
    assert list(out.iterdir()) == []


def test_a_checkpoint_keeps_rows_and_nothing_else(tmp_path):
    """The kept store is made by the testbed (the schema's tables and index) and holds the
    very rows: an extra index or a changed declaration of the source does not travel."""
    synthetic.write_folder(TRIALS, tmp_path / "r")
    reference.checkpoint(tmp_path / "r", tmp_path / "ref")
    kept = sqlite3.connect(tmp_path / "ref" / "trials.sqlite")
    source = sqlite3.connect(tmp_path / "r" / "trials.sqlite")
    try:
        objects = sorted(kept.execute("SELECT type, name FROM sqlite_master"))
        assert objects == [("index", "connections_trial"), ("index", "sqlite_autoindex_stops_1"),
                           ("index", "sqlite_autoindex_trials_1"), ("table", "connections"),
                           ("table", "stops"), ("table", "trials")]
        rows = "SELECT * FROM trials ORDER BY trial_id"
        assert kept.execute(rows).fetchall() == source.execute(rows).fetchall()
    finally:
        kept.close()
        source.close()


SIGTERMED = """
import signal, sys
from pathlib import Path
from results_contract import sqlite_fd
from testbed.cli import _terminate

signal.signal(signal.SIGTERM, _terminate)
sqlite_fd.MIN_STEPS = 10 ** 15  # no budget: only SIGTERM stops it
path = Path(sys.argv[1])
try:
    with sqlite_fd.Reader.of(path) as db:
        print("reading", flush=True)
        db.rows("SELECT COUNT(*) FROM trials")
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(1)
"""


@pytest.mark.timeout(120)
def test_sigterm_stops_an_endless_query_at_once(tmp_path):
    store_with("DROP TABLE trials", ENDLESS)(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", SIGTERMED, str(tmp_path / "r" / "trials.sqlite")],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "reading\n", child.communicate(timeout=30)
        time.sleep(1)
        child.send_signal(signal.SIGTERM)
        began = time.monotonic()
        _, err = child.communicate(timeout=30)
        assert time.monotonic() - began < 5
        assert child.returncode == 130, err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.timeout(120)
def test_an_endless_query_stops_at_its_budget(tmp_path):
    """Whatever a store holds, a query on it stops after the store's step budget
    (results_contract.sqlite_fd.steps: about a second for a small file), one line naming it."""
    from results_contract.results_io import ResultsError
    from results_contract.sqlite_fd import Reader

    store_with("DROP TABLE trials", ENDLESS)(tmp_path)
    began = time.monotonic()
    with pytest.raises(ResultsError, match=r"r/trials.sqlite: cannot read it: stopped after "
                                           r"\d+ steps"), Reader.of(tmp_path / "r" / "trials.sqlite") as db:
        db.rows("SELECT COUNT(*) FROM trials")
    assert time.monotonic() - began < 30


def test_the_version_check_reads_a_folder_named_with_hash_and_question_mark(tmp_path):
    """The stored trials of a folder whose name holds `#` and `?` were measured with
    another server: the dry run says a resume is refused, as for any folder."""
    campaign = write_campaign(tmp_path)
    made = tmp_path / "made"
    ScriptedRunner(config.load(campaign), made).run()
    out = tmp_path / "a#b?c"
    made.rename(out)
    doc = json.loads((out / "manifest.json").read_text())
    for s in [doc, *doc["sessions"]]:
        s["versions"]["h3server"] = "h3server 0.0.1"
    (out / "manifest.json").write_text(json.dumps(doc))
    cp = subprocess.run([TESTBED, "run", str(campaign), "--out", str(out), "--dry-run", "--json"],
                        check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 0, cp.stderr
    (line,) = json.loads(cp.stdout)["version_differences"]
    assert "sessions[0].versions.h3server: 4 stored trials" in line, line
