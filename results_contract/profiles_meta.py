"""What the analysis knows of the profiles, read from the profiles themselves: each
setting's and network's display `label` (its own TOML file), each setting's `stack`,
and from profiles/comparisons.toml the order tables show them in, the baseline, and
the pairs compared (stack twins: TCP and QUIC tuned alike; BBR twins: BBR and CUBIC
on one stack). No table of names in code: a profile added or renamed in profiles/
is shown and compared as its files say.

    meta = from_profiles()             # the checkout's profiles/ (read once); an
                                       # install without the checkout: SNAPSHOT
    meta = from_manifest(manifest)     # what the campaign recorded (MANIFEST_KEY),
                                       # else the checkout's (older stores)
    with using(meta):                  # label(), settings_in() ... read current()
        ...

A problem is a ProfilesError of one line naming the file, the key and what was
expected, e.g.

    profiles/comparisons.toml: key bbr_twins.1: expected [BBR setting, CUBIC setting]
    of settings in profiles/protocols/ (quic, quic-0rtt, ...), got ['quic-bbrx', 'quic']

Reads TOML with the standard library only (the analysis-only install has no
pydantic); the testbed's own models (testbed.formats.profiles) check every other key.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""The checkout."""
PROFILES_DIR = ROOT / "profiles"
"""Where the profiles are read from (protocols/, networks/, comparisons.toml)."""
COMPARISONS = "comparisons.toml"
SNAPSHOT = Path(__file__).with_name("profiles_meta.json")
"""The checkout's profiles as the package ships them (`python -m
results_contract.profiles_meta` writes it; tests/unit/test_profiles_meta.py keeps it
equal to profiles/): what an install without the checkout (`pip install .[analysis]`
into a venv) reads for a store whose manifest recorded none."""
MANIFEST_KEY = "profiles_meta"
"""The manifest's key holding `ProfilesMeta.to_json()` (testbed.campaign.store.manifest)."""
STACKS = ("tcp", "quic")
MAX_LABEL = 40
"""The longest label (a table's column header)."""
LABEL = f"text of 1 to {MAX_LABEL} printable characters, no space at either end"
"""What a label must be (is_label), as a message says it."""
MAX_BYTES = 1024 * 1024
"""The largest profile file read."""


class ProfilesError(ValueError):
    """Profiles (or a manifest's record of them) the analysis cannot use; one line
    naming the file, the key and what was expected."""


