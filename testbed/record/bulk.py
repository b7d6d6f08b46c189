"""`testbed record --list FILE`: record every site of a list file, one after another.

A site already recorded in the output folder is skipped (unless force); a
site that fails is reported with its line and cause and the next one is
recorded. What each line came to is an `Outcome`, for the closing table.
`record_one` is also what `testbed record URL --force` uses: the new
recording is made beside the old one and swapped in only when complete.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.formats import recording
from testbed.host import safefs
from testbed.record import recorder, sitelist
from testbed.record.recorder import RecordOptions

RECORDED, SKIPPED, FAILED, BAD = "recorded", "skipped", "failed", "bad line"


@dataclass(frozen=True)
class Outcome:
    line: int
    name: str
    url: str
    status: str
    """recorded, skipped, failed or bad line."""
    cause: str = ""
    origins: int | None = None
    ips: int | None = None
    requests: int | None = None
    bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.status in (RECORDED, SKIPPED)


def counted(o: Outcome, rec: recording.Recording) -> Outcome:
    return dataclasses.replace(o, origins=len(rec.origins), ips=len(rec.ips),
                               requests=len(rec.exchanges), bytes=rec.total_bytes)


def plan(entries: list[sitelist.Site | sitelist.Bad], out: Path, force: bool
         ) -> tuple[list[sitelist.Site], list[Outcome]]:
    """The sites to record now, and what the others came to (bad lines, and the
    sites already in OUT, skipped unless force)."""
    todo, done = [], []
    for e in entries:
        if isinstance(e, sitelist.Bad):
            done.append(Outcome(e.line, "", e.text, BAD, e.problem))
        elif not force and os.path.lexists(out / e.name):
            done.append(_existing(e, out / e.name))
        else:
            todo.append(e)
    return todo, done


def _existing(e: sitelist.Site, path: Path) -> Outcome:
    o = Outcome(e.line, e.name, e.url, SKIPPED)
    try:
        return counted(o, recording.load(path))
    except TestbedError as err:
        return dataclasses.replace(o, status=FAILED, cause=f"{path} exists but is not a "
                                   f"recording that loads ({err}); --force records it again")


def record_site(site: sitelist.Site, template: RecordOptions, force: bool,
                say: Callable[[str], None]) -> Outcome:
    """Record one site of the list; its failure becomes the Outcome's cause."""
    opts = dataclasses.replace(template, url=site.url, name=site.name)
    o = Outcome(site.line, site.name, site.url, RECORDED)
    try:
        return counted(o, recording.load(record_one(opts, force, say)))
    except TestbedError as e:
        return dataclasses.replace(o, status=FAILED, cause=str(e))


def record_one(opts: RecordOptions, force: bool, say: Callable[[str], None]) -> Path:
    """Record opts.url into OUT/NAME; with force, an existing OUT/NAME is replaced once
    the new recording is complete (kept if it fails)."""
    name = opts.name or recorder.default_name(opts.url)
    out = safefs.check_out_dir(Path(opts.out), "--out")
    final = out / name
    if not (force and os.path.lexists(final)):
        return recorder.record(dataclasses.replace(opts, name=name), progress=say)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out))
    try:
        new = recorder.record(dataclasses.replace(opts, name=name, out=staging), progress=say)
        old = staging / ".old"
        os.rename(final, old)
        os.rename(new, final)
    finally:
        if os.geteuid() == 0:
            safefs.rmtree(staging)
        else:
            shutil.rmtree(staging, ignore_errors=True)
    return final
