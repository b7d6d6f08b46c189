"""The coordinator's side of a campaign on a Dask cluster (`testbed run --scheduler
ADDRESS` or `--workers N`); testbed.campaign.cluster.worker is the workers' side.

    with connect(ClusterOptions(scheduler="tls://host:8786", tls=folder)) as client:
        Coordinator(runner, client).run(todo, store)

Every connection of a cluster is TLS with certificates of the cluster's own CA, on
both ends (testbed.campaign.cluster.credentials): a local cluster's are made for the
campaign and gone when it ends; a cluster of machines uses those of `testbed
cluster certs`. A process without them cannot connect, submit or run anything. A
local cluster listens on 127.0.0.1 only, and its HTTP servers (Dask's dashboard,
metrics and info pages) serve nothing.

Each block of the plan (one run, site and network: the trials that share one
Browsertime process) is one Dask task with resource `testbed=1`, submitted in
the plan's seeded order (a few blocks ahead of the workers; Dask priority: an
earlier block first, a retried one before any other), so the blocks are taken in the same shuffled order as on one
machine, and a worker's speed or drift applies to every setting of a block
alike. With adaptive runs a site x network's next block waits until its earlier
blocks are stored, then is left out if the group is precise enough
(testbed.campaign.plan.adaptive): the same decisions as on one machine. A worker sends back each trial's row and files; the coordinator alone
stores them (testbed.campaign.store.commit, as for a local trial) and writes the
manifest, where each worker's host, versions and network calibration are kept
(`workers`), and calibrations that differ between workers by more than the
network check's tolerance are named (`calibration_differs`).

A worker that dies mid-block: Dask runs the block again on another worker; the
coordinator stores a block's trials only from the run that finished, so none is
stored twice and none is marked failed for the death. The coordinator killed:
its tasks are released with its client; the same command resumes from the
store, as on one machine.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from results_contract.manifest import Worker
from testbed.campaign.cluster import credentials
from testbed.campaign.cluster import worker as worker_mod
from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.run import progress as progress_mod
from testbed.campaign.store import manifest as manifest_mod
from testbed.errors import InputError, TestbedError
from testbed.host import runstate, safefs
from testbed.validate.network import MIN_RTT_TOLERANCE_MS

log = logging.getLogger(__name__)

RESOURCE = "testbed"
"""The Dask resource a testbed worker has one of: one block at a time."""
WAIT_WORKERS_S = 600.0
"""Longest wait for the first worker to join a scheduler."""


@dataclass(frozen=True)
class ClusterOptions:
    scheduler: str | None = None
    """Address of a running `dask scheduler` (tls://host:8786)."""
    workers: int | None = None
    """Workers of a local cluster on this machine (1 or none: no cluster at all)."""
    tls: Path | None = None
    """The coordinator's credentials of the scheduler's cluster (a folder of `testbed
    cluster certs`; None: Dask's distributed.comm.tls configuration)."""

    @property
    def wanted(self) -> bool:
        return self.scheduler is not None or (self.workers or 1) > 1


def check(opts: ClusterOptions) -> None:
    if opts.scheduler is not None and opts.workers is not None:
        raise InputError("--scheduler, --workers: expected one of them, not both "
                         "(start workers on the scheduler's machines with `testbed worker`)")
    if opts.scheduler is not None and not opts.scheduler.strip():
        raise InputError("--scheduler: expected a scheduler address such as tls://host:8786")
    if opts.tls is not None and opts.scheduler is None:
        raise InputError("--tls: expected with --scheduler only (a local cluster makes its "
                         "own credentials)")
    if opts.scheduler is not None:
        credentials.check_address(opts.scheduler, "--scheduler")
        credentials.load("client", opts.tls)  # bad files: one line, before anything starts


QUIET: dict[str, list[str]] = {"distributed.scheduler.http.routes": [],
                               "distributed.worker.http.routes": []}
"""Dask's HTTP servers (dashboard, /info, /metrics) answer nothing."""


@contextmanager
def connect(opts: ClusterOptions) -> Iterator:
    """A Dask client: of the scheduler at opts.scheduler, or of a local cluster of
    opts.workers workers (one thread and resource testbed=1 each), closed on exit."""
    from distributed import Client

    if opts.scheduler is not None:
        security = credentials.load("client", opts.tls)
        try:
            client = Client(opts.scheduler, timeout="30s", security=security)
        except (OSError, TimeoutError) as e:
            raise TestbedError(f"--scheduler {opts.scheduler}: cannot connect ({e})") from None
        try:
            yield client
        finally:
            client.close()
        return
    with local_cluster(opts.workers or 1) as cluster, Client(cluster, security=cluster.security) \
            as client:
        yield client


@contextmanager
def local_cluster(workers: int, state: Path | None = None) -> Iterator:
    """A LocalCluster of `workers` processes on 127.0.0.1, TLS with credentials of its
    own (in `state`, default this run's state folder; removed on exit)."""
    import dask
    from distributed import LocalCluster

    state = runstate.current().dir if state is None else state
    work = scratch(state)
    # the scheduler's workspace too (its lock files), not /tmp/dask-scratch-space
    with dask.config.set({**QUIET, "temporary-directory": str(work)}), \
            credentials.local(state) as security:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               resources={RESOURCE: 1}, host="127.0.0.1", protocol="tls://",
                               security=security, dashboard_address=None,
                               worker_dashboard_address=None, scheduler_port=0,
                               local_directory=str(work),
                               silence_logs=logging.ERROR)
        try:
            yield cluster
        finally:
            cluster.close()


