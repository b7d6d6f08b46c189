"""Run a campaign: every planned trial once, each stored as it ends; resumable.

    Runner(campaign, out_dir).run()

For each block of the plan (testbed.campaign.plan: one run, site and
network, its protocols in a seeded random order) the runner keeps one replay
topology (reused while the site stays the same), starts one Browsertime
process inside the network's Mahimahi shells, and between its page loads
switches the servers: a replay environment (nginx+uWSGI or h3server) is
restarted only when the next setting needs other servers (another stack,
other h3server options or nginx environment); otherwise the server
namespace's sysctls are put back as the topology started and the next
setting is applied, so no setting inherits another's. A trial that failed is
tried again (up to `retries` times) in a block of its own right after.

Each finished trial is written to the store in one transaction, after its
files are in trials/<trial_id>/: browsertime.json (Browsertime's result of
the iteration), browsertime.har.gz (its HAR: the trial's page and requests),
visualmetrics.json, trial.json (the row and the evidence behind the
verdict), video.mp4 if the campaign keeps videos. A rerun skips stored trials. Ctrl-C or SIGTERM stops
the campaign after its servers, shells and namespaces are cleaned up; the
trial that was running is not stored and runs again on resume.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import logging
import os
import shutil
import sqlite3
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from testbed import proc
from testbed import recording as rec
from testbed.campaign import config as config_mod
from testbed.campaign import manifest as manifest_mod
from testbed.campaign import outdir
from testbed.campaign import plan as plan_mod
from testbed.campaign import settings as settings_mod
from testbed.campaign.config import Campaign
from testbed.campaign.store import Row, Store
from testbed.errors import InputError, TestbedError
from testbed.measure import browsertime, metrics
from testbed.measure import trial_har as harlib
from testbed.measure.session import Outcome, Session
from testbed.measure.trial import Evidence, judge
from testbed.profiles import NetworkProfile, load_network
from testbed.replay import server_summary as summary_mod
from testbed.replay.env import ReplayEnv
from testbed.runstate import USER, current
from testbed.topology import ReplayTopology

log = logging.getLogger(__name__)


def _utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def stopped_in_group(pgid: int) -> list[int]:
    """Processes of process group `pgid` that are stopped (SIGSTOP, SIGTSTP) or traced:
    alive to waitpid, but answering nothing."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] in ("T", "t"):
            found.append(int(entry.name))
    return sorted(found)


class Servers:
    """The servers of one topology, switched between settings with as few restarts
    as correctness allows."""

    def __init__(self, recording: rec.Recording, topology: ReplayTopology):
        self.recording = recording
        self.topology = topology
        self.env: ReplayEnv | None = None
        self.key: tuple | None = None
        self.pristine = manifest_mod.sysctls(topology.server.exec([]))
        self.applied: dict[str, dict[str, str]] = {}
        """Setting name -> the sysctls it changed, its congestion control and the route
        to the client, as first applied (for the manifest)."""

    def problem(self) -> str | None:
        """The health check: why the running servers cannot serve (one line: a server
        exited, or one of its processes is stopped), or None."""
        env = self.env
        if env is None:
            return None
        try:
            env.check_alive()
        except TestbedError as e:
            return str(e).splitlines()[0]
        for name, bg in env.servers.items():
            pids = stopped_in_group(bg.pid)
            if pids:
                return (f"replay server {name} ({env.stack} stack) stopped answering: "
                        f"process {pids[0]} is stopped")
        return None

    def use(self, setting: settings_mod.Setting) -> ReplayEnv:
        """Servers ready for a trial of `setting` (started again if the health check
        finds them dead)."""
        if self.env is not None:
            problem = self.problem()
            if problem is not None:
                log.warning("%s; starting the servers again", problem)
            if self.key != setting.server_key or problem is not None:
                self.close()
        self._reset()
        if setting.apply is not None:
            setting.apply(self.topology)
        if setting.name not in self.applied:
            now = manifest_mod.sysctls(self.topology.server.exec([]))
            self.applied[setting.name] = {
                "changed": {k: v for k, v in now.items() if self.pristine.get(k) != v},
                "net.ipv4.tcp_congestion_control": now.get("net.ipv4.tcp_congestion_control"),
                "route": self.topology.client_route(),
            }
        if self.env is None:
            env = ReplayEnv(self.recording, setting.stack, h3server_args=setting.h3server_args,
                            nginx_env=dict(setting.nginx_env), topology=self.topology)
            env.__enter__()
            self.env, self.key = env, setting.server_key
        return self.env

    def _reset(self) -> None:
        """The server namespace as the topology left it: sysctls, client route, no
        cached TCP metrics of earlier connections."""
        now = manifest_mod.sysctls(self.topology.server.exec([]))
        for key, value in self.pristine.items():
            if now.get(key) != value:
                proc.run(self.topology.server.exec(["sysctl", "-q", "-w", f"{key}={value}"]),
                         check=False)
        self.topology.set_client_route()
        proc.run(self.topology.server.exec(["ip", "tcp_metrics", "flush", "all"]), check=False)

    def close(self) -> None:
        env, self.env, self.key = self.env, None, None
        if env is not None:
            env.__exit__(None, None, None)


