"""Campaign files: which sites, networks and protocol settings, how many runs.

    # profiles/campaigns/smoke.toml
    sites = ["local-news"]               # recordings (recordings/NAME or a path)
    networks = ["dsl"]                   # profiles/networks/NAME
    protocols = ["tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"]
    runs = 1

Loaded into a frozen, validated model; every problem is an InputError of one
line naming the file and the key. Names are checked against the recordings
and profiles that exist when the campaign is loaded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from testbed import profiles, tomlfile
from testbed import recording as rec
from testbed.errors import InputError
from testbed.measure.browsertime import VIDEO_FPS
from testbed.paths import CAMPAIGNS_DIR


class Campaign(BaseModel):
    """A matrix of trials: sites x networks x protocols x runs."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str = Field(default="", exclude=True)
    """The campaign's name: its file name without .toml (set by the loader)."""
    source: str = Field(default="", exclude=True)
    """The file it was loaded from (set by the loader)."""
    digest: str = Field(default="", exclude=True)
    """sha256 of the file's bytes."""
    description: str = ""
    """One line for people."""
    sites: tuple[str, ...] = Field(min_length=1)
    """Recordings to load: names in recordings/ or paths to recording folders."""
    networks: tuple[str, ...] = Field(min_length=1)
    """Network profiles (profiles/networks/NAME or a path to a TOML file)."""
    protocols: tuple[str, ...] = Field(min_length=1)
    """Protocol settings (profiles/protocols/NAME or a path to a TOML file)."""
    runs: int = Field(default=31, ge=1, le=10_000)  # MAX_RUNS
    """Page loads per site, network and protocol setting."""
    timeout_s: float = Field(default=120, gt=0, le=3600)
    """Longest a page load may take; a slower one fails as `timeout`."""
    retries: int = Field(default=2, ge=0, le=10)
    """How often a failed trial is tried again before it is stored as failed."""
    keep_video: bool = False
    """Keep each trial's screen recording (large); visual metrics are computed either way."""
    video_fps: int = Field(default=VIDEO_FPS, ge=10, le=120)
    """Frames per second of the screen recording: FVC, LVC, VC85 and SI move in steps of
    one frame (16.7 ms at 60)."""
    seed: int = 0
    """Seeds the order of the trials (the same seed gives the same order)."""
    settle_ms: int = Field(default=1000, ge=0, le=60_000)
    """A load ends when, after the load event, the network was quiet this long..."""
    settle_max_ms: int = Field(default=5000, ge=0, le=600_000)
    """...or this long after the load event at the latest (captures late paints)."""
    max_misses: int | None = Field(default=None, ge=0)
    """Fail trials with more replay misses than this; omitted: misses are only counted."""
    stop_after_failures: int = Field(default=20, ge=1)
    """Stop the campaign when this many stored trials in a row failed (a broken setup
    would otherwise mark every remaining trial failed); resume with --retry-failed."""

    @field_validator("sites", "networks", "protocols")
    @classmethod
    def _distinct(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            dup = sorted({x for x in v if v.count(x) > 1})
            raise ValueError(f"listed twice: {', '.join(dup)}")
        return v


def _locate(path: str | Path) -> Path:
    text = str(path)
    p = Path(text)
    if not p.is_file() and "/" not in text and not text.endswith(".toml"):
        p = CAMPAIGNS_DIR / f"{text}.toml"
    if not p.is_file():
        names = ", ".join(sorted(x.stem for x in CAMPAIGNS_DIR.glob("*.toml"))) or "none"
        raise InputError(f"{text}: no such campaign file (in {CAMPAIGNS_DIR}: {names})")
    return p


def load(path: str | Path, check_names: bool = True) -> Campaign:
    """Load and validate a campaign file (a path, or a name in profiles/campaigns/)."""
    p = _locate(path)
    c = tomlfile.load(p, Campaign, what="campaign")
    check_size(c, c.runs, "key runs")
    if check_names:
        _check_names(c, p)
    return c


MAX_RUNS = 10_000
"""The most runs a campaign (or --runs) may ask for."""
MAX_TRIALS = 200_000
"""The most trials a plan may hold (sites x networks x protocols x runs); the plan is
built in memory, and at a minute a trial this is months of measuring."""


def check_size(c: Campaign, runs: int, what: str = "--runs") -> None:
    """InputError unless `runs` runs of the campaign are within the caps."""
    if not 1 <= runs <= MAX_RUNS:
        raise InputError(f"{what}: expected a whole number from 1 to {MAX_RUNS}, got {runs}")
    total = len(c.sites) * len(c.networks) * len(c.protocols) * runs
    if total > MAX_TRIALS:
        raise InputError(f"{c.source}: {what}: {len(c.sites)} sites x {len(c.networks)} "
                         f"networks x {len(c.protocols)} protocols x {runs} runs = {total} "
                         f"trials; expected at most {MAX_TRIALS}")


@dataclass(frozen=True)
class Entry:
    """What a label of the campaign (a site, network or protocol name) stands for."""

    label: str
    """The name its trials are stored under (a profile's file name, a recording's name)."""
    file: Path
    """The file behind it, resolved (a profile's TOML file, a recording's folder)."""
    digest: str
    """sha256 of the content (a profile's bytes, a recording's manifest.json)."""
    listed: tuple[str, ...]
    """How the campaign listed it (a name, a path, a symlink: one or more)."""


def resolve(c: Campaign) -> dict[str, dict[str, Entry]]:
    """Every label of the campaign by kind (sites, networks, protocols), each once.

    Entries that resolve to the same label and the same content (one file listed
    by name, path and symlink, or a copy) are one label; two entries with one
    label but different content are refused: their trials could not be told apart.
    """
    out: dict[str, dict[str, Entry]] = {}
    for key, ident in (("sites", _site), ("networks", _network), ("protocols", _protocol)):
        seen: dict[str, tuple[int, Entry]] = {}
        for i, listed in enumerate(getattr(c, key)):
            try:
                label, file, digest = ident(listed)
            except InputError as e:
                raise InputError(f"{c.source}: key {key}.{i}: {e}") from None
            if label in seen:
                j, first = seen[label]
                if first.digest != digest:
                    raise InputError(
                        f"{c.source}: key {key}.{i}: {listed} ({file}) is named {label} like "
                        f"{key}.{j} ({first.file}) but differs from it; give one another name")
                seen[label] = (j, Entry(label, first.file, digest, (*first.listed, listed)))
            else:
                seen[label] = (i, Entry(label, file, digest, (listed,)))
        out[key] = {label: e for label, (_, e) in seen.items()}
    return out


def _site(listed: str) -> tuple[str, Path, str]:
    r = rec.load(listed)
    manifest = r.path / "manifest.json"
    return r.name, r.path.resolve(), hashlib.sha256(manifest.read_bytes()).hexdigest()


def _network(listed: str) -> tuple[str, Path, str]:
    p = profiles.load_network(listed)
    _check_trace_buffer(p)
    return p.name, Path(p.source).resolve(), p.digest


def _protocol(listed: str) -> tuple[str, Path, str]:
    p = profiles.load_protocol(listed)
    return p.name, Path(p.source).resolve(), p.digest


def _check_trace_buffer(p: profiles.NetworkProfile) -> None:
    """A trace-driven link's buffer holds at least one packet at the trace's mean rate
    (a rate-driven one is checked when its profile loads)."""
    if p.buffer_ms is None:
        return
    from fractions import Fraction

    from testbed import traces

    for d in ("uplink", "downlink"):
        path = p.trace_path(d)
        if path is None:
            continue
        try:
            trace = traces.read_trace(path)
        except (OSError, ValueError) as e:
            raise InputError(f"{p.source}: key {d}_trace: expected a Mahimahi trace file, "
                             f"got {path}: {e}") from None
        if Fraction(str(p.buffer_ms)) * trace.per_ms < 1:
            raise InputError(f"{p.source}: key buffer_ms: expected at least one 1500-byte "
                             f"packet of queue (>= {float(1 / trace.per_ms):.4g} ms at "
                             f"{d}_trace's mean rate), got {p.buffer_ms:g}")


def _check_names(c: Campaign, p: Path) -> None:
    resolve(c)
