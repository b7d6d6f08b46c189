"""The worker's side of a campaign on a Dask cluster (testbed.campaign.cluster.cluster is
the coordinator's).

    job = Job.of(campaign, entries)             # coordinator: what every block needs
    JoinCheck(job.digests)                      # a Dask worker plugin: refuses a worker
                                                # whose files differ from the coordinator's
    packed = execute(job, block, attempts)      # in a Dask task: one block, packed

A worker is one process, one Dask thread, resource `testbed=1`: it measures one
block at a time, each on its own run (testbed.host.runstate: its pid names its
namespaces, so two workers on one machine never clash, and the sweep leaves a
live worker's processes alone). It loads the campaign's recordings and profiles
from its own checkout, checks that they are the coordinator's (`digests`: the
files of testbed/ and profiles/, the HTTP/3 server's version and each recording's
content digest), keeps one replay topology while its blocks stay on one site, writes
a block's files into its own scratch folder and sends them back as bytes
(testbed.campaign.run.block.pack). The coordinator alone writes the results.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from results_contract import trial_folder
from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.plan import settings as settings_mod
from testbed.campaign.plan.config import Campaign
from testbed.campaign.run import block as block_mod
from testbed.campaign.run.servers import Servers
from testbed.campaign.store import commit
from testbed.campaign.store import manifest as manifest_mod
from testbed.errors import TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import load_network
from testbed.host import proc, runstate, safefs
from testbed.host.paths import QUIC_SERVERS, ROOT
from testbed.host.topology import ReplayTopology
from testbed.replay import layout

log = logging.getLogger(__name__)

HASHED = ("testbed", "profiles")
"""Folders of the checkout whose files must be the coordinator's."""
SKIPPED = ("__pycache__",)


class Refused(TestbedError):
    """This worker may not measure the coordinator's campaign."""


# --- the checkout's fingerprint ------------------------------------------------------
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shown(path: Path) -> str:
    """A path as both sides name it: relative to the checkout when inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def quic_server_version(name: str) -> str:
    """`NAME --version` of an HTTP/3 server (paths.QUIC_SERVERS), or "unavailable"."""
    return proc.version([QUIC_SERVERS[name], "--version"]) or "unavailable"


def digests(recordings: dict[str, Path], root: Path = ROOT) -> dict[str, str]:
    """sha256 of every file under testbed/ and profiles/ (by path in the checkout),
    the HTTP/3 servers' versions, and each recording's content digest (by label: what
    its replay serves, `formats.recording.content_digest`, so a corpus built anew on a
    worker joins when it serves the same, though its manifest.json's times differ)."""
    out = {}
    for top in HASHED:
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED)
            for name in sorted(filenames):
                p = Path(dirpath) / name
                if p.is_file() and not p.is_symlink():
                    out[str(p.relative_to(root))] = _sha256(p)
    for name in QUIC_SERVERS:
        out[f"{name} --version"] = quic_server_version(name)
    for label, folder in sorted(recordings.items()):
        out[f"recording {label}: content"] = rec.load(Path(folder)).content_sha256
    return out


def first_difference(coordinator: dict[str, str], mine: dict[str, str]) -> str | None:
    """Why this worker's files are not the coordinator's (the first file that differs,
    in sorted order), or None when they are the same."""
    for key in sorted(set(coordinator) | set(mine)):
        if key not in mine:
            return f"{key}: missing here, present on the coordinator"
        if key not in coordinator:
            return f"{key}: present here, missing on the coordinator"
        if coordinator[key] != mine[key]:
            return f"{key}: differs from the coordinator's"
    return None


def check_same(coordinator: dict[str, str], recordings: dict[str, Path]) -> None:
    """Refused naming the first differing file, unless this checkout is the
    coordinator's."""
    why = first_difference(coordinator, digests(recordings))
    if why is not None:
        raise Refused(f"worker on {platform.node()} refuses to join: {why}")


# --- what the coordinator sends ---------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """What every block of a campaign needs: the campaign, where each label's file is
    (in the checkout, or an absolute path) and the coordinator's digests."""

    campaign: Campaign
    sites: dict[str, str]
    networks: dict[str, str]
    protocols: dict[str, str]
    digests: dict[str, str]
    lanes_per_worker: int = 1
    """Processes of a local cluster per worker (`--workers W --lanes L`: W x L
    processes, worker w's lanes named w*L ... w*L+L-1; testbed.campaign.plan.lanes.slot)."""

    @classmethod
    def of(cls, campaign: Campaign, entries: dict, lanes_per_worker: int = 1) -> Job:
        def where(kind: str) -> dict[str, str]:
            return {label: _shown(e.file) for label, e in entries[kind].items()}

        sites = where("sites")
        return cls(campaign, sites, where("networks"), where("protocols"),
                   digests({label: _path(p) for label, p in sites.items()}), lanes_per_worker)

    @property
    def key(self) -> str:
        """One job, one key (its worker state is kept while the key stays)."""
        return hashlib.sha256(repr((sorted(self.digests.items()), self.campaign.digest,
                                    sorted(self.networks.items()),
                                    sorted(self.protocols.items()))).encode()).hexdigest()