@dataclass
class TrialRecord:
    """What the runner saw around one trial's load."""

    setting: settings_mod.Setting
    before: dict | None = None
    after: dict | None = None
    server_error: str | None = None
    started_at: float | None = None


@dataclass
class BlockDriver:
    """testbed.measure.session.Driver for one block."""

    block: plan_mod.Block
    servers: Servers
    settings: dict[str, settings_mod.Setting]
    on_trial: object = None
    records: list[TrialRecord] = field(default_factory=list)

    def __post_init__(self):
        self.records = [TrialRecord(self.settings[t.protocol]) for t in self.block.trials]

    def prepare(self, k: int) -> None:
        if self.on_trial is not None:
            self.on_trial(self.block.trials[k])
        self.servers.use(self.records[k].setting)

    def launch(self, k: int) -> list[str]:
        env = self.servers.env
        assert env is not None
        return [*env.chromium_flags(), *self.records[k].setting.chromium_flags]

    def before_load(self, k: int) -> None:
        r = self.records[k]
        r.started_at = time.time()
        r.before = self.servers.env.summary() if self.servers.env else None

    def after_load(self, k: int, measured: bool) -> None:
        r = self.records[k]
        env = self.servers.env
        if env is None:
            return
        r.after = env.summary()
        r.server_error = self.servers.problem()


