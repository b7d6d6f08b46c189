"""A trial's files into the results folder, together with its row in the store.

    files = collect(outcome, out, keep_video)   # name -> bytes, or a staged Path
    store_trial(out, store, row, files)          # trials/<trial_id>/ + the row, or neither
    discard(files)                               # a trial that runs again: staged files gone

The files: browsertime.json (Browsertime's result of the iteration),
browsertime.har.gz (its HAR, gzipped), visualmetrics.json, video.mp4 if the
campaign keeps videos (moved out of the block's folder into trials/ at once,
into the trial's folder when stored), trial.json (testbed.campaign.run.rows), and
with telemetry connections.json: the trial's rows of table `connections`,
stored in the same transaction as its row.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from results_contract import trial_folder as tf
from testbed.campaign.store import outdir
from testbed.campaign.store.store import Row, Store
from testbed.measure.browser_process import Outcome


def collect(o: Outcome, out: Path, keep_video: bool) -> dict[str, bytes | Path]:
    """The trial's files from its outcome (out: the results folder)."""
    files: dict[str, bytes | Path] = {}
    if o.result is not None:
        files[tf.BROWSERTIME] = json.dumps(o.result).encode()
    if o.har is not None:  # about 100 kB a trial as text: kept gzipped
        files[tf.HAR] = gzip.compress(json.dumps(o.har).encode(), 6)
    if o.visual is not None:
        files[tf.VISUAL_METRICS] = json.dumps(o.visual).encode()
    if o.video is not None and keep_video and o.video.exists():
        # out of the block's folder (removed next); into the trial's when stored
        staged = out / tf.TRIALS_DIR / f".video-{os.getpid()}-{time.monotonic_ns()}.mp4"
        shutil.move(str(o.video), staged)
        _results_file(staged)
        files[tf.VIDEO] = staged
    return files


def _results_file(path: Path) -> None:
    """A file of the browser's, just moved into the results folder, made like the
    trial's other files (this process's, 0644): while the trial ran it was the
    testbed user's alone (0600)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchown(fd, os.geteuid(), os.getegid())
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)


def discard(files: Mapping[str, bytes | Path]) -> None:
    """Remove the staged files of a trial that is not stored."""
    for staged in files.values():
        if isinstance(staged, Path):
            staged.unlink(missing_ok=True)


def store_trial(out: Path, store: Store, row: Row, files: Mapping[str, bytes | Path]) -> None:
    """The trial's files into a temporary folder, then, in the transaction that
    stores its row, renamed into trials/<trial_id>: the row and the folder are
    stored together or not at all (a failure removes both; a process killed
    between rename and commit leaves a folder without a row, which the next
    run's reconcile removes)."""
    final = out / tf.TRIALS_DIR / row.trial_id
    tmp = final.with_name(f".{row.trial_id}.tmp")
    placed = False
    try:
        outdir.remove(tmp)
        tmp.mkdir()
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.move(str(content), tmp / name)
            else:
                (tmp / name).write_bytes(content)
        listed = tmp / tf.CONNECTIONS
        conns = json.loads(listed.read_bytes()) if tf.CONNECTIONS in files else []
        with store.adding(row, conns):  # IntegrityError (nothing touched) if already stored
            outdir.remove(final)  # no row: what a killed run left
            tmp.rename(final)
            placed = True
    except BaseException:
        if placed:
            outdir.remove(final)
        outdir.remove(tmp)
        discard(files)
        raise
