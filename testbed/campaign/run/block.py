"""Measure one block of a campaign: the one function the in-process runner and a
Dask worker both call.

    results, log = measure(block, Setup(...), servers, work, out, on_trial)
    # results: (trial, outcome or None, record) per trial of the block, in order;
    # outcome.kept holds the trial's files; log: the Browsertime log copied to
    # out/logs/<log> (None if it wrote none)
    packed = pack(results, attempts, setup, worker, log_bytes)   # worker: bytes only

One block (testbed.campaign.plan.plan.Block: one run, site and network) is one
Browsertime process inside the network's Mahimahi shells on the site's replay
topology (`servers`); between its page loads the servers switch settings
(testbed.campaign.run.servers, driven by BlockDriver).

`pack` is what a worker on another machine sends back: each trial's row
(testbed.campaign.run.rows) and its files as bytes (a kept video read and removed
from the worker's scratch folder), so that the coordinator stores them with
testbed.campaign.store.commit exactly as it stores a local trial.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from results_contract.schema import DEFAULT_CLIENT
from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.plan.config import Campaign
from testbed.campaign.run import rows
from testbed.campaign.run.rows import TrialRecord
from testbed.campaign.run.servers import Servers
from testbed.campaign.store import commit
from testbed.campaign.store.store import Row
from testbed.formats import recording as rec
from testbed.formats.profiles import NetworkProfile
from testbed.host import firefox
from testbed.measure import browsertime, completeness, telemetry
from testbed.measure.browser_process import BrowsertimeProcess, Kept, Outcome
from testbed.measure.captures import Captures
from testbed.measure.load import Probe
from testbed.protocols import ServerOptions
from testbed.replay.env import host_ips

WARM_FLAGS = ("--enable-net-benchmarking", "--enable-features=EnableTLS13EarlyData")
"""Chromium's flags for a warm visit: chrome.benchmarking (clearCache,
closeConnections) for the warm-up, and TLS 1.3 early data over TCP (QUIC's 0-RTT
is on by default)."""


@dataclass
class BlockDriver:
    """testbed.measure.browser_process.Driver for one block."""

    block: plan_mod.Block
    servers: Servers
    settings: dict[str, ServerOptions]
    on_trial: Callable[[Any], object] | None = None
    records: list[TrialRecord] = field(default_factory=list)
    captures: Captures | None = None
    recorder: telemetry.Recorder | None = None
    switches: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) of each prepare(): the servers' switch and readiness probes."""

    visits: dict[str, str] = field(default_factory=dict)
    """Setting label -> its visit ("first" when not named)."""

    def __post_init__(self):
        self.records = [TrialRecord(self.settings[t.setting],
                                    visit=self.visits.get(t.setting, "first"))
                        for t in self.block.trials]

    def prepare(self, k: int) -> None:
        if self.on_trial is not None:
            self.on_trial(self.block.trials[k])
        t0 = time.time()
        try:
            self.servers.use(self.records[k].setting)
        finally:
            self.switches.append((t0, time.time()))

    def launch(self, k: int) -> list[str] | dict[str, Any]:
        env = self.servers.env
        assert env is not None
        r = self.records[k]
        if r.launched_at is None:  # the trial's telemetry window opens
            r.launched_at = time.time()
        if self.block.client == "firefox":
            message = env.firefox_launch()
            if r.visit == "warm":
                message["prefs"].update(firefox.WARM_PREFS)
            if self.captures is not None:
                self.captures.start(k)
                message["env"] = self.captures.firefox_env(k)
            return message
        extra = list(WARM_FLAGS) if r.visit == "warm" else []
        if self.captures is not None:
            self.captures.start(k)
            extra += self.captures.chromium_flags(k)
        return [*env.chromium_flags(), *r.setting.chromium_flags, *extra]

    def before_load(self, k: int) -> None:
        r = self.records[k]
        r.started_at = time.time()
        r.before = self.servers.env.summary() if self.servers.env else None
        if self.recorder is not None:
            self.recorder.loading(True)

    def warmed(self, k: int) -> None:
        """The warm-up load is over: what it served is kept apart (warm_before and
        warm_after), the measured load is counted from here."""
        r = self.records[k]
        r.warm_before = r.before
        r.before = r.warm_after = self.servers.env.summary() if self.servers.env else None
        # The warm-up's TCP connections (closed by it) are no row of the trial: like the
        # readiness probes of a switch, what was first seen in this span goes nowhere.
        # (Its QUIC connections are in `before`, which the rows are counted from.)
        if r.launched_at is not None:
            self.switches.append((r.launched_at, time.time()))

    def after_load(self, k: int, measured: bool) -> None:
        r = self.records[k]
        if self.recorder is not None:
            self.recorder.loading(False)
        env = self.servers.env
        if env is None:
            return
        r.after = env.summary()
        r.server_error = self.servers.problem()

    def connections(self, recorder: telemetry.Recorder | None, last: dict | None,
                    recording: rec.Recording) -> None:
        """Each trial's rows of table `connections` into its record: TCP from the
        recorder (stopped), QUIC from h3server's summaries (`last`: read at the block's
        end)."""
        hosts = telemetry.origins(recording)
        tcp = telemetry.attribute(recorder.connections() if recorder else [],
                                  [r.launched_at for r in self.records], self.switches)
        summaries = [s for r in self.records for s in (r.before, r.after)] + [last]
        for k, r in enumerate(self.records):
            if r.launched_at is None:
                continue
            rows = [telemetry.tcp_row(c, hosts) for c in tcp[k]]
            if r.after is not None:
                later = summaries[2 * k + 2:]
                rows += telemetry.quic_rows(r.before, r.after, later, hosts)
            r.connections = rows