class Runner:
    def __init__(self, campaign: Campaign, out_dir: Path, console: Console | None = None):
        self.campaign = campaign
        self.out = Path(out_dir)
        self.console = console or Console(stderr=True)
        self.recordings: dict[str, rec.Recording] = {}
        self.site_keys: dict[str, str] = {}
        self.networks: dict[str, NetworkProfile] = {}
        self.settings: dict[str, settings_mod.Setting] = {}
        self.chains: dict = {}
        self.calibrations: dict[str, dict] = {}
        self.manifest: dict = {}
        self.stats = {"ok": 0, "failed": 0}
        self._in_a_row = 0  # failed trials stored one after the other
        self.applied: dict[str, dict] = {}
        """Protocol setting -> what it set in the server namespace (for the manifest)."""
        self.entries: dict[str, dict[str, config_mod.Entry]] = {}
        self._lines: TrialLines | None = None

    # --- setup -----------------------------------------------------------------------
    def preconditions(self) -> None:
        if os.geteuid() != 0:
            raise InputError("testbed run: needs root (namespaces, Mahimahi); run it as root")
        problem = browsertime.missing()
        if problem:
            raise TestbedError(problem)

    def load(self) -> None:
        """Every site, network and protocol setting once, by its label (see
        config.resolve: one label, one file's content)."""
        self.entries = config_mod.resolve(self.campaign)
        for label, e in self.entries["sites"].items():
            r = rec.load(e.file)
            self.recordings[label] = r
            for listed in e.listed:
                self.site_keys[listed] = label
        for label, e in self.entries["networks"].items():
            self.networks[label] = load_network(e.listed[0])
        for label, e in self.entries["protocols"].items():
            self.settings[label] = settings_mod.load(e.listed[0])
        for kind, loaded in (("networks", self.networks), ("protocols", self.settings)):
            for label, x in loaded.items():
                if x.digest != self.entries[kind][label].digest:
                    raise InputError(f"{x.source}: changed while the campaign was loaded")

    def check_settings(self) -> None:
        """The kernel takes every setting's sysctls (tried in a scratch namespace)."""
        from testbed.protocols import apply as apply_mod

        apply_mod.check_sysctls(apply_mod.server_options(e.listed[0])
                                for e in self.entries["protocols"].values())

    def calibrate(self, workdir: Path) -> None:
        from testbed.emulate import calibrate
        for name, profile in self.networks.items():
            cal = calibrate.cached(profile)
            if cal is None:
                self.console.print(f"calibrating network {name} (once per machine)...")
                cal = calibrate.for_profile(profile)
            self.calibrations[name] = cal.model_dump(mode="json")
            self.chains[name] = calibrate.chain_for(profile, workdir, cal)

    # --- the run --------------------------------------------------------------------------
    def run(self, runs: int | None = None, retry_failed: bool = False) -> dict[str, int]:
        """Run what is not stored yet; retry_failed: forget stored failed trials first.

        Everything is checked before the results folder is touched; then the folder
        is held (a second runner stops at once) while this one writes into it."""
        self.preconditions()
        self.load()
        runs = self.campaign.runs if runs is None else runs
        config_mod.check_size(self.campaign, runs)
        self.check_settings()
        self._check_labels()
        with outdir.claim(self.out), outdir.writing(self.out):
            return self._run_claimed(runs, retry_failed)

    def _run_claimed(self, runs: int, retry_failed: bool) -> dict[str, int]:
        (self.out / "trials").mkdir(exist_ok=True)
        (self.out / "logs").mkdir(exist_ok=True)
        work = current().path("campaign")
        work.mkdir(parents=True, exist_ok=True)
        os.chmod(work, 0o755)
        with Store(self.out / "trials.sqlite") as store:
            if retry_failed:  # rows first: a folder without a row is removed below
                store.forget_failed()
            removed = outdir.reconcile(self.out / "trials", store.finished())
            if removed:
                log.info("removed %d trial folders without a stored row", len(removed))
            self.calibrate(work)
            plan = plan_mod.blocks(list(self.recordings), list(self.networks),
                                   list(self.settings), runs, self.campaign.seed,
                                   groups={n: s.server_key for n, s in self.settings.items()})
            self.manifest = manifest_mod.write(
                self.out / "manifest.json",
                manifest_mod.session_record(self.campaign, self.recordings, self.networks,
                                            self.settings, self.calibrations, runs,
                                            self.entries))
            self._run_plan(plan, store, work)
        return dict(self.stats)

    def _check_labels(self) -> None:
        """A label keeps its meaning in one results folder: trials stored under it were
        measured with the content it names now (the manifest's earlier sessions say)."""
        db = self.out / "trials.sqlite"
        try:
            sessions = json.loads((self.out / "manifest.json").read_text()).get("sessions", [])
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            return
        if not db.is_file() or not isinstance(sessions, list):
            return
        for kind, column, digest_key in (("sites", "site", "manifest_sha256"),
                                         ("networks", "network", "sha256"),
                                         ("protocols", "protocol", "sha256")):
            section = "recordings" if kind == "sites" else kind
            for label, entry in self.entries[kind].items():
                before = [s.get(section, {}).get(label) for s in sessions
                          if isinstance(s, dict) and isinstance(s.get(section), dict)]
                earlier = {b.get(digest_key) for b in before if isinstance(b, dict)} - {None}
                if not earlier - {entry.digest}:
                    continue
                stored = _count(db, column, label)
                if stored:
                    raise InputError(
                        f"{entry.file}: {kind} {label} has other content than the one "
                        f"{stored} trials in {self.out} were measured with (sha256 "
                        f"{min(earlier - {entry.digest})[:12]}..., now "
                        f"{entry.digest[:12]}...); give it another name or another --out")

    def _open_site(self, r: rec.Recording, stack: ExitStack) -> Servers:
        """The replay topology of a site and its servers, closed with `stack`."""
        topo = stack.enter_context(ReplayTopology(r.ips))
        servers = Servers(r, topo)
        stack.callback(servers.close)
        return servers

    def _run_plan(self, plan: list[plan_mod.Block], store: Store, work: Path) -> None:
        with ExitStack() as stack:
            todo = plan_mod.pending(plan, store.finished())
            total = sum(len(b.trials) for b in todo)
            planned = sum(len(b.trials) for b in plan)
            self.console.print(f"campaign {self.campaign.name}: {planned} trials planned, "
                               f"{planned - total} already stored, {total} to run -> {self.out}")
            # Not a terminal (a log file, CI): one line per finished trial instead of a bar.
            self._lines = TrialLines(total) if not self.console.is_terminal else None
            progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TextColumn("{task.fields[counts]}"),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                console=self.console, transient=False,
                                disable=self._lines is not None)
            stack.enter_context(progress)
            task = progress.add_task("starting", total=total, counts="")
            topo_site: str | None = None
            servers: Servers | None = None
            site_stack = ExitStack()
            stack.callback(site_stack.close)
            try:
                for block in todo:
                    if block.site != topo_site:
                        if servers is not None:
                            self.applied.update(servers.applied)
                        site_stack.close()
                        site_stack = ExitStack()
                        servers = self._open_site(self.recordings[block.site], site_stack)
                        topo_site = block.site
                    self._run_block(block, servers, store, work, progress, task)
            finally:
                site_stack.close()
                if servers is not None:
                    self.applied.update(servers.applied)
                self.manifest["server_sysctls"] = self.applied
                try:
                    manifest_mod.save(self.out / "manifest.json", self.manifest)
                except OSError as e:  # a full disk: the error that stopped the run counts
                    log.error("manifest not updated: %s", e)
            progress.update(task, description="done")

    def _run_block(self, block: plan_mod.Block, servers: Servers, store: Store, work: Path,
                   progress: Progress, task) -> None:
        attempts: dict[str, int] = {}
        left = block
        while left.trials:
            failed_again = []
            results = self._session(left, servers, work, progress, task)
            for trial, outcome, record in results:
                if outcome is None:  # not reached: run again, no attempt used
                    failed_again.append(trial)
                    continue
                attempts[trial.id] = attempts.get(trial.id, 0) + 1
                row, files = self._row(trial, outcome, record, attempts[trial.id])
                if row.status != "ok" and attempts[trial.id] <= self.campaign.retries:
                    log.info("trial %s failed (%s); trying again", trial.id, row.reason)
                    for staged in files.values():
                        if isinstance(staged, Path):
                            staged.unlink(missing_ok=True)
                    failed_again.append(trial)
                    continue
                self._store(store, row, files)
                self.stats[row.status] += 1
                self._in_a_row = 0 if row.status == "ok" else self._in_a_row + 1
                if self._in_a_row >= self.campaign.stop_after_failures:
                    raise TestbedError(
                        f"{self._in_a_row} trials in a row failed, the last: {row.reason}; "
                        f"something is wrong with the setup (see {self.out}/logs/). Fix it, "
                        f"then resume with `testbed run ... --retry-failed`")
                progress.update(task, advance=1,
                                counts=f"[green]{self.stats['ok']} ok[/] "
                                       f"[red]{self.stats['failed']} failed[/]")
                if self._lines is not None:
                    self.console.print(self._lines.line(row), markup=False, highlight=False,
                                       soft_wrap=True)
            left = plan_mod.Block(block.run, block.site, block.network, tuple(failed_again))

    def _session(self, block: plan_mod.Block, servers: Servers, work: Path,
                 progress: Progress, task):
        r = self.recordings[block.site]
        c = self.campaign

        def on_trial(t: plan_mod.Trial):
            progress.update(task, description=f"run {t.run + 1} · {t.site} · {t.network} · "
                                              f"{t.protocol}")

        driver = BlockDriver(block, servers, self.settings, on_trial=on_trial)
        opts = browsertime.BrowsertimeOptions(
            iterations=len(block.trials), timeout_s=c.timeout_s, settle_ms=c.settle_ms,
            settle_max_ms=c.settle_max_ms)
        chain = self.chains[block.network]
        wrap = chain.argv([])
        blockdir = Path(os.path.join(work, f"block-{block.run}-{int(time.time() * 1000)}"))
        session = Session(r.url, opts, blockdir, netns=servers.topology.client.name,
                          wrap=wrap, driver=driver)
        t0 = time.monotonic()
        try:
            outcomes = session.run()
            t_end = time.monotonic()
            logname = f"run{block.run}-{block.site}-{block.network}-{int(time.time())}.log"
            if session.log_path.exists():
                copy = self.out / "logs" / logname
                try:
                    shutil.copyfile(session.log_path, copy)
                except BaseException:
                    copy.unlink(missing_ok=True)  # no half-copied log on a full disk
                    raise
            self._walls(outcomes, t0, t_end)
            out = []
            for trial, outcome, record in zip(block.trials, outcomes, driver.records):
                if outcome is not None:
                    outcome.extra["files"] = self._collect_files(outcome)
                    outcome.extra["log"] = f"logs/{logname}"
                out.append((trial, outcome, record))
            return out
        finally:
            session.remove()

    @staticmethod
    def _walls(outcomes: list[Outcome | None], t0: float, t_end: float) -> None:
        """Each trial's wall time: from the end of the previous trial (the block's start
        for the first) to its own end; the last also takes the block's tail, so the
        trials' wall times add up to the campaign's."""
        prev = t0
        done = [o for o in outcomes if o is not None]
        for i, o in enumerate(done):
            end = t_end if i == len(done) - 1 else o.ended
            o.extra["wall_s"] = round(end - prev, 3)
            prev = o.ended

    def _collect_files(self, o: Outcome) -> dict[str, bytes | Path]:
        files: dict[str, bytes | Path] = {}
        if o.result is not None:
            files["browsertime.json"] = json.dumps(o.result).encode()
        if o.har is not None:  # about 100 kB a trial as text: kept gzipped
            files["browsertime.har.gz"] = gzip.compress(json.dumps(o.har).encode(), 6)
        if o.visual is not None:
            files["visualmetrics.json"] = json.dumps(o.visual).encode()
        if o.video is not None and self.campaign.keep_video and o.video.exists():
            # out of the block's folder (removed next); into the trial's when stored
            staged = self.out / "trials" / f".video-{os.getpid()}-{time.monotonic_ns()}.mp4"
            shutil.move(str(o.video), staged)
            files["video.mp4"] = staged
        return files

    # --- one trial's row ----------------------------------------------------------------
    def _row(self, trial: plan_mod.Trial, o: Outcome, record: TrialRecord,
             attempt: int) -> tuple[Row, dict]:
        setting = record.setting
        m = metrics.extract(o.result, o.visual)
        protocols = harlib.protocols(o.har) if o.har is not None else {}
        diff = (summary_mod.diff(record.before, record.after)
                if record.before is not None and record.after is not None else None)
        evidence = Evidence(
            stack=setting.stack, measured=o.measured, metrics=m, protocols=protocols,
            misses=diff["misses"] if diff else None, server_error=record.server_error,
            browser_error=o.browser_error, timed_out=o.timed_out, visual_error=o.visual_error,
            video=True, max_misses=self.campaign.max_misses)
        verdict = judge(evidence)
        ok = verdict.ok
        row = Row(
            trial_id=trial.id, campaign=self.campaign.name, site=trial.site,
            network=trial.network, protocol=trial.protocol, run=trial.run,
            status=verdict.status, reason=verdict.reason, attempt=attempt,
            started_at=_utc(record.started_at or time.time()),
            wall_s=float(o.extra.get("wall_s", round(o.ended - o.began, 3))),
            plt_ms=m.plt_ms if ok else None, fvc_ms=m.fvc_ms if ok else None,
            lvc_ms=m.lvc_ms if ok else None, vc85_ms=m.vc85_ms if ok else None,
            si_ms=m.si_ms if ok else None, ttfb_ms=m.ttfb_ms if ok else None,
            requests=harlib.requests(o.har) if o.har is not None else None,
            bytes=diff["bytes"] if diff else None,
            misses=diff["misses"] if diff else None,
            protocols=Row.protocols_json(protocols) if o.har is not None else None,
            max_in_flight=(Row.in_flight_json(harlib.max_in_flight(o.har))
                           if o.har is not None else None),
            rtt_ms=float(self.networks[trial.network].min_rtt_ms),
            origins=len(self.recordings[trial.site].hosts),
        )
        files = dict(o.extra.get("files", {}))
        files["trial.json"] = json.dumps({
            "row": row.__dict__, "evidence": {
                "measured": o.measured, "browser_error": o.browser_error,
                "timed_out": o.timed_out, "visual_error": o.visual_error,
                "server_error": record.server_error,
                "miss_urls": diff["miss_urls"] if diff else None,
                "metrics_all": m.__dict__, "browsertime_log": o.extra.get("log")},
        }, indent=1).encode()
        return row, files

    def _store(self, store: Store, row: Row, files: dict) -> None:
        """The trial's files into a temporary folder, then, in the transaction that
        stores its row, renamed into trials/<trial_id>: the row and the folder are
        stored together or not at all (a failure removes both; a process killed
        between rename and commit leaves a folder without a row, which the next
        run's reconcile removes)."""
        final = self.out / "trials" / row.trial_id
        tmp = final.with_name(f".{row.trial_id}.tmp")
        placed = False
        try:
            outdir.remove(tmp)
            tmp.mkdir()
            for name, content in files.items():
                if isinstance(content, Path):
                    shutil.move(str(content), tmp / name)
                else:
                    (tmp / name).write_bytes(content)
            with store.adding(row):  # IntegrityError (nothing touched) if already stored
                outdir.remove(final)  # no row: what a killed run left
                tmp.rename(final)
                placed = True
        except BaseException:
            if placed:
                outdir.remove(final)
            outdir.remove(tmp)
            for content in files.values():
                if isinstance(content, Path):
                    content.unlink(missing_ok=True)
            raise

