"""A trial's kept files, read from a results folder that may be hostile.

A results folder holds `trials/<trial_id>/` with the files of
results_contract.trial_folder (their names are spelled there only). Whoever
wrote the folder could have planted a symlink to a file outside it, a FIFO, a
gzip bomb or a name with `/` in it, and the reader may be root (`testbed trial`,
`testbed report`). So every file here is read through results_contract.results_io
(one step at a time from the results folder, never through a symlink, only a regular file, up to a cap), and a HAR or
visual-metrics file only in its expected shape (results_contract.shapes).

    with TrialFiles(results, trial_id) as files:
        har = files.json(trial_folder.HAR)          # None if not kept
        fd = files.open(trial_folder.VIDEO)         # for ffmpeg, or None
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self

from results_contract import shapes, trial_folder
from results_contract.results_io import MAX_FILE, MAX_JSON, Folder, ResultsError  # noqa: F401

SHAPES = {trial_folder.HAR: shapes.har, trial_folder.VISUAL_METRICS: shapes.visual_metrics}
"""Kept JSON files whose shape the analysis relies on, and their check."""

MAX_NAME = 255
"""Most bytes of a file name (Linux's NAME_MAX): a longer trial_id names no folder."""


def folder_name_problem(trial_id: str) -> str | None:
    """Why `trial_id` cannot name one folder in trials/, or None if it can."""
    if trial_id in ("", ".", "..") or "/" in trial_id or "\0" in trial_id:
        return "expected the id of one trial (site+network+protocol+run), not a path"
    if len(trial_id.encode("utf-8", "surrogateescape")) > MAX_NAME:
        return f"expected at most {MAX_NAME} bytes (the longest file name)"
    return None


class TrialFiles:
    """The files of trials/<trial_id>/ below `results`; missing folder: every file None."""

    def __init__(self, results: Path, trial_id: str) -> None:
        self.results = Path(results)
        self.trial_id = trial_id
        self.where = self.results / trial_folder.TRIALS_DIR / trial_id
        self._folder = Folder(self.results)
        self.exists = False

    def __enter__(self) -> Self:
        problem = folder_name_problem(self.trial_id)
        if problem:
            raise ResultsError(f"{self.where}: {problem}")
        self._folder.__enter__()
        try:
            fd = self._folder.folder(trial_folder.TRIALS_DIR, self.trial_id)
        except BaseException:
            self._folder.__exit__()
            raise
        if fd is not None:
            os.close(fd)
            self.exists = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._folder.__exit__()

    def open(self, name: str) -> int | None:
        """An fd of the regular file `name` in the trial's folder (the caller closes
        it), None if it is not there; ResultsError for a symlink, FIFO or folder."""
        return self._folder.open(trial_folder.TRIALS_DIR, self.trial_id, name) if self.exists else None

    def read(self, name: str, limit: int = MAX_FILE) -> bytes | None:
        """The bytes of `name` (at most `limit`), None if it is not there."""
        return (self._folder.read(trial_folder.TRIALS_DIR, self.trial_id, name, limit=limit)
                if self.exists else None)

    def json(self, name: str) -> Any:
        """The JSON in `name` (gunzipped when it ends in .gz), None if it is not there;
        a HAR or visual-metrics file only in its shape (results_contract.shapes)."""
        data = self._folder.json(trial_folder.TRIALS_DIR, self.trial_id, name) if self.exists else None
        check = SHAPES.get(name)
        return data if data is None or check is None else check(data, self.where / name)
