"""The campaign manifest (a results folder's manifest.json): what ran, as a typed model.

A campaign's results folder is measured in sessions: every `testbed run` of it (a
resume is a new session; `--resume-from` adds one saying where its rows came from)
appends a `Session` with what that session ran: its campaign, versions, sysctls,
recordings, networks, protocol settings, calibration, lanes, and what it set in the
server namespace. A session is written once and never edited by a later one.

The top level says what the whole store holds. It is derived from the sessions
(`Manifest.of`), never edited, by this rule:

- networks, protocols, recordings, calibration, lanes, server_sysctls: the union over
  the sessions by label; a label that several sessions list takes the entry of the
  latest session that lists it;
- campaign, host, versions, sysctls, profiles_meta: those of the latest session that
  has them.

Beside the sessions the top level keeps what belongs to the store, not a session:
`workers` (each `testbed worker` that measured, as it first reported), the calibration
differences between them, and `synthetic` (made by analysis.synthetic).

Versions (`schema_version`): 2 is this model. A file without it is version 1, whose
top level was a copy of the latest session (so a campaign run one network per session
showed only the last network); `parse` upgrades it in memory (the top level is derived
again from the sessions, and what the runner kept only at the top, its lanes and
server sysctls, goes to the latest session that ran). `testbed upgrade-manifest`
rewrites a file in the new form. manifest.schema.json beside this module is the JSON
schema of the model (tests/unit/test_manifest_model.py checks it is current).

A manifest may come from someone else's folder: every key read is typed here and
checked on load; a wrong one is one line naming the file, the key and what was
expected (`ManifestError`, a results_contract.results_io.ResultsError).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from results_contract.results_io import ResultsError

SCHEMA_VERSION: Literal[2] = 2
"""The version this model reads and writes."""
SCHEMA_FILE = Path(__file__).with_name("manifest.schema.json")


class ManifestError(ResultsError):
    """A manifest that is not one: the file, the key and what was expected."""


def _iso(value: str) -> str:
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("an ISO 8601 date and time") from None
    return value


Timestamp = Annotated[str, AfterValidator(_iso)]
"""An ISO 8601 date and time, kept as written."""
Number = int | float
"""A number, kept as written (262 stays 262, 24.0 stays 24.0)."""


class Record(BaseModel):
    """A part of the manifest: keys not named here are kept as they are (a newer
    testbed's, or the whole profile as it was loaded), never read."""

    model_config = ConfigDict(extra="allow", strict=True, validate_by_name=True, validate_by_alias=True)


class Listed(Record):
    """The file behind a label and how the campaign listed it."""

    source: str | None = None
    """The profile file as the campaign named it."""
    file: str | None = None
    """The file found for the label."""
    listed_as: list[str] = []
    """The campaign's entries that stand for the label."""
    sha256: str | None = None
    """sha256 of the file's bytes."""


class NetworkProfile(Record):
    """A network profile as run (testbed.formats.profiles.NetworkProfile; only the
    figures the analysis reads are typed)."""

    description: str | None = None
    min_rtt_ms: Number | None = None
    uplink_mbit: Number | None = None
    downlink_mbit: Number | None = None
    uplink_trace: str | None = None
    downlink_trace: str | None = None
    buffer_ms: Number | None = None
    """Drop-tail queue of the link, in ms at its rate."""
    uplink_loss_percent: Number | None = None
    downlink_loss_percent: Number | None = None


class Network(Listed):
    profile: NetworkProfile = NetworkProfile()
    video_fps: int | None = None
    """Frame rate the trials' videos were recorded at."""


class SettingProfile(Record):
    """A protocol setting as run (testbed.protocols; the figures the report reads)."""

    stack: str | None = None
    congestion_control: str | None = None
    initial_window_packets: int | None = None
    pacing: bool | None = None
    session_tickets: bool | None = None
    early_data: bool | None = None


class Protocol(Listed):
    stack: str | None = None
    """tcp or quic."""
    profile: SettingProfile = SettingProfile()
    h3server_args: list[str] = []
    nginx_env: dict[str, str] = {}
    chromium_flags: list[str] = []


class ScriptPin(Record):
    """The clock's start (ms since the epoch: the recording's time) and the seed of
    Math.random the replayed pages ran with."""

    time_ms: int
    seed: int


class Recording(Listed):
    path: str | None = None
    url: str | None = None
    manifest_sha256: str | None = None
    """sha256 of the recording's manifest.json."""
    content_sha256: str | None = None
    """Digest of its content (testbed.formats.recording.content_digest): the same for
    another build of the site by the same code."""
    origins: int | None = None
    addresses: int | None = None
    """Server addresses it was served on, in the campaign's layout (older manifests:
    None; their replays served the recorded ones)."""
    requests: int | None = None
    script_pin: ScriptPin | None = None
    """What deterministic scripts pinned in its pages (testbed.replay.deterministic):
    None where the campaign had them off, and in manifests written before they existed
    (their pages ran as recorded)."""


class Calibration(Record):
    """A network's calibration (testbed.emulate.calibrate), as measured."""

    min_rtt_ms: Number | None = None
    median_rtt_ms: Number | None = None


class AdaptiveRuns(Record):
    min: int
    max: int
    precision: str


class CampaignSettings(Record):
    """The campaign file as loaded (testbed.campaign.plan.config.Campaign)."""

    sites: list[str] = []
    networks: list[str] = []
    protocols: list[str] = []
    runs: int | AdaptiveRuns | None = None
    """A number of runs, or adaptive runs {min, max, precision}."""
    deterministic_scripts: bool = False
    """Replayed pages ran the deterministic script (testbed.replay.deterministic); a
    manifest written before the key existed is false, what its replays served."""
    layout: Literal["recorded", "split"] = "recorded"
    """Which hosts shared an address and a certificate (testbed.replay.layout); a
    manifest written before the key existed is "recorded", what its replays served."""


class Campaign(Record):
    name: str | None = None
    source: str | None = None
    """The campaign file."""
    sha256: str | None = None
    runs: int | None = None
    """The runs this session planned."""
    settings: CampaignSettings = CampaignSettings()


class Lanes(Record):
    lanes: int
    from_: str = Field(alias="from")
    """Where the count comes from (testbed.campaign.plan.lanes)."""


class Rerun(Record):
    runs: list[int]
    trials: int
    """Stored trials the session forgot to measure them again."""


class Worker(Record):
    """A `testbed worker` as it first reported (testbed.campaign.cluster.worker)."""

    host: str | None = None
    worker: str | None = None
    lane: int | None = None
    pid: int | None = None
    versions: dict[str, str] = {}
    calibration: dict[str, Calibration] = {}


class Session(Record):
    """One `testbed run` of the results folder (or one seeding of it)."""

    started_at: Timestamp | None = None
    host: str | None = None
    campaign: Campaign | None = None
    versions: dict[str, str] = {}
    """Part -> version line (testbed.campaign.store.manifest.versions)."""
    sysctls: dict[str, str] = {}
    """The host's TCP, UDP and core sysctls."""
    recordings: dict[str, Recording] = {}
    networks: dict[str, Network] = {}
    protocols: dict[str, Protocol] = {}
    calibration: dict[str, Calibration] = {}
    """Network -> its calibration in this session."""
    server_sysctls: dict[str, dict[str, Any]] = {}
    """Protocol setting -> what it set in the server namespace."""
    lanes: dict[str, Lanes] = {}
    mixed_versions: list[str] = []
    """Stored trials other versions measured, kept beside this session's on purpose."""
    rerun: Rerun | None = None
    seeded_from: str | None = None
    """A seeding (`--resume-from`): the folder whose rows began the store."""
    trials: int | None = None
    """A seeding: the trials it stored."""
    profiles_meta: dict[str, Any] | None = None
    """The profiles' labels, order and compared pairs the session ran with
    (results_contract.profiles_meta.ProfilesMeta.to_json); checked where it is read."""


UNION = ("networks", "protocols", "recordings", "calibration", "lanes", "server_sysctls")
"""Top-level keys that are the union of the sessions' by label (the latest wins)."""
LATEST = ("campaign", "host", "versions", "sysctls", "profiles_meta")
"""Top-level keys that are the latest session's that has one."""


class Manifest(Record):
    """A results folder's manifest.json (see the module for the merge rule)."""

    schema_version: Literal[2]
    campaign: Campaign | None = None
    host: str | None = None
    versions: dict[str, str] = {}
    sysctls: dict[str, str] = {}
    profiles_meta: dict[str, Any] | None = None
    recordings: dict[str, Recording] = {}
    networks: dict[str, Network] = {}
    protocols: dict[str, Protocol] = {}
    calibration: dict[str, Calibration] = {}
    server_sysctls: dict[str, dict[str, Any]] = {}
    lanes: dict[str, Lanes] = {}
    workers: dict[str, Worker] = {}
    calibration_differs: list[str] = []
    """Networks whose calibrated minimum RTT differs between workers, one line each."""
    synthetic: bool = False
    """Made by analysis.synthetic: reports say so."""
    sessions: list[Session] = []

    @classmethod
    def of(cls, sessions: Sequence[Session], **store: Any) -> Manifest:
        """The manifest of these sessions (the top level derived from them) with the
        store-level keys `store` (workers, calibration_differs, synthetic, ...)."""
        top: dict[str, Any] = {key: {} for key in UNION}
        for s in sessions:
            for key in UNION:
                top[key].update(getattr(s, key))
            for key in LATEST:
                value = getattr(s, key)
                if value:
                    top[key] = value
        return cls(schema_version=SCHEMA_VERSION, **store, **top, sessions=list(sessions))

    def store_level(self) -> dict[str, Any]:
        """What the top level keeps beside the sessions' union (see the module)."""
        fields = {k: getattr(self, k) for k in ("workers", "calibration_differs", "synthetic")}
        return {**fields, **(self.model_extra or {})}

    def with_sessions(self, sessions: Sequence[Session]) -> Manifest:
        return Manifest.of(sessions, **self.store_level())

    def with_session(self, session: Session) -> Manifest:
        """This manifest with one more session."""
        return self.with_sessions([*self.sessions, session])

    def with_latest(self, **changes: Any) -> Manifest:
        """The latest session changed (e.g. server_sysctls at the end of a run)."""
        *before, latest = self.sessions
        return self.with_sessions([*before, latest.model_copy(update=changes)])

    def with_worker(self, worker: Worker, differs: Sequence[str]) -> Manifest:
        store = {**self.store_level(), "workers": {**self.workers, str(worker.worker): worker},
                 "calibration_differs": list(differs)}
        return Manifest.of(self.sessions, **store) if self.sessions else self.model_copy(
            update={"workers": store["workers"], "calibration_differs": list(differs)})

    def document(self) -> dict[str, Any]:
        """The JSON document (absent keys hold their defaults)."""
        doc: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        return doc

    def text(self) -> str:
        """The file's text."""
        return json.dumps(self.document(), indent=1) + "\n"


def empty() -> Manifest:
    return Manifest(schema_version=SCHEMA_VERSION)


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """A version 1 document (no schema_version) in version 2's form, not yet checked:
    the top level of one with sessions derived again from them (its lanes and server
    sysctls, kept only at the top, given to the latest session that ran); one without
    sessions (an early or a synthetic manifest) kept as it is. A bare campaign name
    becomes {name}."""
    doc = dict(data)
    if isinstance(doc.get("campaign"), str):
        doc["campaign"] = {"name": doc["campaign"]}
    sessions = doc.get("sessions")
    if isinstance(sessions, list) and sessions:
        ran = [i for i, s in enumerate(sessions) if isinstance(s, dict) and "networks" in s]
        sessions = [dict(s) if isinstance(s, dict) else s for s in sessions]
        for key in ("lanes", "server_sysctls"):
            if ran and isinstance(doc.get(key), dict) and not sessions[ran[-1]].get(key):
                sessions[ran[-1]][key] = doc[key]
        for s in sessions:
            if isinstance(s, dict) and isinstance(s.get("campaign"), str):
                s["campaign"] = {"name": s["campaign"]}
        doc = {k: v for k, v in doc.items()
               if k not in (*UNION, *LATEST, "started_at")} | {"sessions": sessions}
    return {"schema_version": SCHEMA_VERSION, **doc}


def parse(data: Any, path: Path | str = "manifest.json") -> Manifest:
    """The manifest in `data` (a parsed manifest.json of any version, upgraded), its
    top level derived from its sessions; ManifestError naming `path`, the key and what
    was expected if it is not one."""
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: (top level): expected a JSON object (a campaign "
                            f"manifest), got {type(data).__name__}")
    version = data.get("schema_version", 1)
    if version not in (1, SCHEMA_VERSION) or isinstance(version, bool):
        raise ManifestError(f"{path}: key schema_version: expected 1 or {SCHEMA_VERSION} "
                            f"(a newer testbed may have written it), got {version!r}")
    doc = upgrade(data) if version == 1 else data
    try:
        found = Manifest.model_validate(doc)
    except ValidationError as e:
        raise ManifestError(f"{path}: {describe(_chosen(e.errors()), doc)}") from None
    return found.with_sessions(found.sessions) if found.sessions else found


def _chosen(errors: Sequence[Any]) -> Any:
    """The error to show: in a union, the member's that went deepest (a table's missing
    key rather than "not a number"); a number's rather than a whole number's."""
    return max(errors, key=lambda err: (len(err.get("loc", ())), err.get("type") == "float_type"))


KINDS = {"string_type": "text", "int_type": "a whole number", "float_type": "a number",
         "bool_type": "true or false", "dict_type": "an object", "model_type": "an object",
         "list_type": "a list", "int_from_float": "a whole number"}
"""pydantic error type -> what was expected, in the project's words."""


def describe(err: Mapping[str, Any], doc: Any) -> str:
    """One pydantic error as 'key K: expected ..., got T'; K as the document spells it
    (a union's member names that pydantic adds to the location are left out)."""
    keys: list[str] = []
    here = doc
    loc = tuple(err.get("loc", ()))
    for part in loc:
        if isinstance(here, dict) and part in here or isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            continue  # a union's member name, or the missing key (below)
        keys.append(str(part))
    kind = str(err.get("type", ""))
    if kind == "missing" and loc:
        keys.append(str(loc[-1]))
    key = ".".join(keys) or "(top level)"
    got = err.get("input")
    if kind == "missing":
        return f"key {key}: missing; expected it (a required key)"
    wanted = KINDS.get(kind) or str(err.get("msg", "")).removeprefix("Value error, ")
    wanted = wanted.removeprefix("Input should be ").removeprefix("input should be ")
    return f"key {key}: expected {wanted}, got {type(got).__name__}"


def schema() -> dict[str, Any]:
    """The JSON schema of version 2 (what manifest.schema.json holds)."""
    found: dict[str, Any] = Manifest.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "manifest.schema.json", **found}


def schema_text() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True) + "\n"