@dataclass
class Setup:
    """What a block needs of the campaign, loaded once per process."""

    campaign: Campaign
    recordings: dict[str, rec.Recording]
    networks: dict[str, NetworkProfile]
    settings: dict[str, ServerOptions]
    chains: dict
    """Network label -> its calibrated Mahimahi shell chain."""

    def visits(self) -> dict[str, str]:
        """Setting label -> its visit (first or warm), from the campaign's `visit`."""
        return {label: self.campaign.visit_of_label(label) for label in self.settings}


def measure(block: plan_mod.Block, setup: Setup, servers: Servers, work: Path, out: Path,
            on_trial=None) -> tuple[list[tuple], str | None]:
    """Run the block once; its trials' (trial, outcome or None, record) and the name
    of its Browsertime log in out/logs/. work: the run's scratch folder (the block's
    folder is made in it and removed); out: a results folder (trials/, logs/)."""
    r = setup.recordings[block.site]
    c = setup.campaign
    visits = setup.visits()
    driver = BlockDriver(block, servers, setup.settings, on_trial=on_trial, visits=visits)
    network = setup.networks[block.network]
    needed = completeness.needed(r)
    opts = browsertime.BrowsertimeOptions(
        iterations=len(block.trials), timeout_s=c.timeout_s, settle_ms=c.settle_ms,
        settle_max_ms=c.settle_max_ms, needed=needed.window,
        limit_ms=completeness.window_limit_ms(needed.bytes, network.downlink_mbit,
                                              network.min_rtt_ms, c.settle_max_ms),
        video=c.video, video_fps=c.fps_of(network), video_pipeline=c.video_pipeline)
    wrap = setup.chains[block.network].argv([])
    blockdir = Path(os.path.join(work, f"block-{block.run}-{int(time.time() * 1000)}"))
    process = BrowsertimeProcess(r.url, opts, blockdir, netns=servers.topology.client.name,
                      wrap=wrap, driver=driver,
                      visits=[visits.get(t.setting, "first") for t in block.trials],
                      client=block.client, hosts=host_ips(r),
                      probe=Probe(servers.pids, limit=c.max_load_before_start))
    t0 = time.monotonic()
    recorder = (telemetry.Recorder(servers.topology.server.name, r.ips) if c.telemetry
                else None)
    topo = servers.topology
    captures = Captures(c.capture, Path(f"{blockdir}-captures"), topo.server.name,
                        topo.server_dev)
    servers.keep_qlogs("qlog" in c.capture)
    try:
        with recorder or nullcontext(), captures:
            driver.captures = captures if c.capture else None
            driver.recorder = recorder
            outcomes = process.run()
            captures.stop()
            kept_captures = [captures.collect(k, qlogs_of(rec_, servers.qlog_dir))
                             for k, rec_ in enumerate(driver.records)]
        t_end = time.monotonic()
        if c.telemetry:
            env = servers.env
            driver.connections(recorder, env.summary() if env is not None else None, r)
        who = "" if block.client == DEFAULT_CLIENT else f"-{block.client}"
        logname = f"run{block.run}-{block.site}-{block.network}{who}-{int(time.time())}.log"
        copied = None
        if process.log_path.exists():
            copy = out / "logs" / logname
            try:
                shutil.copyfile(process.log_path, copy)
            except BaseException:
                copy.unlink(missing_ok=True)  # no half-copied log on a full disk
                raise
            copied = logname
        walls = iter(walls_of(outcomes, t0, t_end))
        results = []
        for trial, outcome, record in zip(block.trials, outcomes, driver.records):
            if outcome is not None:
                files, sizes = kept_captures[outcome.index]
                record.captures = sizes if c.capture else None
                outcome.kept = Kept(
                    files=MappingProxyType({**commit.collect(outcome, out, c.keep_video),
                                            **files}),
                    log=f"logs/{logname}", wall_s=next(walls))
            results.append((trial, outcome, record))
        return results, copied
    finally:
        process.remove()


