"""Run a campaign: every planned trial once, each stored as it ends; resumable.

    Runner(campaign, out_dir).run()

For each block of the plan (testbed.campaign.plan.plan: one run, site and
network, its protocols in a seeded random order) the runner keeps one replay
topology (reused while the site stays the same, built anew if a setting could
not be undone), starts one Browsertime process inside the network's Mahimahi
shells, and between its page loads switches the servers and protocol settings
(testbed.campaign.run.servers). A trial that failed is tried again (up to
`retries` times, testbed.campaign.run.retry) in a block of its own right after.

Each finished trial is written to the store in one transaction, after its
files are in trials/<trial_id>/ (testbed.campaign.run.rows builds the row and
trial.json, testbed.campaign.store.commit stores them). A rerun skips stored trials.
Ctrl-C or SIGTERM stops the campaign after its servers, shells and namespaces
are cleaned up; the trial that was running is not stored and runs again on
resume. Progress: testbed.campaign.run.progress.
"""

from __future__ import annotations

import logging
import os
import platform
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from results_contract import manifest as contract
from results_contract import trial_folder
from results_contract.manifest import Listed, Manifest
from results_contract.schema import DEFAULT_CLIENT
from testbed.campaign.plan import adaptive
from testbed.campaign.plan import config as config_mod
from testbed.campaign.plan import lanes as lanes_mod
from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.plan import settings as settings_mod
from testbed.campaign.plan.config import Campaign
from testbed.campaign.run import block as block_mod
from testbed.campaign.run import progress as progress_mod
from testbed.campaign.run import rows
from testbed.campaign.run.retry import RetryPolicy
from testbed.campaign.run.rows import TrialRecord
from testbed.campaign.run.servers import Servers
from testbed.campaign.store import commit, outdir
from testbed.campaign.store import manifest as manifest_mod
from testbed.campaign.store import store as store_mod
from testbed.campaign.store import versions as versions_mod
from testbed.campaign.store.store import Store
from testbed.errors import InputError, TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import NetworkProfile, load_network
from testbed.host.runstate import USER, current
from testbed.host.topology import ReplayTopology
from testbed.measure import browsertime
from testbed.measure.browser_process import Outcome
from testbed.protocols import ServerOptions
from testbed.protocols.apply import check_sysctls
from testbed.replay import layout

log = logging.getLogger(__name__)

BlockDriver = block_mod.BlockDriver
LOCAL_WORKER = f"{platform.node()}/local"
"""The worker column of trials measured in the runner's own process."""


