"""Hostile input to `testbed trial RESULTS TRIAL_ID`: a trial id that is a path or not
in the store, a results folder that is not one, kept files that are symlinks out of it,
FIFOs or not what their names say. One line naming the file, exit 2, nothing written."""

from __future__ import annotations

import gzip
import os

import pytest
from support.hostile_harness import Case, run_case

from analysis import synthetic

TRIALS = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp-plus"], runs=2, seed=1,
                            failure_rate=0.0)
ID = TRIALS["trial_id"].iloc[0]


def store(folder, host):
    synthetic.write_folder(TRIALS, folder / "r")
    (folder / "r" / "trials" / ID).mkdir(parents=True)


def har_to_secret(folder, host):
    store(folder, host)
    (folder / "r" / "trials" / ID / "browsertime.har.gz").symlink_to(host.secret)


def trial_folder_outside(folder, host):
    synthetic.write_folder(TRIALS, folder / "r")
    (folder / "r" / "trials").mkdir()
    (folder / "r" / "trials" / ID).symlink_to(host.secret.parent)


def fifo_har(folder, host):
    store(folder, host)
    os.mkfifo(folder / "r" / "trials" / ID / "browsertime.har.gz")


def not_gzip(folder, host):
    store(folder, host)
    (folder / "r" / "trials" / ID / "browsertime.har.gz").write_bytes(b"not gzip at all")


def not_json(folder, host):
    store(folder, host)
    (folder / "r" / "trials" / ID / "browsertime.har.gz").write_bytes(gzip.compress(b"{nope"))


def video_to_secret(folder, host):
    store(folder, host)
    (folder / "r" / "trials" / ID / "video.mp4").symlink_to(host.secret)


def open_out(folder, host):
    store(folder, host)
    (folder / "open").mkdir()
    (folder / "open").chmod(0o777)


OUT = ["--output", "{dir}/page.html"]
CASES = [
    Case("trial-missing-results", ["trial", "{dir}/nope", ID, *OUT],
         ["{dir}/nope", "expected a campaign results folder"]),
    Case("trial-folder-without-store", ["trial", "{dir}/empty", ID, *OUT],
         ["{dir}/empty", "trials.sqlite"], prepare=lambda d, h: (d / "empty").mkdir()),
    Case("trial-id-is-a-path", ["trial", "{dir}/r", "../../host/secret", *OUT],
         ["TRIAL_ID", "not a path"], prepare=store, may_write=True),
    Case("trial-id-unknown", ["trial", "{dir}/r", "nope+dsl+tcp+0", *OUT],
         ["{dir}/r", "no trial 'nope+dsl+tcp+0'", "among its 2 trials"], prepare=store,
         may_write=True),
    Case("trial-har-symlink-to-secret", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}/browsertime.har.gz", "a symlink"], prepare=har_to_secret,
         may_write=True),
    Case("trial-folder-symlink-out", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}", "a symlink"], prepare=trial_folder_outside,
         may_write=True),
    Case("trial-har-fifo", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}/browsertime.har.gz", "not a regular file"],
         prepare=fifo_har, may_write=True),
    Case("trial-har-not-gzip", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}/browsertime.har.gz", "not gzip"], prepare=not_gzip,
         may_write=True),
    Case("trial-har-not-json", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}/browsertime.har.gz", "not JSON"], prepare=not_json,
         may_write=True),
    Case("trial-video-symlink-to-secret", ["trial", "{dir}/r", ID, *OUT],
         [f"{{dir}}/r/trials/{ID}/video.mp4", "a symlink"], prepare=video_to_secret,
         may_write=True),
    Case("trial-out-in-a-folder-the-testbed-user-writes",
         ["trial", "{dir}/r", ID, "--output", "{dir}/open/x/page.html"],
         ["--output", "{dir}/open", "writable by the testbed user"], prepare=open_out,
         may_write=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_trial(case, tmp_path):
    cp = run_case(case, tmp_path)
    assert not (tmp_path / "case" / "page.html").exists()
    assert cp.stdout == ""