def qlogs_of(record: TrialRecord, folder: Path | None) -> list[Path]:
    """The qlog files of a trial's QUIC connections: those its h3server summary lists
    after its load and not before (named by connection id)."""
    if folder is None:
        return []
    return [folder / f"{cid}.sqlog" for cid in telemetry.new_conn_ids(record.before,
                                                                         record.after)
            if all(ch in "0123456789abcdef" for ch in cid)]


def walls_of(outcomes: list[Outcome | None], t0: float, t_end: float) -> list[float]:
    """Wall time of each trial reached, in order: from the end of the previous
    trial (the block's start for the first) to its own end; the last also takes
    the block's tail, so the trials' wall times add up to the campaign's."""
    prev, walls = t0, []
    done = [o for o in outcomes if o is not None]
    for i, o in enumerate(done):
        end = t_end if i == len(done) - 1 else o.ended
        walls.append(round(end - prev, 3))
        prev = o.ended
    return walls


def build_row(trial: plan_mod.Trial, o: Outcome, record: TrialRecord, attempt: int,
              setup: Setup, worker: str, lane: int = 0) -> tuple[Row, dict]:
    return rows.build(trial, o, record, attempt, setup.campaign, setup.networks[trial.network],
                      setup.recordings[trial.site], worker=worker, lane=lane)


@dataclass(frozen=True)
class Packed:
    """One trial as a worker sends it back: its row (None: the block never reached
    it, it runs again without using an attempt) and its files as bytes."""

    trial: plan_mod.Trial
    row: Row | None
    files: dict[str, bytes]


@dataclass(frozen=True)
class PackedBlock:
    """What a worker sends back for one block."""

    trials: tuple[Packed, ...]
    worker: str
    log_name: str | None = None
    log: bytes | None = None


def as_bytes(files) -> dict[str, bytes]:
    """A trial's files with every staged file read into memory and removed."""
    out = {}
    for name, content in files.items():
        if isinstance(content, Path):
            out[name] = content.read_bytes()
            content.unlink(missing_ok=True)
        else:
            out[name] = bytes(content)
    return out


def pack(results: list[tuple], attempts: dict[str, int], setup: Setup, worker: str,
         log_name: str | None = None, log: bytes | None = None, lane: int = 0) -> PackedBlock:
    """The block's rows and files, ready to cross the network. attempts: trial id ->
    attempts already stored-and-retried before this one (the row's attempt is one more)."""
    packed = []
    for trial, outcome, record in results:
        if outcome is None:
            packed.append(Packed(trial, None, {}))
            continue
        row, files = build_row(trial, outcome, record, attempts.get(trial.id, 0) + 1, setup,
                               worker, lane)
        packed.append(Packed(trial, row, as_bytes(files)))
    return PackedBlock(tuple(packed), worker, log_name, log)