class Runner:
    def __init__(self, campaign: Campaign, out_dir: Path, console: Console | None = None,
                 cluster=None):
        self.campaign = campaign
        self.cluster = cluster
        """testbed.campaign.cluster.cluster.ClusterOptions: blocks run on Dask workers (None or
        a local cluster of one: in this process, as always)."""
        self.out = Path(out_dir)
        self.console = console or Console(stderr=True)
        self.recordings: dict[str, rec.Recording] = {}
        self.site_keys: dict[str, str] = {}
        self.networks: dict[str, NetworkProfile] = {}
        self.settings: dict[str, ServerOptions] = {}
        self.chains: dict = {}
        self.calibrations: dict[str, dict] = {}
        self.manifest: Manifest = contract.empty()
        self.stats = {"ok": 0, "failed": 0}
        self.retry = RetryPolicy(campaign.retries, campaign.stop_after_failures)
        self.applied: dict[str, dict] = {}
        """Protocol setting -> what it set in the server namespace (for the manifest)."""
        self.entries: dict[str, dict[str, config_mod.Entry]] = {}
        self.lanes: dict[str, int] = {}
        """Network label -> lanes (blocks measured at once; testbed.campaign.plan.lanes)."""
        self.lanes_from: dict[str, str] = {}
        """Network label -> where its lane count comes from."""
        self._lines: progress_mod.TrialLines | None = None
        self._bar: tuple = (None, None, 0)
        """(progress, task, trials to run) of the running plan."""
        self.decider: adaptive.Decider | None = None
        """Adaptive runs (the campaign's `runs` is a table and no --runs): which blocks
        are left out because their site x network is precise enough."""

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
            r = layout.apply(rec.load(e.file), self.campaign.layout)
            self.recordings[label] = r
            for listed in e.listed:
                self.site_keys[listed] = label
        for label, e in self.entries["networks"].items():
            self.networks[label] = load_network(e.found)
        for label, e in self.entries["protocols"].items():
            self.settings[label] = settings_mod.load(e.found)
        for kind, loaded in (("networks", self.networks), ("protocols", self.settings)):
            for label, x in loaded.items():
                if x.digest != self.entries[kind][label].digest:
                    raise InputError(f"{x.source}: changed while the campaign was loaded")

    def check_settings(self) -> None:
        """The kernel takes every setting's sysctls (tried in a scratch namespace)."""
        check_sysctls(self.settings.values())

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
    def run(self, runs: int | None = None, retry_failed: bool = False,
            resume_from: Path | None = None,
            rerun_runs: frozenset[int] = frozenset(),
            mixed_versions: bool = False) -> dict[str, int]:
        """Run what is not stored yet; retry_failed: forget stored failed trials first;
        rerun_runs: forget the stored trials of these runs (of this campaign's sites,
        networks, settings and clients) first, e.g. after a fix to what measured them;
        resume_from: begin a results folder without a store with the rows kept in this
        folder (testbed.campaign.store.reference.seed); mixed_versions: store trials beside
        stored ones that other versions measured (testbed.campaign.store.versions), saying so
        in the manifest's session.

        Everything is checked before the results folder is touched; then the folder
        is held (a second runner stops at once) while this one writes into it."""
        self.preconditions()
        self.load()
        if runs is None and self.campaign.adaptive is not None:
            self.decider = adaptive.Decider(self.campaign.adaptive, list(self.settings))
        runs = self.campaign.max_runs if runs is None else runs
        config_mod.check_size(self.campaign, runs)
        self.check_settings()
        self._check_labels()
        if resume_from is not None:  # the kept rows were measured with these labels' content
            self._check_labels(Path(resume_from))
        mixed = self._check_versions(resume_from, rerun_runs, mixed_versions)
        with outdir.claim(self.out), outdir.writing(self.out):
            if resume_from is not None:
                from testbed.campaign.store import reference

                n = reference.seed(self.out, Path(resume_from), self.campaign.name)
                self.console.print(f"seeded {n} stored trials from {resume_from}")
            return self._run_claimed(runs, retry_failed, rerun_runs, mixed)

    def _check_versions(self, resume_from: Path | None, rerun_runs: frozenset[int],
                        mixed_versions: bool) -> list[str]:
        """The stored ok trials (of the results folder, and of the folder resumed from)
        that other versions of the measuring parts measured, one line each: refused
        unless mixed_versions (the lines then go to the manifest's session)."""
        folders = [f for f in (self.out, resume_from) if f is not None
                   and os.path.lexists(Path(f) / "manifest.json")]
        if not folders:
            return []
        now = manifest_mod.versions()
        forgotten = (versions_mod.Forgotten(rerun_runs, list(self.recordings),
                                            list(self.networks), list(self.settings),
                                            list(self.campaign.client), DEFAULT_CLIENT)
                     if rerun_runs else None)
        lines = []
        for f in folders:
            try:
                lines += versions_mod.differences(Path(f), now,
                                                  forgotten if f == self.out else None)
            except InputError as e:  # not a manifest or store: refused, or recorded
                if not mixed_versions:
                    raise
                lines.append(str(e))
        if lines and not mixed_versions:
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise InputError(f"{lines[0]}{more}; measure those runs again (--rerun-runs), "
                             "give another --out, or mix the versions on purpose "
                             "(--mixed-versions)")
        return lines

    def _run_claimed(self, runs: int, retry_failed: bool,
                     rerun_runs: frozenset[int] = frozenset(),
                     mixed: list[str] | None = None) -> dict[str, int]:
        (self.out / trial_folder.TRIALS_DIR).mkdir(exist_ok=True)
        (self.out / "logs").mkdir(exist_ok=True)
        work = current().path("campaign")
        work.mkdir(parents=True, exist_ok=True)
        os.chmod(work, 0o755)
        with Store(self.out / "trials.sqlite") as store:
            if retry_failed:  # rows first: a folder without a row is removed below
                store.forget_failed()
            rerun: list[str] = []
            if rerun_runs:
                rerun = store.forget_runs(rerun_runs, list(self.recordings),
                                          list(self.networks), list(self.settings),
                                          list(self.campaign.client))
                self.console.print(f"measuring {len(rerun)} stored trials of runs "
                                   f"{config_mod.runs_text(rerun_runs)} again", markup=False,
                                   highlight=False)
            removed = outdir.reconcile(self.out / trial_folder.TRIALS_DIR, store.finished())
            if removed:
                log.info("removed %d trial folders without a stored row", len(removed))
            self.calibrate(work)
            self.resolve_lanes()
            plan = plan_mod.blocks(list(self.recordings), list(self.networks),
                                   list(self.settings), runs, self.campaign.seed,
                                   groups={n: s.server_key for n, s in self.settings.items()},
                                   clients=self.campaign.client)
            more: dict = {"lanes": {n: {"lanes": k, "from": self.lanes_from[n]}
                                    for n, k in self.lanes.items()}}
            if mixed:  # stored beside trials other versions measured, on purpose
                more["mixed_versions"] = mixed
            if rerun_runs:  # which stored trials this session replaced
                more["rerun"] = {"runs": sorted(rerun_runs), "trials": len(rerun)}
            self.manifest = manifest_mod.write(
                self.out / "manifest.json",
                manifest_mod.session_record(self.campaign, self.recordings, self.networks,
                                            self.settings, self.calibrations, runs,
                                            self.entries, **more))
            self._run_plan(plan, store, work)
        return dict(self.stats)

    def resolve_lanes(self) -> None:
        """Lanes per network (the campaign's `lanes`; "auto": bench/lanes's stored
        answer), said on the console when more than one or when "auto" found none."""
        counts, why = lanes_mod.resolve(self.campaign.lanes, self.networks)
        if self.cluster is not None and self.cluster.scheduler is not None and \
                lanes_mod.wanted(counts):
            self.console.print("lanes: with --scheduler every `testbed worker` is one lane "
                               "(start several per machine for more); one lane each")
            counts = dict.fromkeys(counts, 1)
            why = dict.fromkeys(counts, "--scheduler: one lane per testbed worker")
        self.lanes, self.lanes_from = counts, why
        for n in counts:
            if counts[n] > 1 or why[n].startswith(f"{lanes_mod.AUTO}: no"):
                self.console.print(f"network {n}: {counts[n]} lane"
                                   f"{'s' if counts[n] > 1 else ''} ({why[n]})",
                                   markup=False, highlight=False)

    def _check_labels(self, folder: Path | None = None) -> None:
        """A label keeps its meaning in one results folder (`folder`, default the
        campaign's): trials stored under it were measured with the content it names now
        (the manifest's earlier sessions say)."""
        folder = self.out if folder is None else folder
        db = folder / "trials.sqlite"
        if db.is_file():
            self._check_visits(db)
        from results_contract.load import ResultsError, load_manifest

        try:  # never through a symlink, never a FIFO
            found = load_manifest(folder)
        except ResultsError:
            return
        if not db.is_file() or found is None:
            return
        self._check_layout(found, db)
        self._check_deterministic_scripts(found, db)
        for kind, column, digest_key in (("sites", "site", "manifest_sha256"),
                                         ("networks", "network", "sha256"),
                                         ("protocols", "setting", "sha256")):
            section = "recordings" if kind == "sites" else kind
            for label, entry in self.entries[kind].items():
                before: list[Listed] = [b for s in found.sessions
                                        if (b := getattr(s, section).get(label)) is not None]
                other = [b for b in before if not _same_content(b, digest_key, entry)]
                if not other:
                    continue
                stored = _count(db, column, label)
                if stored:
                    earlier = min(str(getattr(b, digest_key)) for b in other)
                    raise InputError(
                        f"{entry.file}: {kind} {label} has other content than the one "
                        f"{stored} trials in {self.out} were measured with (sha256 "
                        f"{earlier[:12]}..., now "
                        f"{entry.digest[:12]}...); give it another name or another --out")

    def _check_layout(self, found: Manifest, db: Path) -> None:
        """The trials of one results folder were all measured in one layout
        (testbed.replay.layout): a session that ran another refuses this one."""
        other = sorted({s.campaign.settings.layout for s in found.sessions
                        if s.campaign is not None} - {self.campaign.layout})
        stored = store_mod.count_where(db, "1 = 1", ()) if other else 0
        if stored:
            raise InputError(
                f"{self.campaign.source}: key layout: {self.campaign.layout}, but {stored} "
                f"trials in {self.out} were measured with layout {other[0]}; give another "
                "--out")

    def _check_deterministic_scripts(self, found: Manifest, db: Path) -> None:
        """The trials of one results folder all ran the pinned script, or none did
        (testbed.replay.deterministic; a manifest written before the key: none did)."""
        mine = self.campaign.deterministic_scripts
        other = any(s.campaign.settings.deterministic_scripts != mine for s in found.sessions
                    if s.campaign is not None)
        stored = store_mod.count_where(db, "1 = 1", ()) if other else 0
        if stored:
            was = "without" if mine else "with"
            raise InputError(
                f"{self.campaign.source}: key deterministic_scripts: {str(mine).lower()}, but "
                f"{stored} trials in {self.out} were measured {was} the pinned script; set "
                f"deterministic_scripts = {str(not mine).lower()} to go on with them, or give "
                "another --out")

    def _check_visits(self, db: Path) -> None:
        """A setting's trials in one results folder are all first or all warm visits."""
        for label in self.entries["protocols"]:
            visit = self.campaign.visit_of_label(label)
            stored = _count_other_visits(db, label, visit)
            if stored:
                raise InputError(
                    f"{self.campaign.source}: key visit: {label} is now visited {visit}, but "
                    f"{stored} of its trials in {self.out} were other visits; give the "
                    "setting another name or another --out")

    def _open_site(self, r: rec.Recording, exits: ExitStack) -> Servers:
        """The replay topology of a site and its servers, closed with `exits`."""
        topo = exits.enter_context(ReplayTopology(r.ips))
        servers = Servers(r, topo, deterministic_scripts=self.campaign.deterministic_scripts)
        exits.callback(servers.close)
        return servers

    def _run_plan(self, plan: list[plan_mod.Block], store: Store, work: Path) -> None:
        with ExitStack() as exits:
            todo = plan_mod.pending(plan, store.finished())
            total = sum(len(b.trials) for b in todo)
            planned = sum(len(b.trials) for b in plan)
            up_to = ""
            if self.decider is not None:
                self.decider.load(store)
                up_to = f" (at most: runs {self.campaign.adaptive})"
            self.console.print(f"campaign {self.campaign.name}: {planned} trials planned"
                               f"{up_to}, {planned - total} already stored, {total} to run "
                               f"-> {self.out}")
            # Not a terminal (a log file, CI): one line per finished trial instead of a bar.
            self._lines = progress_mod.TrialLines(total) if not self.console.is_terminal else None
            progress = exits.enter_context(progress_mod.bar(self.console,
                                                            disable=self._lines is not None))
            task = progress.add_task("starting", total=total, counts="")
            self._bar = (progress, task, total)
            topo_site: str | None = None
            servers: Servers | None = None
            site_exits = ExitStack()
            exits.callback(lambda: site_exits.close())
            try:
                if (self.cluster is not None and self.cluster.wanted) or \
                        lanes_mod.wanted(self.lanes):
                    self._run_on_cluster(todo, store, progress, task)
                    todo = []
                for block in todo:
                    if self._done(store, block):
                        continue
                    if block.site != topo_site or (servers is not None and servers.broken):
                        if servers is not None:
                            self.applied.update(servers.applied)
                            if servers.broken:
                                log.warning("%s; building the site's topology anew",
                                            servers.broken)
                        site_exits.close()
                        site_exits = ExitStack()
                        servers = self._open_site(self.recordings[block.site], site_exits)
                        topo_site = block.site
                    assert servers is not None  # opened for this block's site above
                    self._run_block(block, servers, store, work, progress, task)
                if self.decider is not None:
                    self.decider.finish(store, [(site, net) for site in self.recordings
                                                   for net in self.networks])
            finally:
                site_exits.close()
                if servers is not None:
                    self.applied.update(servers.applied)
                self.manifest = self.manifest.with_latest(server_sysctls=self.applied)
                try:
                    manifest_mod.save(self.out / "manifest.json", self.manifest)
                except OSError as e:  # a full disk: the error that stopped the run counts
                    log.error("manifest not updated: %s", e)
            progress.update(task, description="done")

    def _done(self, store: Store, block: plan_mod.Block) -> bool:
        """Adaptive runs: the block's site x network is precise enough (or at its max);
        the block is left out (testbed.campaign.plan.adaptive)."""
        if self.decider is None or not self.decider.skips(store, block.site,
                                                          block.network, block.run):
            return False
        progress, task, total = self._bar  # the ETA counts the trials left out no more
        self._bar = (progress, task, total - len(block.trials))
        progress.update(task, total=total - len(block.trials))
        if self._lines is not None:
            self._lines.total -= len(block.trials)
        return True

    def _run_on_cluster(self, todo: list[plan_mod.Block], store: Store, progress: Progress,
                        task) -> None:
        from testbed.campaign.cluster import cluster

        opts = self.cluster or cluster.ClusterOptions(workers=1)
        gate, per = None, 1
        if opts.scheduler is None and lanes_mod.wanted(self.lanes):
            # lanes: each a process of the local cluster, `per` of them per worker
            per = max(self.lanes.values())
            machines = opts.workers or 1
            gate = lanes_mod.Gate(self.lanes, machines)
            opts = cluster.ClusterOptions(workers=machines * per)
        with cluster.connect(opts) as client:
            cluster.Coordinator(self, client, gate, per,
                                local=opts.scheduler is None).run(todo, store, progress, task)
        if opts.scheduler is None:
            from testbed.host.cleanup import sweep

            sweep()  # what local workers killed during the campaign left behind

    def _run_block(self, block: plan_mod.Block, servers: Servers, store: Store, work: Path,
                   progress: Progress, task) -> None:
        attempts: dict[str, int] = {}
        left = block
        while left.trials:
            failed_again = []
            results = self._measure_block(left, servers, work, progress, task)
            for trial, outcome, record in results:
                if outcome is None:  # not reached: run again, no attempt used
                    failed_again.append(trial)
                    continue
                attempts[trial.id] = attempts.get(trial.id, 0) + 1
                row, files = self._row(trial, outcome, record, attempts[trial.id])
                if self.retry.again(row):
                    log.info("trial %s failed (%s); trying again", trial.id, row.reason)
                    commit.discard(files)
                    failed_again.append(trial)
                    continue
                self._store(store, row, files)
                self.stats[row.status] += 1
                self.retry.stored(row, self.out)
                progress.update(task, advance=1, counts=progress_mod.counts(self.stats))
                if self._lines is not None:
                    self.console.print(self._lines.line(row), markup=False, highlight=False,
                                       soft_wrap=True)
            left = plan_mod.Block(block.run, block.site, block.network, tuple(failed_again))

    def _measure_block(self, block: plan_mod.Block, servers: Servers, work: Path,
                 progress: Progress, task):
        def on_trial(t: plan_mod.Trial):
            progress.update(task, description=progress_mod.describe(t))

        results, _ = block_mod.measure(block, self.setup(), servers, work, self.out, on_trial)
        return results

    def setup(self) -> block_mod.Setup:
        """What a block needs, as loaded by this runner."""
        return block_mod.Setup(self.campaign, self.recordings, self.networks, self.settings,
                               self.chains)

    # --- one trial's row and files ----------------------------------------------------
    def _row(self, trial: plan_mod.Trial, o: Outcome, record: TrialRecord,
             attempt: int) -> tuple[rows.Row, dict]:
        return block_mod.build_row(trial, o, record, attempt, self.setup(), LOCAL_WORKER)

    def _store(self, store: Store, row: rows.Row, files: dict) -> None:
        commit.store_trial(self.out, store, row, files)


