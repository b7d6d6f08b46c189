"""A trial's kept files, read from a results folder that may be hostile.

A results folder holds `trials/<trial_id>/` with browsertime.har.gz,
browsertime.json, visualmetrics.json, trial.json and video.mp4 when kept
(analysis.schema). Whoever wrote the folder could have planted a symlink to
a file outside it, a FIFO, a gzip bomb or a name with `/` in it, and the
reader may be root (`testbed trial`, `testbed report`). So every file here is
opened relative to the results folder one step at a time, never through a
symlink, only if it is a regular file, and read up to a cap.

    with TrialFiles(results, trial_id) as files:
        har = files.json("browsertime.har.gz")      # None if not kept
        fd = files.open("video.mp4")                 # for ffmpeg, or None
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Self

from analysis.load import ResultsError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

MAX_FILE = 64 << 20
"""Most bytes read from one kept file (a HAR is about 100 kB gzipped)."""
MAX_JSON = 256 << 20
"""Most bytes a gzipped JSON file may inflate to."""

KEPT = ("browsertime.har.gz", "browsertime.json", "visualmetrics.json", "trial.json",
        "video.mp4")
"""The files a trial folder may hold."""


def folder_name_problem(trial_id: str) -> str | None:
    """Why `trial_id` cannot name one folder in trials/, or None if it can."""
    if trial_id in ("", ".", "..") or "/" in trial_id or "\0" in trial_id:
        return "expected the id of one trial (site+network+protocol+run), not a path"
    return None


class TrialFiles:
    """The files of trials/<trial_id>/ below `results`; missing folder: every file None."""

    def __init__(self, results: Path, trial_id: str):
        self.results = Path(results)
        self.trial_id = trial_id
        self.where = self.results / "trials" / trial_id
        self._fd: int | None = None

    def __enter__(self) -> Self:
        problem = folder_name_problem(self.trial_id)
        if problem:
            raise ResultsError(f"{self.where}: {problem}")
        try:  # the folder the user named (it may be a symlink the user chose)
            top = os.open(self.results, _DIR & ~os.O_NOFOLLOW)
        except OSError as e:
            raise ResultsError(f"{self.results}: cannot open the results folder "
                               f"({e.strerror})") from None
        try:
            trials = _step(top, "trials", _DIR, self.results / "trials")
            if trials is not None:
                try:
                    self._fd = _step(trials, self.trial_id, _DIR, self.where)
                finally:
                    os.close(trials)
        finally:
            os.close(top)
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def exists(self) -> bool:
        return self._fd is not None

    def open(self, name: str) -> int | None:
        """An fd of the regular file `name` in the trial's folder (the caller closes
        it), None if it is not there; ResultsError for a symlink, FIFO or folder."""
        if self._fd is None:
            return None
        fd = _step(self._fd, name, _FILE, self.where / name)
        if fd is None:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ResultsError(f"{self.where / name}: not a regular file; not read")
        return fd

    def read(self, name: str, limit: int = MAX_FILE) -> bytes | None:
        """The bytes of `name` (at most `limit`), None if it is not there."""
        fd = self.open(name)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise ResultsError(f"{self.where / name}: more than {limit} bytes; not read")
        return raw

    def json(self, name: str):
        """The JSON in `name` (gunzipped when it ends in .gz), None if it is not there."""
        raw = self.read(name)
        if raw is None:
            return None
        path = self.where / name
        if name.endswith(".gz"):
            try:
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                raw = inflater.decompress(raw, MAX_JSON)
                if inflater.unconsumed_tail:
                    raise ResultsError(f"{path}: inflates to more than {MAX_JSON} bytes; "
                                       "not read")
            except (zlib.error, gzip.BadGzipFile) as e:
                raise ResultsError(f"{path}: not gzip ({e})") from None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as e:
            raise ResultsError(f"{path}: not JSON ({str(e)[:80]})") from None


def _step(dirfd: int, name: str, flags: int, path: Path) -> int | None:
    try:
        return os.open(name, flags, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP (a symlink), ENOTDIR, ENXIO
        raise ResultsError(f"{path}: a symlink or not a regular file or folder "
                           f"({e.strerror}); not read") from None
