"""The results loader on hostile folders and exports (results_contract.results_io,
.load, .checks, .shapes): never through a symlink, capped, every value checked,
one ResultsError naming the file, the column or key, and the first bad trial."""

from __future__ import annotations

import gzip
import json
import os
import sys

import pandas as pd
import pytest

from analysis import ResultsError, synthetic
from results_contract.load import load, load_manifest
from results_contract.results_io import MAX_DEPTH, Folder, depth
from results_contract.trialfiles import TrialFiles

TRIALS = synthetic.campaign(sites=2, networks=["dsl"], settings=["tcp", "quic"], runs=3,
                            seed=1, failure_rate=0.0)
LOAD = sys.modules["results_contract.load"]  # the module (the package's `load` is the function)
DEEP = "[" * 100_000 + "]" * 100_000


def csv(tmp_path, **changes):
    df = TRIALS.copy().astype(object)
    for column, value in changes.items():
        df.loc[0, column] = value
    df.to_csv(tmp_path / "t.csv", index=False)
    return tmp_path / "t.csv"


@pytest.mark.parametrize(("changes", "message"), [
    ({"plt_ms": float("inf")}, r"column plt_ms: expected a time from 0 to \d+ ms, got 'inf'"),
    ({"wall_s": -1.0}, "column wall_s: expected a time"),
    ({"bytes": 10 ** 18}, "column bytes: expected a number from 0 to 1e"),
    ({"requests": -3}, "column requests: expected a number from 0"),
    ({"status": "great"}, "column status: expected one of ok, failed, got 'great'"),
    ({"trial_id": "x" * 256}, "column trial_id: expected at most 255 bytes"),
    ({"trial_id": "é" * 128}, "column trial_id: expected at most 255 bytes"),
    ({"trial_id": "a/b"}, "column trial_id: expected the id of one trial"),
    ({"rtt_ms": float("nan")}, "column rtt_ms: expected a value in every row"),
    ({"run": "9" * 30}, "column run: expected int64"),
    ({"http_versions": DEEP}, "column http_versions: expected JSON nested at most"),
])
def test_bad_values_name_the_file_the_column_and_the_trial(tmp_path, changes, message):
    path = csv(tmp_path, **changes)
    with pytest.raises(ResultsError, match=message) as e:
        load(path)
    assert str(e.value).startswith(f"{path}: ")
    if "trial_id" not in changes and "rtt_ms" not in changes:
        assert repr(TRIALS["trial_id"].iloc[0]) in str(e.value)


def test_a_trial_stored_twice_is_refused(tmp_path):
    TRIALS.iloc[[0, 1, 2, 1]].to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ResultsError, match=r"column trial_id: expected each trial once, got "
                                           + repr(TRIALS["trial_id"].iloc[1]).replace("+", r"\+")):
        load(tmp_path / "t.csv")


def test_a_store_or_manifest_behind_a_symlink_is_refused(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"secret": "HOST"}')
    res = tmp_path / "r"
    synthetic.write_folder(TRIALS, res)
    (res / "manifest.json").unlink()
    (res / "manifest.json").symlink_to(secret)
    with pytest.raises(ResultsError, match="manifest.json: a symlink"):
        load_manifest(res)
    other = tmp_path / "other"
    synthetic.write_folder(TRIALS, other)
    (res / "trials.sqlite").unlink()
    (res / "trials.sqlite").symlink_to(other / "trials.sqlite")
    with pytest.raises(ResultsError, match="trials.sqlite: a symlink"):
        load(res)
    # a folder below the results folder a symlink: not walked through
    (res / "trials").symlink_to(tmp_path)
    with pytest.raises(ResultsError, match="trials: a symlink"), Folder(res) as f:
        f.open("trials", "secret.json")


@pytest.mark.parametrize(("text", "message"), [
    ("[]", r"\(top level\): expected a JSON object"),
    ('{"workers": []}', "key workers: expected an object, got list"),
    ('{"workers": {"w": 1}}', "key workers.w: expected an object"),
    ('{"sessions": {}}', "key sessions: expected a list"),
    ('{"calibration_differs": ["a", 1]}', "key calibration_differs.1: expected text"),
    ('{"synthetic": "yes"}', "key synthetic: expected true or false"),
    ('{"a": ' + DEEP + "}", f"nested deeper than {MAX_DEPTH}"),
    ("{nope", "not JSON"),
])
def test_a_manifest_of_the_wrong_shape_names_the_key(tmp_path, text, message):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ResultsError, match=message):
        load_manifest(tmp_path)


def test_a_folder_without_a_manifest_has_none(tmp_path):
    assert load_manifest(tmp_path) is None


def test_json_nested_past_the_limit_is_refused_even_below_python_s(tmp_path):
    assert depth({"a": [1, {"b": []}]}) == 4 and depth(5) == 0
    (tmp_path / "x.json").write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(ResultsError, match="nested deeper than"), Folder(tmp_path) as f:
        f.json("x.json")
    (tmp_path / "y.json").write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with Folder(tmp_path) as f:
        assert depth(f.json("y.json")) == MAX_DEPTH


def test_a_small_gzipped_har_that_inflates_past_the_cap_is_not_inflated(tmp_path):
    trial_id = TRIALS["trial_id"].iloc[0]
    folder = tmp_path / "trials" / trial_id
    folder.mkdir(parents=True)
    bomb = gzip.compress(b" " * (40 << 20))  # 40 MiB in about 40 kB
    assert len(bomb) < 1 << 20
    (folder / "browsertime.har.gz").write_bytes(bomb)
    with pytest.raises(ResultsError, match="inflates to more than"), \
            TrialFiles(tmp_path, trial_id) as files:
        files.json("browsertime.har.gz")