def _count_other_visits(db: Path, setting: str, visit: str) -> int:
    """Stored trials of `setting` whose visit is not `visit` (a store without the
    column holds first visits only)."""
    n = _count(db, "setting", setting)
    if n == 0:
        return 0
    return n - store_mod.count_where(db, "setting = ? AND COALESCE(visit, 'first') = ?",
                                     (setting, visit))


def _same_content(before: Listed, digest_key: str, entry: config_mod.Entry) -> bool:
    """An earlier session's record of a label (`before`) says the same content as the
    entry found now: the same file hash, or, for a recording, the same content digest
    (testbed.formats.recording.content_digest: another build of the same site by the
    same code) where the session recorded one. A record without a digest says nothing."""
    digest = getattr(before, digest_key)
    if digest is None or digest == entry.digest:
        return True
    content = getattr(before, "content_sha256", None)
    return bool(entry.content) and content is not None and content == entry.content


def _count(db: Path, column: str, value: str) -> int:
    """Stored trials with column = value (testbed.campaign.store.store.count_where: InputError
    if the store cannot be read)."""
    return store_mod.count_where(db, f"{column} = ?", (value,))


def default_out(campaign: Campaign) -> Path:
    return Path("results") / campaign.name


def owner_check() -> None:
    """The testbed user must exist (Chromium and Mahimahi run as it), and the caches a
    campaign trusts (calibrations, lanes) be folders only root can change: checked
    before anything is written."""
    import pwd

    from testbed.emulate import calibrate
    try:
        pwd.getpwnam(USER)
    except KeyError:
        raise TestbedError(f"user {USER} missing; run `make setup`") from None
    calibrate.cache_dir()
    lanes_mod.cache_dir()
