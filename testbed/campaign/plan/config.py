"""Campaign files: which sites, networks and protocol settings, how many runs.

    # profiles/campaigns/smoke.toml
    sites = ["local-news", "corpus/*"]   # recordings: names, paths, globs
    networks = ["dsl"]                   # profiles/networks/NAME
    protocols = ["tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"]
    runs = 1

Loaded into a frozen, validated model; every problem is an InputError of one
line naming the file and the key. Names are checked against the recordings
and profiles that exist when the campaign is loaded.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from results_contract import schema
from testbed.campaign.plan.adaptive import AdaptiveRuns
from testbed.campaign.plan.lanes import AUTO, MAX_LANES
from testbed.errors import InputError
from testbed.formats import profiles, tomlfile
from testbed.formats import recording as rec
from testbed.formats import recording_search as search
from testbed.formats.profiles import MAX_FPS, MIN_FPS
from testbed.formats.tomlfile import KeyProblem
from testbed.host.paths import CAMPAIGNS_DIR

VISITS = ("first", "warm")
"""How a trial visits its page: `first`, a fresh browser profile (no cache, no
session to resume); `warm`, the same browser loads the page once unmeasured, its
HTTP cache is cleared and its connections closed, then the measured load
resumes the TLS / QUIC sessions of that first load (testbed.measure.browser_process)."""


class Campaign(tomlfile.LoadedFile):
    """A matrix of trials: sites x networks x protocols x runs (name, source, digest,
    description: LoadedFile)."""

    # strict: `runs = "3"` or `keep_video = 1` is refused, not converted; the three
    # lists are TOML arrays (lists), taken as tuples of strings (each one strict)
    sites: tuple[StrictStr, ...] = Field(min_length=1, strict=False)
    """Recordings: a name (found in the search path), a path (with a `/` or starting with
    `.`: against the campaign file's folder), or a glob (`corpus/*`) over either."""
    networks: tuple[StrictStr, ...] = Field(min_length=1, strict=False)
    """Network profiles (profiles/networks/NAME or a path to a TOML file)."""
    protocols: tuple[StrictStr, ...] = Field(min_length=1, strict=False)
    """Protocol settings (profiles/protocols/NAME or a path to a TOML file)."""
    client: tuple[Literal["chromium", "firefox"], ...] = Field(
        default=(schema.DEFAULT_CLIENT,), min_length=1, strict=False)
    """The browsers that load the pages (`chromium`, `firefox`): every site, network,
    setting and run once in each; comparisons are made within a client."""
    runs: int | AdaptiveRuns = 31
    """Page loads per site, network and protocol setting (1 to 10000), or a table
    `{ min = N, max = M, precision = "2%" }`: each site x network gets runs until every
    setting's 95 % interval of the PLT mean is within +-precision (a share of the mean,
    or "50ms"), at least min and at most max (testbed.campaign.plan.adaptive)."""

    @property
    def max_runs(self) -> int:
        """The runs the plan holds: `runs`, or its max."""
        return self.runs.max if isinstance(self.runs, AdaptiveRuns) else self.runs

    @property
    def adaptive(self) -> AdaptiveRuns | None:
        return self.runs if isinstance(self.runs, AdaptiveRuns) else None
    timeout_s: float = Field(default=120, gt=0, le=3600)
    """Longest a page load may take; a slower one fails as `timeout`."""
    retries: int = Field(default=2, ge=0, le=10)
    """How often a failed trial is tried again before it is stored as failed."""
    keep_video: bool = False
    """Keep each trial's screen recording (large); visual metrics are computed either way."""
    video: bool = True
    """Record the screen and compute the visual metrics (FVC, LVC, VC85, SI). False: a
    trial measures PLT and the browser's own timings only, at less CPU (bench/quic-heavy
    --suspects cpu measures what the video's CPU does to a comparison)."""
    video_fps: int | None = Field(default=None, ge=MIN_FPS, le=MAX_FPS)
    """Frames per second of the screen recording on every network: FVC, LVC, VC85 and SI
    move in steps of one frame (16.7 ms at 60). Omitted: each network profile's own
    (its `video_fps`, or the default for its RTT: 60 on DSL and LTE, 20 on DA2GC, 10 on
    MSS; testbed.formats.profiles.frame_rate_for)."""

    video_pipeline: Literal["lean", "legacy"] = "lean"
    """How the screen is recorded (testbed.measure.browsertime.PIPELINES): `lean`, the
    page's rows only and a frame only when it changed (the same visual metrics at a
    fraction of the CPU); `legacy`, every frame of the window at the rate asked, as
    Browsertime records (kept to compare: bench/cpu_budget --pipeline)."""

    def fps_of(self, network: profiles.NetworkProfile) -> int:
        """The frame rate trials on `network` are recorded at."""
        return self.video_fps if self.video_fps is not None else network.fps
    seed: int = 0
    """Seeds the order of the trials (the same seed gives the same order)."""
    settle_ms: int = Field(default=300, ge=0, le=60_000)
    """A load ends when, after the load event, the network was quiet this long..."""
    settle_max_ms: int = Field(default=5000, ge=0, le=600_000)
    """...or this long after the load event at the latest (captures late paints)."""
    max_misses: int | None = Field(default=None, ge=0)
    """Fail trials with more replay misses than this; omitted: misses are only counted."""
    visit: Any = "first"
    """`first` (every trial a first visit), `warm` (every trial a warm visit), or a
    table naming the visit of settings listed in `protocols` (the others: first),
    e.g. `{ quic-0rtt = "warm" }`."""
    telemetry: bool = True
    """Record every connection's transport figures (TCP tcp_info from the kernel, QUIC
    from h3server) in table `connections`."""
    capture: tuple[Literal["netlog", "pcap", "keylog", "qlog", "mozlog"], ...] = Field(
        default=(), strict=False)
    """Extra files kept per trial, gzipped, sizes in trial.json: Chromium's net-log
    (netlog), the server side's packets (pcap), Chromium's TLS keys (keylog), h3server's
    qlog of each QUIC connection (qlog), Firefox's HTTP log (mozlog); see
    testbed.measure.captures."""
    lanes: Any = 1
    """Blocks measured at once on this machine, each in a replay topology of its own
    (testbed.campaign.plan.lanes): a whole number from 1 (one at a time) to 16, or `"auto"`
    (per network, what bench/lanes found equivalent to one lane on this machine)."""
    max_load_before_start: float | None = Field(default=None, gt=0, le=1)
    """Before each page load, wait until the whole machine's CPU was at most this busy
    (0 < x <= 1, a share of all cores) over the last second, at most
    testbed.measure.load.MAX_WAIT_S; a trial whose wait ran out is measured anyway and
    flagged (load_over_limit). Omitted: no wait (every trial still records its load)."""
    layout: Literal["recorded", "split"] = "recorded"
    """Which hosts share an address and a certificate (testbed.replay.layout): `recorded`,
    as the recording has them; `split`, every host on its own address with its own
    certificate, so the browser pools none of them."""
    deterministic_scripts: bool = True
    """Every replayed HTML document runs a script first that seeds Math.random (and
    crypto.getRandomValues) and starts Date at the recording's time, so a page's own
    scripts request the same URLs in every trial (testbed.replay.deterministic, as Web
    Page Replay does); false: pages run as recorded, their random URLs served by the
    closest recorded match."""
    stop_after_failures: int = Field(default=20, ge=1)
    """Stop the campaign when this many stored trials in a row failed (a broken setup
    would otherwise mark every remaining trial failed); resume with --retry-failed."""

    _found: tuple[tuple[int, str, Path], ...] | None = PrivateAttr(default=None)
    """Each site as found when the campaign was loaded: (index in `sites`, how it was
    listed or what its glob matched, the recording folder)."""

    @model_validator(mode="after")
    def _visits_of_listed(self) -> Campaign:
        """`visit`: "first", "warm", or a table of listed settings to either."""
        kinds = " or ".join(f'"{v}"' for v in VISITS)
        if isinstance(self.visit, dict):
            for key, value in self.visit.items():
                if key not in self.protocols:
                    raise KeyProblem(f"visit.{key}", "expected a setting listed in protocols "
                                     f"({', '.join(self.protocols)})")
                if value not in VISITS or not isinstance(value, str):
                    raise KeyProblem(f"visit.{key}", f"expected {kinds}, got "
                                     f"{tomlfile.toml_repr(value)}")
        elif not isinstance(self.visit, str) or self.visit not in VISITS:
            raise KeyProblem("visit", f"expected {kinds} or a table of settings to either, "
                             f"got {tomlfile.toml_repr(self.visit)}")
        return self

    @field_validator("lanes", mode="before")
    @classmethod
    def _lanes(cls, v: Any) -> int | str:
        """`lanes`: a whole number 1..16 or "auto" (not a float, a bool or "4")."""
        if v == AUTO and isinstance(v, str):
            return v
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_LANES:
            return v
        raise ValueError(f'expected a whole number from 1 to {MAX_LANES} or "auto", '
                         f"got {tomlfile.toml_repr(v)}")

    def visit_of(self, listed: str) -> str:
        """The visit (first or warm) of the setting listed as `listed` in `protocols`."""
        if isinstance(self.visit, dict):
            return self.visit.get(listed, "first")
        return self.visit

    def visit_of_label(self, label: str) -> str:
        """The visit of the setting stored as `label` (a profile's file name; the table's
        keys are as listed: a name, or a path whose file name is the label)."""
        if not isinstance(self.visit, dict):
            return self.visit
        for listed, visit in self.visit.items():
            if listed == label or Path(listed).name.removesuffix(".toml") == label:
                return visit
        return "first"

    @field_validator("runs", mode="before")
    @classmethod
    def _runs(cls, v: Any) -> int | AdaptiveRuns:
        """A whole number from 1 to MAX_RUNS, or a table {min, max, precision}."""
        if isinstance(v, dict):
            try:
                return AdaptiveRuns.model_validate(v)
            except ValidationError as e:
                key, _, message = tomlfile.describe(AdaptiveRuns, e.errors()[0], v
                                                    ).removeprefix("key ").partition(": ")
                raise KeyProblem(key if key.startswith("runs.") else f"runs.{key}",
                                 message) from None
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_RUNS:
            return v
        raise KeyProblem("runs", f"expected a whole number from 1 to {MAX_RUNS} or a table "
                                 f'{{ min = 10, max = 31, precision = "2%" }}, got '
                                 f"{tomlfile.toml_repr(v)}")

    @field_validator("sites", "networks", "protocols", "capture", "client")
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
    c._found = tuple(find_sites(c))
    check_size(c, c.max_runs, "key runs" + (".max" if c.adaptive else ""))
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
    sites = len(sites_of(c))
    total = sites * len(c.networks) * len(c.protocols) * len(c.client) * runs
    if total > MAX_TRIALS:
        raise InputError(f"{c.source}: {what}: {sites} sites x {len(c.networks)} "
                         f"networks x {len(c.protocols)} protocols x {len(c.client)} clients "
                         f"x {runs} runs = {total} trials; expected at most {MAX_TRIALS}")


def parse_runs(text: str, max_runs: int, what: str = "--rerun-runs") -> frozenset[int]:
    """The run numbers of `text` ("0-3", "0,2,5", "0-3,7"), each below max_runs (runs
    count from 0); InputError naming what was expected otherwise."""
    expected = (f"{what}: expected run numbers from 0 to {max_runs - 1} such as 0-3 or "
                f"0,2,5, got {text!r}")
    runs: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not (low.isdigit() and (high.isdigit() if dash else not high)):
            raise InputError(expected)
        first, last = int(low), int(high) if dash else int(low)
        if not first <= last < max_runs:
            raise InputError(expected)
        runs.update(range(first, last + 1))
    return frozenset(runs)


def runs_text(runs: frozenset[int] | set[int]) -> str:
    """Run numbers as parse_runs reads them: consecutive ones as ranges ("0-3,7")."""
    spans = [[r for _, r in g] for _, g in
             itertools.groupby(enumerate(sorted(runs)), key=lambda x: x[1] - x[0])]
    return ",".join(f"{s[0]}" if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans)


def narrowed(c: Campaign, sites: tuple[str, ...] = (), networks: tuple[str, ...] = (),
             protocols: tuple[str, ...] = ()) -> Campaign:
    """The campaign with only the sites, networks and settings named (by the
    label their trials are stored under; none named: all of that kind), as `testbed
    run --site/--network/--setting` asks; a name the campaign lacks is an InputError."""
    if not (sites or networks or protocols):
        return c
    entries = resolve(c)
    kept = {}
    for key, option, wanted in (("sites", "--site", sites), ("networks", "--network", networks),
                                ("protocols", "--setting", protocols)):
        have = entries[key]
        unknown = [w for w in wanted if w not in have]
        if unknown:
            shown = "settings" if key == "protocols" else key
            raise InputError(f"{option} {unknown[0]}: expected one of the campaign's {shown} "
                             f"({', '.join(have)})")
        kept[key] = {listed for w in (wanted or have) for listed in have[w].listed}
    out = c.model_copy(update={"networks": tuple(n for n in c.networks if n in kept["networks"]),
                               "protocols": tuple(p for p in c.protocols
                                                  if p in kept["protocols"])})
    out._found = tuple(f for f in sites_of(c) if f[1] in kept["sites"])
    return out


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
    found: str = ""
    """What its loader is given: a name as listed, a relative path against the
    campaign file's folder (profiles.load_network / settings.load take it)."""
    content: str = ""
    """A site's content digest (testbed.formats.recording.content_digest: its
    manifest without what differs between two recordings of it by the same code);
    "" for a profile."""


def resolve(c: Campaign) -> dict[str, dict[str, Entry]]:
    """Every label of the campaign by kind (sites, networks, protocols), each once.

    Entries that resolve to the same label and the same content (one file listed
    by name, path and symlink, or a copy) are one label; two entries with one
    label but different content are refused: their trials could not be told apart.
    """
    out: dict[str, dict[str, Entry]] = {}
    identities: tuple[tuple[str, Callable[[Any], tuple[str, Path, str, str]]], ...] = (
        ("sites", site_identity), ("networks", _network), ("protocols", _protocol))
    for key, ident in identities:  # a site is listed as a folder, the others by name
        seen: dict[str, tuple[int, Entry]] = {}
        listing = ([(i, listed, path) for i, listed, path in sites_of(c)] if key == "sites"
                   else [(i, listed, profile_path(c, listed))
                         for i, listed in enumerate(getattr(c, key))])
        for i, listed, what in listing:
            try:
                label, file, digest, content = ident(what)
            except InputError as e:
                raise InputError(f"{c.source}: key {key}.{i}: {e}") from None
            _check_label(c, f"{key}.{i}", listed, label)
            if label in seen:
                j, first = seen[label]
                if first.digest != digest:
                    raise InputError(
                        f"{c.source}: key {key}.{i}: {listed} ({file}) is named {label} like "
                        f"{key}.{j} ({first.file}) but differs from it; give one another name")
                seen[label] = (j, Entry(label, first.file, digest, (*first.listed, listed),
                                        first.found, first.content))
            else:
                seen[label] = (i, Entry(label, file, digest, (listed,), str(what), content))
        _check_case(c, key, seen)
        out[key] = {label: e for label, (_, e) in seen.items()}
    return out


def profile_path(c: Campaign, listed: str) -> str:
    """A network or protocol entry as its loader takes it: a name as it is (looked up
    in profiles/), a relative path (it has a `/` or ends in .toml) against the
    campaign file's folder, like a site's."""
    if ("/" in listed or listed.endswith(".toml")) and not Path(listed).is_absolute() and c.source:
        return str(Path(c.source).parent / listed)
    return listed


def sites_of(c: Campaign) -> tuple[tuple[int, str, Path], ...]:
    """The campaign's sites as found when it was loaded (see find_sites)."""
    if c._found is None:
        c._found = tuple(find_sites(c))
    return c._found


def find_sites(c: Campaign) -> list[tuple[int, str, Path]]:
    """Each entry of `sites` as (index, listed, recording folder): a glob expanded into
    every recording it matches, in sorted order (none is bad input); a path against
    the campaign file's folder; a name through the search path."""
    return find_listed(c.sites, c.source)


def find_listed(sites: Sequence[str], source: str) -> list[tuple[int, str, Path]]:
    """find_sites for a campaign's `sites` and its file's path (`source`, "" for none)."""
    base = Path(source).parent if source else Path.cwd()
    out = []
    for i, listed in enumerate(sites):
        try:
            if search.is_glob(listed):
                found = search.glob(listed, base)
                if not found:
                    raise InputError(f"{listed}: expected a glob matching recordings, matched "
                                     f"none (in {base} and {_places()}){search.corpus_hint(listed)}")
                out += [(i, str(p), p) for p in found]
            else:
                out.append((i, listed, rec.resolve(listed, base)))
        except InputError as e:
            raise InputError(f"{source}: key sites.{i}: {e}") from None
    return out


def _places() -> str:
    return ", ".join(str(d) for d in search.search_dirs())


def _check_label(c: Campaign, key: str, listed: str, label: str) -> None:
    """A label names trial folders (results_contract.schema.trial_id): it must be safe there."""
    problem = schema.label_problem(label)
    if problem:
        raise InputError(f"{c.source}: key {key}: {tomlfile.toml_repr(listed)} is named "
                         f"{tomlfile.toml_repr(label)}; as the name of trials and their "
                         f"folders {problem}")


def _check_case(c: Campaign, key: str, seen: dict[str, tuple[int, Entry]]) -> None:
    """Two labels of one kind that differ only in case would share trial folders on a
    case-insensitive file system (Windows, macOS)."""
    folded: dict[str, tuple[int, str]] = {}
    for label, (i, _) in sorted(seen.items(), key=lambda x: x[1][0]):
        j, other = folded.setdefault(label.casefold(), (i, label))
        if other != label:
            raise InputError(f"{c.source}: key {key}.{i}: {label} differs from {key}.{j} "
                             f"({other}) only in case; expected names that differ in more "
                             "(their trial folders would be one on Windows and macOS)")


def site_identity(folder: Path) -> tuple[str, Path, str, str]:
    """A site's label (its recording folder's name, after symbolic links), folder,
    manifest.json's sha256 and content digest."""
    r = rec.load(folder)
    manifest = r.path / "manifest.json"
    real = r.path.resolve()
    return (real.name, real, hashlib.sha256(manifest.read_bytes()).hexdigest(),
            r.content_sha256)


def _network(listed: str) -> tuple[str, Path, str, str]:
    p = profiles.load_network(listed)
    _check_trace_buffer(p)
    return p.name, Path(p.source).resolve(), p.digest, ""


def _protocol(listed: str) -> tuple[str, Path, str, str]:
    p = profiles.load_protocol(listed)
    return p.name, Path(p.source).resolve(), p.digest, ""


def _check_trace_buffer(p: profiles.NetworkProfile) -> None:
    """A trace-driven link's buffer holds at least one packet at the trace's mean rate
    (a rate-driven one is checked when its profile loads)."""
    if p.buffer_ms is None:
        return
    from fractions import Fraction

    for d in ("uplink", "downlink"):
        try:
            trace = p.trace(d)  # the one read load_network checked
        except (OSError, ValueError) as e:
            raise InputError(f"{p.source}: key {d}_trace: expected a Mahimahi trace file, "
                             f"got {p.trace_path(d)}: {e}") from None
        if trace is None:
            continue
        if Fraction(str(p.buffer_ms)) * trace.per_ms < 1:
            raise InputError(f"{p.source}: key buffer_ms: expected at least one 1500-byte "
                             f"packet of queue (>= {float(1 / trace.per_ms):.4g} ms at "
                             f"{d}_trace's mean rate), got {p.buffer_ms:g}")


def _check_names(c: Campaign, p: Path) -> None:
    resolve(c)
    _check_warm(c)
    profiles.comparisons()  # what the manifest will record of the profiles, checked


def _check_warm(c: Campaign) -> None:
    """A warm visit over TCP needs a setting whose nginx issues session tickets; under
    Firefox a warm visit is a TCP setting's only (docs/firefox.md)."""
    for i, listed in enumerate(c.protocols):
        if c.visit_of(listed) != "warm":
            continue
        p = profiles.load_protocol(profile_path(c, listed))
        key = f"visit.{listed}" if isinstance(c.visit, dict) else "visit"
        if p.stack == "quic" and "firefox" in c.client:
            raise InputError(f"{c.source}: key {key}: a warm visit of protocols.{i} "
                             f"({p.name}) in a campaign with client firefox: expected a TCP "
                             "setting (Firefox resumes only some QUIC connections of a warm "
                             "visit; docs/firefox.md, Warm visits)")
        if p.stack == "tcp" and not p.session_tickets:
            raise InputError(f"{c.source}: key {key}: a warm visit of protocols.{i} "
                             f"({p.name}) expected a setting with session_tickets = true "
                             "(without tickets nothing resumes)")