def _path(shown: str) -> Path:
    p = Path(shown)
    return p if p.is_absolute() else ROOT / p


# --- this process's state --------------------------------------------------------------
class State:
    """The campaign as loaded in this worker process, and the open site."""

    def __init__(self, job: Job, worker: str, lane: int = 0):
        from testbed.emulate import calibrate

        check_same(job.digests, {label: _path(p) for label, p in job.sites.items()})
        self.key = job.key
        self.worker = worker
        self.lane = lane
        recordings = {label: layout.apply(rec.load(_path(p)), job.campaign.layout)
                      for label, p in job.sites.items()}
        networks = {label: load_network(_path(p)) for label, p in job.networks.items()}
        settings = {label: settings_mod.load(str(_path(p))) for label, p in job.protocols.items()}
        self.run = runstate.current()
        self.work = self.run.path("campaign")
        self.work.mkdir(parents=True, exist_ok=True)
        os.chmod(self.work, 0o755)
        self.out = self.run.path("results")
        for sub in (trial_folder.TRIALS_DIR, "logs"):
            (self.out / sub).mkdir(parents=True, exist_ok=True)
        calibrations, chains = {}, {}
        for name, profile in networks.items():
            cal = calibrate.for_profile(profile)  # the cached one, or measured once here
            calibrations[name] = cal.model_dump(mode="json")
            chains[name] = calibrate.chain_for(profile, self.work, cal)
        self.setup = block_mod.Setup(job.campaign, recordings, networks, settings, chains)
        self.info = {"host": platform.node(), "worker": worker, "lane": lane,
                     "pid": os.getpid(),
                     "versions": manifest_mod.versions(), "calibration": calibrations}
        self.site: str | None = None
        self.servers: Servers | None = None
        self.exits = ExitStack()

    def servers_for(self, site: str) -> Servers:
        if self.site != site or self.servers is None or self.servers.broken:
            self.close_site()
            topo = self.exits.enter_context(ReplayTopology(self.setup.recordings[site].ips))
            self.servers = Servers(self.setup.recordings[site], topo, deterministic_scripts=
                                   self.setup.campaign.deterministic_scripts)
            self.exits.callback(self.servers.close)
            self.site = site
        return self.servers

    def close_site(self) -> None:
        self.exits.close()
        self.exits = ExitStack()
        self.servers, self.site = None, None

    def close(self) -> None:
        self.close_site()
        safefs.rmtree(self.out)


_state: State | None = None


def worker_id(lanes_per_worker: int = 1) -> tuple[str, int]:
    """`<host>/<worker id>` of the worker this task runs on, and its lane (one lane
    per worker: the Dask worker's name, lane 0)."""
    from distributed import get_worker

    from testbed.campaign.plan.lanes import slot

    name, lane = slot(get_worker().name, lanes_per_worker)
    return f"{platform.node()}/{name}", lane


def state(job: Job) -> State:
    global _state
    if _state is None or _state.key != job.key:
        close()
        _state = State(job, *worker_id(job.lanes_per_worker))
    return _state


def close() -> None:
    """Close this process's site and scratch results (the worker is leaving)."""
    global _state
    if _state is not None:
        try:
            _state.close()
        finally:
            _state = None


def execute(job: Job, block: plan_mod.Block, attempts: dict[str, int]
            ) -> tuple[block_mod.PackedBlock, dict]:
    """Measure one block on this worker; its rows and files, and this worker's info
    (host, versions, calibration) for the manifest."""
    s = state(job)
    servers = s.servers_for(block.site)
    results, logname = block_mod.measure(block, s.setup, servers, s.work, s.out)
    log_bytes = None
    if logname is not None:
        p = s.out / "logs" / logname
        log_bytes = p.read_bytes()
        p.unlink(missing_ok=True)
    try:
        packed = block_mod.pack(results, attempts, s.setup, s.worker, logname, log_bytes,
                                lane=s.lane)
    finally:
        for _, outcome, _ in results:  # a staged video never read stays no longer
            if outcome is not None and outcome.kept is not None:
                commit.discard(outcome.kept.files)
    return packed, s.info


# --- joining ---------------------------------------------------------------------------
class JoinCheck(WorkerPlugin):
    """A Dask worker plugin: at join, a worker
    whose files differ from the coordinator's leaves before it takes any work, with
    the reason in its log (and on `testbed worker`'s stderr); at close, the worker's
    open site and scratch results are removed."""

    name = "testbed-join-check"

    def __init__(self, coordinator: dict[str, str], recordings: dict[str, str]):
        self.coordinator = coordinator
        self.recordings = recordings

    def setup(self, worker) -> None:
        try:
            check_same(self.coordinator,
                       {label: _path(p) for label, p in self.recordings.items()})
        except Refused as e:
            REFUSED.append(str(e))
            log.error("%s", e)
            worker.loop.add_callback(worker.close, reason=str(e), nanny=True)
            raise

    def teardown(self, worker) -> None:
        close()
        runstate.release()


REFUSED: list[str] = []
"""Why this process's worker refused to join (read by `testbed worker`)."""
