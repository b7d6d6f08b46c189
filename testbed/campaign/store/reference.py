"""A campaign's small, re-analysable data kept apart from its results folder, and a
campaign resumed from it on another machine.

    checkpoint(results, Path("reference"))   # trials.sqlite (trials and connections) and
                                             # manifest.json, copied out of a results
                                             # folder, even while a runner writes into it
    seed(out, Path("reference"), campaign)   # a new results folder's store begun with
                                             # the kept rows (`testbed run --resume-from`)

The copy of the store is a store made here (testbed.campaign.store.store.rebuild) holding
the rows of the known tables, read through the one bounded reader of stores from
elsewhere in one read transaction: one consistent snapshot of the committed rows,
taken without the runner's lock and without blocking it (WAL), as a single file (no
WAL). Nothing else of the source comes along: a store holding a trigger, a view or any
other object is refused, as is one whose tables lack the contract's columns. Videos,
HARs and Browsertime's JSON stay behind.

A seeded trial keeps its row but not its files: its folder in trials/ holds only
SEEDED, which says so (the runner's rule that every stored row has its folder
still holds, and nothing pretends the files exist). The kept manifest's sessions
come along, so a label whose content changed since (a recording, a profile) stops
the run as it would in the original folder. A recording counts as unchanged when its
content digest (testbed.formats.recording.content_digest) is the one a session
recorded, so another build of the corpus by the same code resumes; a checkpoint gives
sessions begun before content digests were recorded the digest of the recording found
now where its manifest.json is exactly the file they measured.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from results_contract.manifest import Campaign, Manifest, Session
from testbed.campaign.store import outdir, store
from testbed.errors import InputError

STORE = "trials.sqlite"
MANIFEST = "manifest.json"
SEEDED = "SEEDED"
"""The one file of a seeded trial's folder."""


def _regular(path: Path, what: str) -> None:
    """`path` is a regular file and no step of its folder a symlink (lstat)."""
    for p in (path.parent, path):
        try:
            mode = os.lstat(p).st_mode
        except FileNotFoundError:
            raise InputError(f"{p}: {what}: no such file or folder") from None
        want = stat.S_ISDIR if p is not path else stat.S_ISREG
        if not want(mode):
            raise InputError(f"{p}: {what}: expected a {'folder' if p is not path else 'file'}"
                             " (not a symlink)")


@contextmanager
def _rebuilt(source: Path, target: Path) -> Iterator[list[str]]:
    """The rows of the store `source` made into a store beside `target`
    (testbed.campaign.store.store.rebuild), its trial_ids; renamed into place when the block
    ends, removed if it fails."""
    new = target.with_name(target.name + ".new")
    new.unlink(missing_ok=True)
    try:
        yield store.rebuild(source, new)
        new.replace(target)
    finally:
        new.unlink(missing_ok=True)


def _manifest(folder: Path) -> Manifest | None:
    """The folder's manifest by the results loader (no symlink, checked, upgraded)."""
    from results_contract.load import ResultsError, load_manifest

    try:
        return load_manifest(folder)
    except ResultsError as e:
        raise InputError(str(e)) from None