def _count(db: Path, column: str, value: str) -> int:
    """Stored trials with column = value (read-only; 0 if the store cannot be read).
    Without a WAL file every row is in the database file: opened immutable, so that
    SQLite creates no -wal and -shm files beside it."""
    wal = db.with_name(db.name + "-wal").exists()
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro{'' if wal else '&immutable=1'}", uri=True)
        try:
            return con.execute(f"SELECT COUNT(*) FROM trials WHERE {column} = ?",
                               (value,)).fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


class TrialLines:
    """One log line per finished trial (id, status, PLT, ETA), for output that is not a
    terminal; the ETA is the mean time per trial so far times the trials left."""

    def __init__(self, total: int, clock=time.monotonic):
        self.total, self.done, self.clock, self.t0 = total, 0, clock, clock()

    def line(self, row: Row) -> str:
        self.done += 1
        per = (self.clock() - self.t0) / self.done
        eta = int(per * (self.total - self.done))
        status = row.status if row.status == "ok" else f"{row.status} ({row.reason})"
        plt_ = "–" if row.plt_ms is None else f"{row.plt_ms:.0f} ms"
        return (f"trial {self.done}/{self.total} {row.trial_id} {status} PLT {plt_} "
                f"ETA {eta // 3600}:{eta // 60 % 60:02d}:{eta % 60:02d}")


def default_out(campaign: Campaign) -> Path:
    return Path("results") / campaign.name


def owner_check() -> None:
    """The testbed user must exist (Chromium and Mahimahi run as it)."""
    import pwd
    try:
        pwd.getpwnam(USER)
    except KeyError:
        raise TestbedError(f"user {USER} missing; run `make setup`") from None