@dataclass(frozen=True)
class ProfilesMeta:
    """Labels, order, baseline and pairs: profiles/ as the analysis uses them."""

    setting_labels: Mapping[str, str]
    """Every setting's name -> its display label (TCP+BBR)."""
    network_labels: Mapping[str, str]
    """Every network's name -> its display label (DA2GC)."""
    stacks: Mapping[str, str]
    """Every setting's name -> its stack (tcp or quic)."""
    setting_order: tuple[str, ...]
    """Settings in the order tables show them; others after, by name."""
    network_order: tuple[str, ...]
    """Networks in the order tables show them; others after, by name."""
    baseline: str
    """The setting others are compared with by default."""
    stack_twins: tuple[tuple[str, str], ...]
    """(TCP setting, QUIC setting) tuned alike."""
    bbr_twins: tuple[tuple[str, str], ...]
    """(BBR setting, CUBIC setting) on one stack, tuned alike."""

    def label(self, name: str) -> str | None:
        """A setting's or network's label (a setting's first); None if neither."""
        return self.setting_labels.get(name) or self.network_labels.get(name)

    def bbr_pairs(self) -> list[tuple[str, str, str]]:
        """(stack, BBR setting, CUBIC setting) of each BBR twin."""
        return [(self.stacks[b], b, c) for b, c in self.bbr_twins]

    def with_profiles(self, setting_labels: Mapping[str, str],
                      network_labels: Mapping[str, str],
                      stacks: Mapping[str, str]) -> ProfilesMeta:
        """These labels and stacks added (over this one's): a campaign's own profiles,
        which may lie outside profiles/."""
        return replace(self, setting_labels={**self.setting_labels, **setting_labels},
                       network_labels={**self.network_labels, **network_labels},
                       stacks={**self.stacks, **stacks})

    def with_comparisons(self, other: ProfilesMeta) -> ProfilesMeta:
        """This one's labels and stacks with `other`'s order, baseline and pairs."""
        return replace(self, setting_order=other.setting_order,
                       network_order=other.network_order, baseline=other.baseline,
                       stack_twins=other.stack_twins, bbr_twins=other.bbr_twins)

    def to_json(self) -> dict[str, Any]:
        """What the manifest records (MANIFEST_KEY); from_json reads it back."""
        return {"setting_labels": dict(self.setting_labels),
                "network_labels": dict(self.network_labels), "stacks": dict(self.stacks),
                "setting_order": list(self.setting_order),
                "network_order": list(self.network_order), "baseline": self.baseline,
                "stack_twins": [list(p) for p in self.stack_twins],
                "bbr_twins": [list(p) for p in self.bbr_twins]}

    @classmethod
    def from_json(cls, data: Any, where: str) -> ProfilesMeta:
        """`data` (to_json's shape) checked; `where` prefixes every key in a message
        ("results/x/manifest.json: key profiles_meta")."""
        if not isinstance(data, dict):
            raise ProfilesError(f"{where}: expected an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ProfilesError(f"{where}.{unknown[0]}: unknown key (allowed: "
                                f"{', '.join(cls.__dataclass_fields__)})")
        tables = {}
        for key, ok, expected in (("setting_labels", is_label, f"names -> labels ({LABEL})"),
                                  ("network_labels", is_label, f"names -> labels ({LABEL})"),
                                  ("stacks", STACKS.__contains__, "names -> tcp or quic")):
            value = data.get(key)
            if not (isinstance(value, dict) and all(isinstance(k, str) and ok(v)
                                                    for k, v in value.items())):
                raise ProfilesError(f"{where}.{key}: expected an object of {expected}, "
                                    f"got {_shown(value)}")
            tables[key] = dict(value)
        if set(tables["stacks"]) != set(tables["setting_labels"]):
            raise ProfilesError(f"{where}.stacks: expected a stack for each setting of "
                                f"setting_labels, got {_shown(sorted(tables['stacks']))}")
        check = _Checker(where + ".", tables["setting_labels"], tables["network_labels"],
                         tables["stacks"], "the settings of setting_labels",
                         "the networks of network_labels")
        return check.comparisons(data, tables)


def is_label(value: Any) -> bool:
    """Text of 1 to MAX_LABEL printable characters, no space at either end."""
    return (isinstance(value, str) and 0 < len(value) <= MAX_LABEL
            and value.isprintable() and value == value.strip())


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class _Checker:
    """Checks the keys of comparisons.toml (or of a recorded ProfilesMeta)."""

    where: str
    """Prefix of a key in a message ("profiles/comparisons.toml: key ")."""
    settings: Mapping[str, str]
    networks: Mapping[str, str]
    stacks: Mapping[str, str]
    settings_are: str
    """How a message names the known settings ("settings in profiles/protocols/")."""
    networks_are: str

    def bad(self, key: str, expected: str, got: Any) -> ProfilesError:
        return ProfilesError(f"{self.where}{key}: expected {expected}, got {_shown(got)}")

    def known(self, kind: str) -> str:
        names = self.settings if kind == "setting" else self.networks
        listed = ", ".join(sorted(names)) or "none"
        return f"{self.settings_are if kind == 'setting' else self.networks_are} ({listed})"

    def names(self, data: Mapping[str, Any], key: str, kind: str) -> tuple[str, ...]:
        value = data.get(key, [])
        known = self.settings if kind == "setting" else self.networks
        if not (isinstance(value, list) and all(isinstance(v, str) and v in known
                                                for v in value)
                and len(set(value)) == len(value)):
            raise self.bad(key, f"a list of distinct {kind}s of {self.known(kind)}", value)
        return tuple(value)

    def pairs(self, data: Mapping[str, Any], key: str, shape: str,
              stacks: tuple[str, str] | None) -> tuple[tuple[str, str], ...]:
        """A list of [a, b] of two known, distinct settings; stacks: theirs (None:
        the same one)."""
        value = data.get(key, [])
        if not isinstance(value, list):
            raise self.bad(key, f"a list of {shape}", value)
        out = []
        for i, p in enumerate(value):
            if not (isinstance(p, list) and len(p) == 2 and all(
                    isinstance(s, str) and s in self.settings for s in p) and p[0] != p[1]):
                raise self.bad(f"{key}.{i}", f"{shape} of {self.known('setting')}", p)
            have = (self.stacks[p[0]], self.stacks[p[1]])
            if (have != stacks) if stacks else (have[0] != have[1]):
                want = f"stacks {' and '.join(stacks)}" if stacks else "one stack"
                raise ProfilesError(f"{self.where}{key}.{i}: expected {shape} of {want}, "
                                    f"got {p!r}, of stacks {' and '.join(have)}")
            out.append((p[0], p[1]))
        if len(set(out)) != len(out):
            raise self.bad(key, f"each pair once ({shape})", value)
        return tuple(out)

    def comparisons(self, data: Mapping[str, Any], tables: Mapping[str, Any]) -> ProfilesMeta:
        baseline = data.get("baseline")
        if not (isinstance(baseline, str) and baseline in self.settings):
            raise self.bad("baseline", f"a setting of {self.known('setting')}", baseline)
        return ProfilesMeta(
            **tables,
            setting_order=self.names(data, "setting_order", "setting"),
            network_order=self.names(data, "network_order", "network"),
            baseline=baseline,
            stack_twins=self.pairs(data, "stack_twins", "[TCP setting, QUIC setting]",
                                   ("tcp", "quic")),
            bbr_twins=self.pairs(data, "bbr_twins", "[BBR setting, CUBIC setting]", None))


COMPARISON_KEYS = ("setting_order", "network_order", "baseline", "stack_twins", "bbr_twins")
"""The keys of comparisons.toml."""


def _toml(path: Path, shown: str) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ProfilesError(f"{shown}: cannot read it: {e.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise ProfilesError(f"{shown}: more than {MAX_BYTES} bytes; expected a profile")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise ProfilesError(f"{shown}: not valid TOML ({str(e)[:80]})") from None


def _show_path(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _profiles(folder: Path, with_stack: bool) -> tuple[dict[str, str], dict[str, str]]:
    """name -> label (its name when it gives none) and name -> stack of every profile
    in `folder`."""
    labels, stacks = {}, {}
    for path in sorted(folder.glob("*.toml")):
        shown = _show_path(path)
        data = _toml(path, shown)
        label = data.get("label", path.stem)
        if not is_label(label):
            raise ProfilesError(f"{shown}: key label: expected {LABEL}, got {_shown(label)}")
        labels[path.stem] = label
        if with_stack:
            stack = data.get("stack")
            if stack not in STACKS:
                raise ProfilesError(f"{shown}: key stack: expected tcp or quic, "
                                    f"got {_shown(stack)}")
            stacks[path.stem] = stack
    return labels, stacks


def from_profiles(folder: Path | None = None) -> ProfilesMeta:
    """The profiles of `folder` (default PROFILES_DIR), checked; read once per folder
    (a process that changes them reads another folder, as the tests do)."""
    if folder is None and not PROFILES_DIR.is_dir():
        return _snapshot()
    return _read(Path(folder or PROFILES_DIR).resolve())


@cache
def _snapshot() -> ProfilesMeta:
    try:
        data = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ProfilesError(f"{SNAPSHOT}: cannot read it ({e}); no profiles/ beside the "
                            "package either") from None
    return ProfilesMeta.from_json(data, str(SNAPSHOT))


def snapshot_text(meta: ProfilesMeta) -> str:
    """SNAPSHOT's content for `meta`."""
    return json.dumps(meta.to_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@cache
def _read(folder: Path) -> ProfilesMeta:
    settings, stacks = _profiles(folder / "protocols", with_stack=True)
    networks, _ = _profiles(folder / "networks", with_stack=False)
    path = folder / COMPARISONS
    shown = _show_path(path)
    data = _toml(path, shown)
    unknown = sorted(set(data) - set(COMPARISON_KEYS))
    if unknown:
        raise ProfilesError(f"{shown}: key {unknown[0]}: unknown key (allowed: "
                            f"{', '.join(COMPARISON_KEYS)})")
    check = _Checker(f"{shown}: key ", settings, networks, stacks,
                     f"settings in {_show_path(folder / 'protocols')}/",
                     f"networks in {_show_path(folder / 'networks')}/")
    return check.comparisons(data, {"setting_labels": settings, "network_labels": networks,
                                    "stacks": stacks})


def from_manifest(manifest: Any, where: str = "manifest.json") -> ProfilesMeta:
    """What a campaign's manifest recorded (MANIFEST_KEY of its latest session that has
    one; `manifest` a results_contract.manifest.Manifest or its JSON document), over the
    checkout's labels (for a name it lacks); the checkout's alone when it recorded none
    (stores made before campaigns recorded it)."""
    checkout = from_profiles()
    if isinstance(manifest, Mapping):
        recorded = manifest.get(MANIFEST_KEY)
    else:
        recorded = getattr(manifest, MANIFEST_KEY, None)
    if recorded is None:
        return checkout
    meta = ProfilesMeta.from_json(recorded, f"{where}: key {MANIFEST_KEY}")
    return checkout.with_profiles(meta.setting_labels, meta.network_labels,
                                  meta.stacks).with_comparisons(meta)


_ACTIVE: ContextVar[ProfilesMeta | None] = ContextVar("profiles_meta", default=None)


def current() -> ProfilesMeta:
    """The metadata in use: the one `using` set, else the checkout's."""
    return _ACTIVE.get() or from_profiles()


@contextmanager
def using(meta: ProfilesMeta) -> Iterator[ProfilesMeta]:
    """`meta` is current() inside the block (the analysis of one store)."""
    token = _ACTIVE.set(meta)
    try:
        yield meta
    finally:
        _ACTIVE.reset(token)



if __name__ == "__main__":  # python -m results_contract.profiles_meta: SNAPSHOT anew
    SNAPSHOT.write_text(snapshot_text(from_profiles(PROFILES_DIR)), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