def _write_json(path: Path, doc: Manifest) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(doc.text(), encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def checkpoint(results: Path, out: Path) -> dict:
    """Copy the store and manifest of the results folder `results` into the folder
    `out` (made if missing; checked by the caller): {trials, ok, failed, connections}."""
    results, out = Path(results), Path(out)
    _regular(results / STORE, "the results folder's store")
    manifest = _manifest(results)
    with store.reading(results / STORE):  # the contract's tables only: checked before
        pass                              # anything is made
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with _rebuilt(results / STORE, out / STORE):
            pass
    except BaseException:
        if made:
            with suppress(OSError):
                out.rmdir()
        raise
    if manifest is not None:
        _write_json(out / MANIFEST, with_content_digests(manifest)[0])
    return counts(out / STORE)


def with_content_digests(manifest: Manifest) -> tuple[Manifest, int]:
    """Give each session's recording that has no content digest the one of the
    recording found now under its label (the campaign's sites, resolved as the runner
    resolves them), where that recording's manifest.json has exactly the sha256 the
    session recorded: it is the same file. A session begun before content digests
    were recorded is then resumable with another build of its recordings. The manifest
    so (its top level derived again) and the number of entries given one."""
    wanted = [entry for s in manifest.sessions for entry in s.recordings.values()
              if entry.content_sha256 is None and entry.manifest_sha256 is not None]
    if not wanted:
        return manifest, 0
    found = _recordings_now(manifest.campaign)
    sessions = []
    added = 0
    for s in manifest.sessions:
        recordings = {}
        for label, entry in s.recordings.items():
            content = (found.get((label, entry.manifest_sha256))
                       if entry.content_sha256 is None and entry.manifest_sha256 else None)
            added += content is not None
            recordings[label] = (entry if content is None
                                 else entry.model_copy(update={"content_sha256": content}))
        sessions.append(s.model_copy(update={"recordings": recordings}))
    return manifest.with_sessions(sessions), added


def _recordings_now(campaign: Campaign | None) -> dict[tuple[str, str], str]:
    """(label, manifest.json's sha256) -> content digest of every recording the campaign's
    sites (its manifest's `campaign` record) stand for now; a site not found or not
    loading is left out (its sessions keep what they have)."""
    from testbed.campaign.plan import config

    if campaign is None or campaign.source is None:
        return {}
    source = campaign.source
    out = {}
    for listed in campaign.settings.sites:
        try:
            folders = [folder for _, _, folder in config.find_listed([str(listed)], source)]
        except InputError:
            continue
        for folder in folders:
            try:
                label, _, file_sha, content = config.site_identity(folder)
            except InputError:
                continue
            out[(label, file_sha)] = content
    return out


def counts(path: Path) -> dict:
    """{trials, ok, failed, connections} of the store at `path`."""
    with store.reading(path) as db:
        by = dict(db.rows("SELECT status, COUNT(*) FROM trials GROUP BY status"))
        conns = (db.rows("SELECT COUNT(*) FROM connections")[0][0]
                 if "connections" in db.tables() else 0)
    return {"trials": sum(by.values()), "ok": by.get("ok", 0), "failed": by.get("failed", 0),
            "connections": conns}


def _safe_id(trial_id: str) -> bool:
    return (bool(trial_id) and trial_id not in (".", "..") and "/" not in trial_id
            and "\0" not in trial_id)


def seed(out: Path, source: Path, campaign_name: str) -> int:
    """Begin the store of the results folder `out` (held by the caller, with no store
    yet) with the rows kept in `source` (a checkpoint, or another results folder of
    the same campaign): its trials and connections, its manifest's sessions, and a
    folder per trial holding only SEEDED. The number of trials seeded."""
    out, source = Path(out), Path(source)
    _regular(source / STORE, "--resume-from")
    if (out / STORE).exists() or (out / STORE).is_symlink():
        raise InputError(f"{out}: --resume-from: this results folder already has a store; "
                         "resume it without --resume-from, or give a new --out")
    trials = out / "trials"
    manifest = _manifest(source)
    kept = manifest.campaign.name if manifest is not None and manifest.campaign else None
    if kept is not None and kept != campaign_name:
        raise InputError(f"{source / MANIFEST}: --resume-from: holds campaign {kept!r}, "
                         f"not {campaign_name!r}")
    # the rows first, beside the store's place: a store that is not one changes nothing
    with _rebuilt(source / STORE, out / STORE) as ids:
        bad = [t for t in ids if not isinstance(t, str) or not _safe_id(t)]
        if bad:
            raise InputError(f"{source / STORE}: table trials: trial_id {bad[0]!r} is not one "
                             "folder name")
        trials.mkdir(parents=True, exist_ok=True)
        # no store: the folders there have no row (a seed stopped half-way), as the
        # runner's reconcile would remove them
        outdir.reconcile(trials, set())
        note = (f"Measured in an earlier session; seeded from {source} (its row only: the "
                "trial's HAR, video and Browsertime JSON were not kept).\n")
        for t in ids:
            (trials / t).mkdir()
            (trials / t / SEEDED).write_text(note, encoding="utf-8")
        if manifest is not None:
            now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
            _write_json(out / MANIFEST, manifest.with_session(
                Session(started_at=now, seeded_from=str(source), trials=len(ids))))
        # the store last (when the block ends): a seed stopped half-way leaves no store,
        # so it can be run again once the folders are removed (the runner's reconcile
        # removes folders without rows)
    return len(ids)