def scratch(state: Path) -> Path:
    """The workers' scratch folder (Dask's local_directory): in the run's root-only
    state, not Dask's default /tmp/dask-scratch-space, which any local user can make
    first (and fill with symbolic links) before root's workers write there."""
    return safefs.root_dir(Path(state) / "dask", exist_ok=True)


def calibration_differences(workers: dict[str, dict], own: dict[str, dict] | None = None,
                            tolerance_ms: float = MIN_RTT_TOLERANCE_MS) -> list[str]:
    """Networks whose calibrated minimum RTT differs between two workers (or a worker
    and the coordinator, `own`) by more than the tolerance, one line each."""
    seen: dict[str, list[tuple[str, float]]] = {}
    sources = [("coordinator", own or {})] + [(w, i.get("calibration", {}))
                                              for w, i in sorted(workers.items())]
    for who, cals in sources:
        for network, cal in sorted(cals.items()):
            if isinstance(cal, dict) and isinstance(cal.get("min_rtt_ms"), (int, float)):
                seen.setdefault(network, []).append((who, float(cal["min_rtt_ms"])))
    out = []
    for network, values in sorted(seen.items()):
        lo, hi = min(values, key=lambda v: v[1]), max(values, key=lambda v: v[1])
        if hi[1] - lo[1] > tolerance_ms:
            out.append(f"network {network}: calibrated minimum RTT {lo[1]:.2f} ms on {lo[0]}, "
                       f"{hi[1]:.2f} ms on {hi[0]} (tolerance ±{tolerance_ms:g} ms); compare "
                       "results per worker (`testbed report --by-worker`)")
    return out


