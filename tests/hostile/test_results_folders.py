"""Hostile results folders and exports read by `testbed report`, `compare`, `trial` and
`export` (results_contract.load, the one results loader): a manifest that is a symlink to a host
file or of the wrong shape, JSON nested thousands deep, stores with duplicated ids,
infinite, negative or huge numbers, unknown statuses, ids no file can be named, text in
an integer column, a file that is no database, kept HAR and visual-metrics files of the
wrong shape. One line naming the file and the key, exit 2, nothing written."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest
from support.hostile_harness import Case, run_case

from analysis import synthetic

TRIALS = synthetic.campaign(sites=2, networks=["dsl"], settings=["tcp", "quic"], runs=3,
                            seed=1, failure_rate=0.0)
ID = TRIALS["trial_id"].iloc[0]
DEEP = "[" * 100_000 + "]" * 100_000


def store(folder, host):
    synthetic.write_folder(TRIALS, folder / "r")


def manifest(text: str):
    def prepare(folder, host):
        store(folder, host)
        (folder / "r" / "manifest.json").write_text(text)
    return prepare


def manifest_to_secret(folder, host):
    store(folder, host)
    (folder / "r" / "manifest.json").unlink()
    (folder / "r" / "manifest.json").symlink_to(host.secret)


def store_to_secret(folder, host):
    (folder / "r").mkdir()
    (folder / "r" / "trials.sqlite").symlink_to(host.secret)


def raw_store(**changes):
    """A store made by hand (no constraints), with `changes` to its first row."""
    def prepare(folder, host):
        (folder / "r").mkdir()
        df = TRIALS.copy().astype(object)
        for column, value in changes.items():
            df.loc[0, column] = value
        with sqlite3.connect(folder / "r" / "trials.sqlite") as db:
            df.to_sql("trials", db, index=False)
        db.close()
    return prepare


def duplicated(folder, host):
    (folder / "r").mkdir()
    with sqlite3.connect(folder / "r" / "trials.sqlite") as db:
        TRIALS.iloc[[0, 1, 1]].to_sql("trials", db, index=False)
    db.close()


def not_a_database(folder, host):
    (folder / "r").mkdir()
    (folder / "r" / "trials.sqlite").write_bytes(b"SQLite format 2\0" + b"x" * 4096)


def kept(name: str, data: bytes):
    def prepare(folder, host):
        store(folder, host)
        (folder / "r" / "trials" / ID).mkdir(parents=True)
        (folder / "r" / "trials" / ID / name).write_bytes(data)
    return prepare


def har(obj) -> bytes:
    return gzip.compress(json.dumps(obj).encode())


REPORT = ["report", "{dir}/r", "--out", "{dir}/out"]
COMPARE = ["compare", "{dir}/r", "{dir}/r"]
EXPORT = ["export", "{dir}/r", "--csv", "-"]
TRIAL = ["trial", "{dir}/r", ID, "--output", "{dir}/out/t.html"]
M = "{dir}/r/manifest.json"
S = "{dir}/r/trials.sqlite"

CASES = [
    Case("report manifest a symlink to a host file", REPORT, [M, "symlink"],
         prepare=manifest_to_secret),
    Case("compare manifest a symlink to a host file", COMPARE, [M, "symlink"],
         prepare=manifest_to_secret),
    Case("report store a symlink to a host file", REPORT, [S, "symlink"],
         prepare=store_to_secret),
    Case("export store a symlink to a host file", EXPORT, [S, "symlink"],
         prepare=store_to_secret),
    Case("report manifest a list", REPORT, [M, "(top level)", "expected a JSON object"],
         prepare=manifest("[1, 2]")),
    Case("report manifest workers a list", REPORT, [M, "key workers", "expected an object"],
         prepare=manifest('{"workers": [1]}')),
    Case("report manifest calibration_differs a number", REPORT,
         [M, "key calibration_differs", "expected a list"],
         prepare=manifest('{"calibration_differs": 5}')),
    Case("report manifest worker calibration a list", REPORT,
         [M, "key workers.w1.calibration", "expected an object"],
         prepare=manifest('{"workers": {"w1": {"calibration": [1]}}}')),
    Case("compare manifest sessions of numbers", COMPARE, [M, "key sessions.0"],
         prepare=manifest('{"sessions": [1]}')),
    Case("report manifest nested 100000 deep", REPORT, [M, "nested deeper than"],
         prepare=manifest('{"a": ' + DEEP + "}")),
    Case("compare manifest nested 100000 deep", COMPARE, [M, "nested deeper than"],
         prepare=manifest(DEEP)),
    Case("report duplicated trial ids", REPORT,
         [S, "column trial_id", "each trial once", TRIALS["trial_id"].iloc[1]],
         prepare=duplicated),
    Case("report infinite plt", REPORT, [S, "column plt_ms", "a time", ID],
         prepare=raw_store(plt_ms=float("inf"))),
    Case("report NaN required wall time", REPORT, [S, "column wall_s", "a value in every row"],
         prepare=raw_store(wall_s=None)),
    Case("report negative wall time", REPORT, [S, "column wall_s", "a time", ID],
         prepare=raw_store(wall_s=-3.0)),
    Case("report huge byte count", REPORT, [S, "column bytes", "a number from 0", ID],
         prepare=raw_store(bytes=10 ** 18)),
    Case("report integer out of int64", REPORT, [S, "column bytes"],
         prepare=raw_store(bytes="9" * 30)),
    Case("report protocols cell nested 100000 deep", REPORT,
         [S, "column http_versions", "nested at most"], prepare=raw_store(http_versions=DEEP)),
    Case("compare unknown status", COMPARE, [S, "column status", "one of ok, failed", ID],
         prepare=raw_store(status="great")),
    Case("report trial id longer than a file name", REPORT,
         [S, "column trial_id", "at most 255 bytes"], prepare=raw_store(trial_id="x" * 300)),
    Case("report trial id a path", REPORT, [S, "column trial_id", "not a path"],
         prepare=raw_store(trial_id="../../etc")),
    Case("export text in an integer column", EXPORT, [S, "column run", "int64"],
         prepare=raw_store(run="three")),
    Case("export a file that is no database", EXPORT, [S, "cannot read table trials"],
         prepare=not_a_database),
    Case("export duplicated trial ids", EXPORT, [S, "column trial_id", "each trial once"],
         prepare=duplicated),
    Case("trial HAR a list", TRIAL, ["browsertime.har.gz", "(top level)"],
         prepare=kept("browsertime.har.gz", har([1, 2]))),
    Case("trial HAR log a list", TRIAL, ["browsertime.har.gz", "key log", "expected an object"],
         prepare=kept("browsertime.har.gz", har({"log": []}))),
    Case("trial HAR entries a number", TRIAL, ["browsertime.har.gz", "key log.entries"],
         prepare=kept("browsertime.har.gz", har({"log": {"entries": 5}}))),
    Case("trial HAR entry timings a list", TRIAL,
         ["browsertime.har.gz", "key log.entries.0.timings"],
         prepare=kept("browsertime.har.gz", har({"log": {"entries": [{"timings": [1]}]}}))),
    Case("trial HAR nested 100000 deep", TRIAL, ["browsertime.har.gz", "nested deeper than"],
         prepare=kept("browsertime.har.gz", gzip.compress(DEEP.encode()))),
    Case("trial visual metrics a list", TRIAL, ["visualmetrics.json", "(top level)"],
         prepare=kept("visualmetrics.json", b"[]")),
    Case("trial visual metrics start text", TRIAL,
         ["visualmetrics.json", "key videoRecordingStart", "a number >= 0"],
         prepare=kept("visualmetrics.json", b'{"videoRecordingStart": "soon"}')),
    Case("trial visual metrics progress a number", TRIAL,
         ["visualmetrics.json", "key VisualProgress", "expected text"],
         prepare=kept("visualmetrics.json", b'{"VisualProgress": 5}')),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_results_folder(case, tmp_path):
    run_case(case, tmp_path)
