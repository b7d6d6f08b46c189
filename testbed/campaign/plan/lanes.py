"""Lanes: several blocks of a campaign measured at once on one machine.

    counts, notes = lanes.resolve(campaign.lanes, networks)   # network -> lanes
    gate = lanes.Gate(counts, machines=1)
    gate.allows("da2gc", running)                             # may a block start now?

On a slow link a trial waits on the link, not on the CPU (bench/cpu_budget), so a
machine can measure several trials at once. Each lane is one process of a local
Dask cluster (testbed.campaign.cluster.cluster, testbed.campaign.cluster.worker) with a replay
topology of its own: its run id (the process's pid) names its namespaces and veth
pair (`tb-<pid>-srv`, `tb<pid>s`), its servers listen inside them, Xvfb picks a
free display (`-displayfd`), its scratch folders are in its own run folder, and
its Browsertime, Chromium and Mahimahi shells are its own. What lanes share is
the machine's cores: bench/lanes measures whether that moves the measurements.

The seeded order keeps its purpose: a block (all settings of one run, site and
network, in their seeded order) is measured whole by one lane, and the lanes take
the blocks in the plan's order, so every setting of a block shares its lane and
its neighbours alike. A block of a network starts only while fewer blocks run
than the smallest lane count of its network and those running (`Gate`): a
network of one lane runs alone.

`lanes = "auto"` takes, per network, the largest lane count that bench/lanes
found equivalent to one lane on this machine (`stored`: kept per machine and
network profile, like the network calibration, in /var/cache/testbed/lanes/;
bench/lanes measures it again); without such a measurement one lane, said so.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from testbed.formats.profiles import NetworkProfile
from testbed.host import safefs

AUTO = "auto"
MAX_LANES = 16
"""The most lanes a campaign may ask for."""
CACHE = Path(os.environ.get("TESTBED_LANES_DIR", "/var/cache/testbed/lanes"))


def machine() -> dict[str, Any]:
    """What a lanes measurement holds for: this host, its kernel and its cores."""
    return {"host": platform.node(), "kernel": platform.release(), "cores": os.cpu_count() or 1}


class Measured(BaseModel):
    """bench/lanes's answer for one network profile on one machine."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    profile: str
    """The network profile's name."""
    profile_digest: str
    """sha256 of the profile file it was measured with."""
    lanes: int
    """The largest lane count found equivalent to one lane (PLT and FVC within the
    margin); 1 when none larger was."""
    margin: float
    """The equivalence margin (0.02: ±2 %)."""
    tested: list[dict]
    """Per lane count tried: trials, trials per hour, and the verdicts of PLT and FVC."""
    host: str
    kernel: str
    cores: int
    measured_at: str


def cache_dir() -> Path:
    """CACHE, checked as any folder root reads and writes (safefs.check_out_dir): what
    it holds decides how many trials run at once, so InputError naming
    TESTBED_LANES_DIR when another account could change it."""
    return safefs.check_out_dir(CACHE, "TESTBED_LANES_DIR")


def cache_path(profile: NetworkProfile) -> Path:
    return cache_dir() / f"{profile.name}-{profile.digest[:16]}.json"


def stored(profile: NetworkProfile) -> Measured | None:
    """The stored measurement for this profile file on this machine, or None."""
    try:
        m = Measured.model_validate_json(cache_path(profile).read_text())
    except (OSError, ValueError):
        return None
    now = machine()
    if m.profile_digest != profile.digest or any(getattr(m, k) != v for k, v in now.items()):
        return None
    return m


def store(profile: NetworkProfile, lanes: int, margin: float, tested: list[dict]) -> Path:
    m = Measured(profile=profile.name, profile_digest=profile.digest, lanes=lanes,
                 margin=margin, tested=tested,
                 measured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                 **machine())
    path = cache_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    return safefs.write_file(path, json.dumps(m.model_dump(), indent=2) + "\n")


def resolve(wanted: int | str, networks: Mapping[str, NetworkProfile]
            ) -> tuple[dict[str, int], dict[str, str]]:
    """Lanes per network label, and where each count comes from (for the manifest and
    the console): the campaign's number, or for "auto" the stored measurement or one
    lane for want of one."""
    counts, why = {}, {}
    for label, profile in networks.items():
        if wanted != AUTO:
            counts[label], why[label] = int(wanted), "campaign"
            continue
        m = stored(profile)
        if m is None:
            counts[label] = 1
            why[label] = ("auto: no lanes measurement of this network on this machine "
                          "(bench/lanes --network " + profile.name + "); one lane")
        else:
            counts[label] = m.lanes
            why[label] = f"auto: bench/lanes of {m.measured_at} (±{m.margin * 100:g} %)"
    return counts, why


def wanted(counts: Mapping[str, int]) -> bool:
    """Whether any network runs more than one lane."""
    return max(counts.values(), default=1) > 1


class Gate:
    """Which blocks may start: at most `machines` x the smallest lane count of the
    networks running (the new block's included) at once."""

    def __init__(self, counts: Mapping[str, int], machines: int = 1):
        self.counts = dict(counts)
        self.machines = max(1, machines)

    def limit(self, networks: Iterable[str]) -> int:
        return self.machines * min((self.counts.get(n, 1) for n in networks), default=1)

    def allows(self, network: str, running: list[str]) -> bool:
        """May a block of `network` start beside the blocks of `running` (their
        networks, one entry per block)?"""
        return len(running) + 1 <= self.limit([network, *running])


def slot(name: object, per_worker: int) -> tuple[str, int]:
    """A local lane process's worker id and lane number from its Dask worker name
    (LocalCluster numbers them 0, 1, ...: worker w's lanes are w*per_worker ...);
    another name (a `testbed worker`): itself, lane 0."""
    if isinstance(name, int) or (isinstance(name, str) and name.isdigit()):
        w, lane = divmod(int(name), max(1, per_worker))
        return str(w), lane
    return str(name), 0