class Coordinator:
    """Submits a runner's blocks to a cluster and stores what comes back."""

    def __init__(self, runner, client, gate=None, lanes_per_worker: int = 1,
                 local: bool = False):
        self.runner = runner
        self.client = client
        self.local = local
        """The workers are this machine's own (lanes, --workers): one that refuses to
        join will refuse again when its nanny restarts it, so the run stops at once."""
        self.gate = gate
        """testbed.campaign.plan.lanes.Gate: blocks start only as it allows (lanes); None:
        a few blocks ahead of the workers."""
        self.job = worker_mod.Job.of(runner.campaign, runner.entries, lanes_per_worker)
        self.attempts: dict[str, int] = {}
        self.order = 0
        self.in_flight: dict[tuple[str, str], int] = {}
        """(site, network) -> its blocks submitted and not yet stored."""
        self.group_of: dict[str, tuple[str, str]] = {}
        """A submitted block's future key -> its (site, network)."""

    def join_check(self) -> list[str]:
        """Register the join check with the scheduler (every worker, now and later,
        runs it at join); why workers refused, one line each."""
        plugin = worker_mod.JoinCheck(self.job.digests, self.job.sites)
        try:
            answers = self.client.register_plugin(plugin) or {}
        except worker_mod.Refused as e:  # a worker refused: it leaves, the others stay
            return [str(e)]
        return [f"{addr}: {answer.get('exception_text')}"
                for addr, answer in sorted(answers.items())
                if isinstance(answer, dict) and answer.get("status") == "error"]

    def _submit(self, block: plan_mod.Block, first: bool = False):
        self.order += 1
        group = (block.site, block.network)
        self.in_flight[group] = self.in_flight.get(group, 0) + 1
        # an earlier block first; a block run again (retry, not reached) before any other
        priority = 1 if first else -self.order
        attempts = {t.id: self.attempts.get(t.id, 0) for t in block.trials}
        future = self.client.submit(worker_mod.execute, self.job, block, attempts,
                                    resources={RESOURCE: 1}, priority=priority, pure=False)
        self.group_of[future.key] = group
        return future

    def run(self, todo: list[plan_mod.Block], store, progress, task) -> None:
        from distributed import as_completed

        r = self.runner
        refused = self.join_check()
        for line in refused:
            log.warning("worker refused: %s", line)
            r.console.print(f"worker refused: {line}", markup=False, highlight=False)
        if refused and self.local:
            raise TestbedError(f"a local worker refused to join ({refused[0]}): a file of "
                               "the checkout changed after the campaign started; run again")
        self.client.wait_for_workers(1, timeout=WAIT_WORKERS_S)
        # a few blocks ahead of the workers, no more: the blocks start in the plan's order
        # (Dask does not queue tasks with resources on the scheduler) and a stopped
        # coordinator leaves little submitted work behind
        queue = deque(todo)
        pending = as_completed()
        futures = []
        running: dict[str, str] = {}  # a gated block's future key -> its network

        def startable() -> plan_mod.Block | None:
            """The queue's next block, None while it must wait; adaptive runs: a group
            that met its precision is left out, and a group's next block waits for its
            earlier ones to be stored (the same decisions as on one machine)."""
            while queue:
                if r.decider is not None:
                    group = (queue[0].site, queue[0].network)
                    if self.in_flight.get(group):
                        return None
                    if r._done(store, queue[0]):
                        queue.popleft()
                        continue
                return queue[0]
            return None

        def top_up() -> None:
            if self.gate is not None:  # lanes: a block starts when a lane may take it
                while (block := startable()) is not None and \
                        self.gate.allows(block.network, list(running.values())):
                    queue.popleft()
                    futures.append(self._submit(block))
                    running[futures[-1].key] = block.network
                    pending.add(futures[-1])
                return
            ahead = len(self.client.scheduler_info(n_workers=-1)["workers"]) + 1
            while pending.count() < ahead and startable() is not None:
                futures.append(self._submit(queue.popleft()))
                pending.add(futures[-1])

        top_up()
        try:
            for fut in pending:
                running.pop(fut.key, None)
                try:
                    packed, info = fut.result()
                except Exception as e:
                    if type(e).__name__ == "KilledWorker":
                        raise TestbedError(f"a block killed {e.args[-1] if e.args else ''} "
                                           "workers in turn; stopping (see the workers' logs)"
                                           ) from None
                    raise
                self._worker(info)
                again = self._store(packed, store, progress, task)
                self.in_flight[self.group_of.pop(fut.key)] -= 1
                if again:
                    b = again[0]
                    block = plan_mod.Block(b.run, b.site, b.network, tuple(again))
                    if self.gate is not None:
                        queue.appendleft(block)  # next, when a lane is free
                    else:
                        futures.append(self._submit(block, first=True))
                        pending.add(futures[-1])
                top_up()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def _worker(self, info: dict) -> None:
        r = self.runner
        if info.get("worker") not in r.manifest.workers:
            workers = {**{w: i.model_dump(mode="json") for w, i in r.manifest.workers.items()},
                       info["worker"]: info}
            differs = calibration_differences(workers, r.calibrations)
            r.manifest = r.manifest.with_worker(Worker.model_validate(info), differs)
            for line in differs:
                log.warning("%s", line)
            manifest_mod.save(r.out / "manifest.json", r.manifest)

    def _store(self, packed, store, progress, task) -> list[plan_mod.Trial]:
        """Store the block's finished trials; the trials that run again."""
        r = self.runner
        if packed.log_name is not None and packed.log is not None:
            path = r.out / "logs" / packed.log_name
            try:
                path.write_bytes(packed.log)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        again = []
        for p in packed.trials:
            if p.row is None:  # not reached: run again, no attempt used
                again.append(p.trial)
                continue
            if r.retry.again(p.row):
                log.info("trial %s failed (%s); trying again", p.trial.id, p.row.reason)
                self.attempts[p.trial.id] = p.row.attempt
                again.append(p.trial)
                continue
            r._store(store, p.row, p.files)
            r.stats[p.row.status] += 1
            r.retry.stored(p.row, r.out)
            progress.update(task, advance=1, counts=progress_mod.counts(r.stats))
            if r._lines is not None:
                r.console.print(r._lines.line(p.row), markup=False, highlight=False,
                                soft_wrap=True)
        return again