def test_a_csv_gz_export_is_inflated_only_up_to_the_cap(tmp_path, monkeypatch):
    TRIALS.to_csv(tmp_path / "t.csv.gz", index=False)
    size = len(gzip.decompress((tmp_path / "t.csv.gz").read_bytes()))
    monkeypatch.setattr(LOAD, "MAX_TABLE", size - 1)
    with pytest.raises(ResultsError, match="inflates to more than"):
        load(tmp_path / "t.csv.gz")
    monkeypatch.setattr(LOAD, "MAX_TABLE", size)
    assert len(load(tmp_path / "t.csv.gz")) == len(TRIALS)


def test_a_parquet_that_would_read_past_the_cap_is_refused(tmp_path, monkeypatch):
    # compresses well: far more bytes read than stored (plain encoding, so the row
    # groups' sizes in the metadata are the values' own, not a dictionary's)
    pd.concat([TRIALS] * 200).to_parquet(tmp_path / "t.parquet", index=False,
                                         compression="zstd", use_dictionary=False)
    monkeypatch.setattr(LOAD, "MAX_TABLE", os.path.getsize(tmp_path / "t.parquet"))
    monkeypatch.setattr(LOAD, "TABLE_BLOWUP", 1)
    with pytest.raises(ResultsError, match="bytes when read; expected at most"):
        load(tmp_path / "t.parquet")


@pytest.mark.parametrize("name", ["t.csv", "t.parquet", "t.sqlite"])
def test_files_that_are_not_what_their_name_says(tmp_path, name):
    (tmp_path / name).write_bytes(b"\x00\xff garbage " * 300)
    with pytest.raises(ResultsError, match=f"{name}: (not a|cannot read)"):
        load(tmp_path / name)


def test_har_and_visual_metrics_of_the_wrong_shape(tmp_path):
    trial_id = TRIALS["trial_id"].iloc[0]
    folder = tmp_path / "trials" / trial_id
    folder.mkdir(parents=True)
    (folder / "browsertime.har.gz").write_bytes(gzip.compress(json.dumps(
        {"log": {"pages": [], "entries": [{"request": "GET /"}]}}).encode()))
    (folder / "visualmetrics.json").write_text('{"videoRecordingStart": -5}')
    with TrialFiles(tmp_path, trial_id) as files:
        with pytest.raises(ResultsError, match="key log.entries.0.request: expected an object"):
            files.json("browsertime.har.gz")
        with pytest.raises(ResultsError, match="key videoRecordingStart: expected a number"):
            files.json("visualmetrics.json")


def test_reading_a_store_writes_nothing_beside_it(tmp_path):
    synthetic.write_folder(TRIALS, tmp_path / "r")
    before = sorted(os.listdir(tmp_path / "r"))
    pd.testing.assert_frame_equal(load(tmp_path / "r"), load(tmp_path / "r" / "trials.sqlite"))
    assert sorted(os.listdir(tmp_path / "r")) == before


def test_a_store_cell_longer_than_the_cap_is_refused(tmp_path):
    import sqlite3

    synthetic.write_folder(TRIALS, tmp_path / "r")
    with sqlite3.connect(tmp_path / "r" / "trials.sqlite") as db:
        db.execute("UPDATE trials SET reason = ? WHERE rowid = 1", ("x" * (17 << 20),))
    db.close()
    with pytest.raises(ResultsError, match="trials.sqlite: cannot read table trials .*too big"):
        load(tmp_path / "r")


def test_report_passes_over_kept_files_of_the_wrong_shape(tmp_path):
    """A HAR or visual-metrics file of the wrong shape is a broken kept file: the report's
    BBR sizes and example pages pass it over (as a symlink), and the report is whole."""
    from click.testing import CliRunner

    from testbed.cli import cli

    synthetic.write_folder(TRIALS, tmp_path / "r")
    for trial_id in TRIALS["trial_id"]:
        folder = tmp_path / "r" / "trials" / trial_id
        folder.mkdir(parents=True)
        (folder / "browsertime.har.gz").write_bytes(gzip.compress(b'{"log": {"entries": 5}}'))
        (folder / "visualmetrics.json").write_text("[]")
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "r"), "--out", str(tmp_path / "o")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "o" / "index.html").is_file()
    assert not (tmp_path / "o" / "trials").exists()  # no example page of a broken trial


def test_connection_rows_are_checked_as_the_trials(tmp_path):
    from analysis import load_connections

    conns = synthetic.connections(TRIALS, seed=1)
    conns.loc[0, "srtt_ms"] = -1.0
    conns.to_csv(tmp_path / "connections.csv", index=False)
    with pytest.raises(ResultsError, match="column srtt_ms: expected a time from 0"):
        load_connections(tmp_path / "connections.csv")
    conns.loc[0, ["srtt_ms", "transport"]] = [1.0, "sctp"]
    conns.to_csv(tmp_path / "connections.csv", index=False)
    with pytest.raises(ResultsError, match="column transport: expected one of tcp, quic"):
        load_connections(tmp_path / "connections.csv")


def test_a_store_swapped_after_it_was_opened_is_refused(tmp_path, monkeypatch):
    """SQLite opens the file's path again: if that is no longer the file opened without
    following a symlink (swapped for a link meanwhile), nothing is read."""
    from results_contract import sqlite_fd
    synthetic.write_folder(TRIALS, tmp_path / "r")
    synthetic.write_folder(TRIALS.head(2), tmp_path / "elsewhere")
    monkeypatch.setattr(sqlite_fd, "_uri", lambda fd, path: (
        (tmp_path / "elsewhere" / "trials.sqlite").as_uri() + "?immutable=1"))
    with pytest.raises(ResultsError, match="replaced while being opened"):
        load(tmp_path / "r")
