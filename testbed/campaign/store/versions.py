"""One results folder, one set of measuring parts.

A resumed campaign (`testbed run` again on its --out, or --resume-from a checkpoint)
stores its trials beside the ones stored before and the analysis compares them as one
sample. If the kernel, the browser, Browsertime, the servers or Mahimahi changed in
between (a fixed h3server, an upgraded Chromium), the stored trials and the new ones
measured different things; nothing in the store would show it. The manifest records
every session's versions (testbed.campaign.store.manifest.versions), so before the folder is
touched the runner compares them: each stored ok trial belongs to the session that
started last before it, and a session that measured stored trials with another version
of a measuring part stops the run (exit 2), unless the researcher mixes them on purpose
(`--mixed-versions`, recorded in the manifest's session).

The testbed's own commit, Python and Node are not measuring parts and may change.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from results_contract import schema
from testbed.campaign.store import store as store_mod
from testbed.errors import InputError

MEASURING = ("kernel", "chromium", "chromedriver", "browsertime", "nginx", "uwsgi",
             "h3server", "h3quinn", "mahimahi")
"""The versions (keys of the manifest's `versions`) that a campaign's trials depend on."""


@dataclass(frozen=True)
class Forgotten:
    """The stored trials a `--rerun-runs` will replace
    (testbed.campaign.store.store.Store.forget_runs): they do not count."""

    runs: frozenset[int]
    sites: Sequence[str]
    networks: Sequence[str]
    settings: Sequence[str]
    clients: Sequence[str]
    default_client: str = "chromium"

    def covers(self, row: tuple) -> bool:
        _, run, site, network, setting, client = row
        return (run in self.runs and site in self.sites and network in self.networks
                and setting in self.settings
                and (client or self.default_client) in self.clients)


def _time(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def _sessions(folder: Path) -> list[tuple[dt.datetime, int, dict[str, str]]]:
    """The folder's manifest's sessions that say when they started and what versions
    measured: (start, index in `sessions`, versions), oldest first; none without a
    manifest. InputError naming the file if it is not a manifest (read as the results
    loader reads it: never through a symlink, never a FIFO, checked by its model)."""
    from results_contract.load import ResultsError, load_manifest

    try:
        doc = load_manifest(folder)
    except ResultsError as e:
        raise InputError(f"{e} (it says which versions measured the stored trials)"
                         ) from None
    out = []
    for i, s in enumerate(doc.sessions if doc is not None else ()):
        start = _time(s.started_at)
        if start is not None and s.versions:
            out.append((start, i, s.versions))
    return sorted(out, key=lambda x: x[0])


def _ok_rows(db: Path) -> list[tuple]:
    """(started_at, run, site, network, setting, client) of the stored ok trials,
    read as any store from elsewhere (testbed.campaign.store.store.reading); none without a
    store. InputError if it is not a regular file (a symlink is not followed, a FIFO
    never waited on) or cannot be read: a store that cannot be read is never taken for
    one without trials."""
    try:
        mode = os.lstat(db).st_mode
    except FileNotFoundError:
        return []
    if not stat.S_ISREG(mode):
        raise InputError(f"{db}: expected a campaign store (a regular file, not a symlink "
                         "or anything else)")
    with store_mod.reading(db, contract=False) as con:
        have = con.columns("trials")
        client = "client" if "client" in have else "NULL"
        setting = schema.stored_name("setting", have)  # `protocol` in an older store
        return con.rows(f"SELECT started_at, run, site, network, {setting}, {client} "
                        "FROM trials WHERE status = 'ok'",
                        what="cannot read the stored trials' versions")


def differences(folder: Path, now: dict[str, str],
                forgotten: Forgotten | None = None) -> list[str]:
    """Why the stored ok trials of `folder` (its trials.sqlite and manifest.json) were
    measured with other versions than `now` (this machine's): one line per session
    and part, naming the manifest's key, the versions and how many trials.
    InputError if its manifest.json is not a manifest."""
    manifest = folder / "manifest.json"
    sessions = _sessions(folder)
    rows = _ok_rows(folder / "trials.sqlite") if sessions else []
    counts: dict[int, int] = {}
    for row in rows:
        if forgotten is not None and forgotten.covers(row):
            continue
        t = _time(row[0])
        if t is None:
            continue
        owner = None
        for k, (start, _, _) in enumerate(sessions):
            if start <= t:
                owner = k
        if owner is not None:
            counts[owner] = counts.get(owner, 0) + 1
    # per part and earlier version: its sessions (index) and their trials
    seen: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for k, n in sorted(counts.items()):
        _, index, then = sessions[k]
        for part in MEASURING:
            old, new = then.get(part), now.get(part)
            if isinstance(old, str) and old and new and old != new:
                seen.setdefault((part, old), []).append((index, n))
    out = []
    for (part, old), found in sorted(seen.items(), key=lambda kv: kv[1][0][0]):
        n = sum(c for _, c in found)
        more = f" (in {len(found)} sessions)" if len(found) > 1 else ""
        out.append(f"{manifest}: sessions[{found[0][0]}].versions.{part}: {n} stored "
                   f"trials were measured with {old!r}{more}, this machine has "
                   f"{now.get(part)!r}")
    return out
