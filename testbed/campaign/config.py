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
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from testbed import profiles
from testbed import recording as rec
from testbed.errors import InputError

ROOT = Path(__file__).resolve().parent.parent.parent
CAMPAIGNS_DIR = ROOT / "profiles" / "campaigns"


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
    runs: int = Field(default=31, ge=1, le=10_000)
    """Page loads per site, network and protocol setting."""
    timeout_s: float = Field(default=120, gt=0, le=3600)
    """Longest a page load may take; a slower one fails as `timeout`."""
    retries: int = Field(default=2, ge=0, le=10)
    """How often a failed trial is tried again before it is stored as failed."""
    keep_video: bool = False
    """Keep each trial's screen recording (large); visual metrics are computed either way."""
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
    raw = p.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{p}: not valid TOML: {e}") from None
    for reserved in ("name", "source", "digest"):
        if reserved in data:
            raise InputError(f"{p}: key {reserved}: unknown key (set from the file, not in it)")
    try:
        c = Campaign.model_validate({**data, "name": p.stem, "source": str(p),
                                     "digest": hashlib.sha256(raw).hexdigest()})
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(k for k in Campaign.model_fields
                                if k not in ("name", "source", "digest"))
            msg = f"unknown key (allowed: {allowed})"
        elif err["type"] == "missing":
            msg = "missing (required)"
        raise InputError(f"{p}: key {key}: {msg}") from None
    if check_names:
        _check_names(c, p)
    return c


def _check_names(c: Campaign, p: Path) -> None:
    for i, site in enumerate(c.sites):
        try:
            rec.resolve(site)
        except InputError as e:
            raise InputError(f"{p}: key sites.{i}: {e}") from None
    for key, loader in (("networks", profiles.load_network), ("protocols", profiles.load_protocol)):
        for i, name in enumerate(getattr(c, key)):
            try:
                loader(name)
            except InputError as e:
                raise InputError(f"{p}: key {key}.{i}: {e}") from None
