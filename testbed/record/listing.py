"""What `testbed recording list` shows: one row per recording found, and a summary
of the set (pure, apart from `found`, which loads them).

The summary gives the deciles p10/p50/p90 of requests, bytes and server IPs
per page (statistics.quantiles, inclusive method: numpy's default linear
interpolation) and how many sites have one origin (the paper's single-origin
sites) and how many five or more; for all recordings, and for each set
(`set_of`: the corpus's `paper` and `today`, else the folder they are in).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.formats import recording, recording_search
from testbed.record.recording_summary import summarise

MANY_ORIGINS = 5


@dataclass(frozen=True)
class Listed:
    name: str
    """The folder's path below the folder it was found in (corpus/news)."""
    path: Path
    url: str = ""
    recorded_at: str = ""
    origins: int = 0
    """Distinct host names (the results store's `origins`)."""
    requests: int = 0
    bytes: int = 0
    ips: int = 0
    """Distinct server IPs (hosts on one IP share it: corpus/addressing.py)."""
    problem: str = ""
    """Why the recording does not load ('' if it does)."""

    @property
    def kind(self) -> str:
        if self.problem:
            return "invalid"
        return "single-origin" if self.origins == 1 else "multi-origin"


@dataclass(frozen=True)
class Figures:
    recordings: int
    requests: tuple[float, float, float]
    """p10, p50, p90 of requests per page."""
    bytes: tuple[float, float, float]
    ips: tuple[float, float, float]
    """p10, p50, p90 of server IPs per page."""
    largest: int
    """The heaviest page's bytes."""
    single_origin: int
    many_origins: int
    """Sites with MANY_ORIGINS origins or more."""
    invalid: int


def found(folders: list[Path]) -> list[Listed]:
    """Each folder (a search path folder or DIR) walked for recordings; a relative path
    seen in an earlier folder hides the same one in a later folder."""
    rows: dict[str, Listed] = {}
    for base in folders:
        for path in recording_search.walk(base):
            name = str(path.relative_to(base))
            if name not in rows:
                rows[name] = row(name, path)
    return [rows[k] for k in sorted(rows)]


def row(name: str, path: Path) -> Listed:
    try:
        rec = recording.load(path)
    except TestbedError as e:
        return Listed(name, path, problem=str(e))
    except RecursionError:  # a manifest nested thousands deep: this one is invalid, go on
        return Listed(name, path, problem=f"{path / 'manifest.json'}: nested too deep to "
                                          "read; expected a recording manifest")
    s = summarise(rec)
    # Origins counted as the results store counts them (rows.py: host names), so that
    # single-origin here is single-origin in the analysis.
    return Listed(name, path, rec.url, rec.recorded_at, len(rec.hosts), s.requests, s.bytes,
                  len(rec.ips))


def set_of(name: str) -> str:
    """The set a listed recording belongs to: the corpus set it is in (`paper`,
    `today`; recordings/corpus/SET/NAME), else the folder it is in ("." for none)."""
    parents = Path(name).parts[:-1]
    for part in reversed(parents):
        if part in recording_search.SETS:
            return part
    return "/".join(parents) or "."


def by_set(rows: list[Listed]) -> dict[str, Figures]:
    """The figures of each set, sorted by its name."""
    groups: dict[str, list[Listed]] = {}
    for r in rows:
        groups.setdefault(set_of(r.name), []).append(r)
    return {k: figures(groups[k]) for k in sorted(groups)}


def deciles(values: list[int]) -> tuple[float, float, float]:
    """p10, p50, p90 (all the one value when there is one; zeros when none)."""
    if not values:
        return (0.0, 0.0, 0.0)
    if len(values) == 1:
        return (float(values[0]),) * 3
    q = statistics.quantiles(values, n=10, method="inclusive")
    return (q[0], q[4], q[8])


def figures(rows: list[Listed]) -> Figures:
    good = [r for r in rows if not r.problem]
    return Figures(
        recordings=len(good),
        requests=deciles([r.requests for r in good]),
        bytes=deciles([r.bytes for r in good]),
        ips=deciles([r.ips for r in good]),
        largest=max((r.bytes for r in good), default=0),
        single_origin=sum(r.origins == 1 for r in good),
        many_origins=sum(r.origins >= MANY_ORIGINS for r in good),
        invalid=len(rows) - len(good),
    )


def summary_pairs(f: Figures) -> list[tuple[str, str]]:
    """The summary as (header, value) pairs."""
    def three(v: tuple[float, float, float]) -> str:
        return "/".join(f"{x:.0f}" for x in v)
    pairs = [("recordings", str(f.recordings)),
             ("requests p10/p50/p90", three(f.requests)),
             ("bytes p10/p50/p90", three(f.bytes)),
             ("server IPs p10/p50/p90", three(f.ips)),
             ("largest bytes", str(f.largest)),
             ("single-origin", str(f.single_origin)),
             (f">={MANY_ORIGINS} origins", str(f.many_origins))]
    if f.invalid:
        pairs.append(("invalid", str(f.invalid)))
    return pairs
