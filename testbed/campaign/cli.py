"""`testbed run CAMPAIGN`, `testbed worker SCHEDULER`, `testbed cluster certs` and
`testbed export SOURCE`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from testbed.commands.groups import Group
from testbed.errors import InputError
from testbed.host import safefs


@click.command()
@click.argument("campaign_file", metavar="CAMPAIGN")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Results folder (default: results/<campaign name>/); one runner at a "
                   "time (its run.lock).")
@click.option("--runs", metavar="N",
              help="Run this many runs instead of the campaign's (for quick checks; "
                   "at most 10000).")
@click.option("--retry-failed", is_flag=True,
              help="Run the trials stored as failed again (their rows are replaced).")
@click.option("--rerun-runs", "rerun_runs", metavar="RUNS",
              help="Measure the stored trials of these runs again (e.g. 0-3 or 0,2,5; "
                   "of the sites, networks and settings --site, --network and --setting "
                   "leave), after a fix to what measured them: their rows are replaced and "
                   "the manifest's session says so.")
@click.option("--resume-from", "resume_from", metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="Begin a new results folder (--out, without a store yet) with the trials "
                   "kept in DIR (a checkpoint such as reference/, made by `testbed "
                   "checkpoint`), then run the rest. Their files stay behind: each seeded "
                   "trial's folder holds only SEEDED.")
@click.option("--mixed-versions", "mixed_versions", is_flag=True,
              help="Store new trials beside stored ones that other versions of the kernel, "
                   "browser, Browsertime, servers or Mahimahi measured (refused without "
                   "it: the manifest's sessions say which); the session records it.")
@click.option("--site", "sites", multiple=True, metavar="NAME",
              help="Run only this site of the campaign (a recording's name; repeatable).")
@click.option("--network", "networks", multiple=True, metavar="NAME",
              help="Run only this network profile of the campaign (repeatable).")
@click.option("--setting", "settings", multiple=True, metavar="NAME",
              help="Run only this setting of the campaign (repeatable).")
@click.option("--dry-run", is_flag=True,
              help="Print the plan (matrix, trial count, how many are stored, order) and the "
                   "estimated duration; start nothing (no root needed).")
@click.option("--json", "as_json", is_flag=True,
              help="With --dry-run: print the plan as JSON (every trial in its order).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run the blocks on the workers of this Dask scheduler (tls://host:8786 "
                   "only; workers join with `testbed worker ADDRESS`); the results are "
                   "stored here.")
@click.option("--tls", "tls", metavar="DIR", type=click.Path(path_type=Path),
              help="With --scheduler: this machine's credentials of the cluster (a folder "
                   "made by `testbed cluster certs`; default: Dask's distributed.comm.tls "
                   "configuration).")
@click.option("--workers", metavar="N",
              help="Run the blocks on a local Dask cluster of N workers on this machine "
                   "(default 1: in this process, no cluster); TLS on 127.0.0.1 with "
                   "credentials made for this campaign.")
@click.option("--lanes", metavar="N|auto",
              help="Measure N blocks at once on this machine (each worker), each in a "
                   "replay topology of its own; auto: per network, what bench/lanes found "
                   "equivalent to one lane here (default: the campaign's key lanes, 1).")
def run(campaign_file: str, out: Path | None, runs: str | None, retry_failed: bool,
        sites: tuple[str, ...], networks: tuple[str, ...], settings: tuple[str, ...],
        dry_run: bool, as_json: bool, scheduler: str | None, workers: str | None,
        tls: Path | None = None, resume_from: Path | None = None,
        lanes: str | None = None, rerun_runs: str | None = None,
        mixed_versions: bool = False):
    """Run CAMPAIGN (a file in profiles/campaigns/ or a path): every trial not yet in
    the results is measured and stored as it ends. Stop with Ctrl-C; run the same
    command again to resume. --site, --network and --setting narrow the campaign to
    the trials they name."""
    import os

    from testbed.campaign.plan import config

    if os.geteuid() != 0 and not dry_run:
        raise InputError("testbed run: needs root (namespaces, Mahimahi); run it as root")
    if as_json and not dry_run:
        raise InputError("--json: only with --dry-run (a campaign's results are in its store)")
    campaign = config.narrowed(config.load(campaign_file), sites, networks, settings)
    if lanes is not None:
        campaign = campaign.model_copy(update={"lanes": _lanes_option(lanes)})
    n = None
    if runs is not None:
        try:
            n = int(runs)
        except ValueError:
            raise InputError(f"--runs: expected a whole number from 1 to {config.MAX_RUNS}, "
                             f"got {runs!r}") from None
        config.check_size(campaign, n)
    rerun = (config.parse_runs(rerun_runs, n or campaign.max_runs) if rerun_runs is not None
             else frozenset())
    if rerun and dry_run:
        raise InputError("--rerun-runs: not with --dry-run (it replaces stored trials)")
    cluster = _cluster_options(scheduler, workers, tls)
    from testbed.campaign import runner

    if dry_run:
        config.check_size(campaign, n or campaign.max_runs)
        target = out or runner.default_out(campaign)
        if resume_from is not None and not (target / "trials.sqlite").exists():
            target = resume_from  # what would be stored once seeded
        _dry_run(campaign, n, target, as_json)
        return

    runner.owner_check()
    out = out or runner.default_out(campaign)
    checked = safefs.check_out_dir(out, "--out")  # root writes the results there
    stats = runner.Runner(campaign, checked, cluster=cluster).run(
        runs=n, retry_failed=retry_failed, resume_from=resume_from, rerun_runs=rerun,
        mixed_versions=mixed_versions)
    click.echo(f"testbed: {stats['ok']} ok, {stats['failed']} failed this session; "
               f"results in {out}", err=True)


def _dry_run(campaign, runs: int | None, out: Path, as_json: bool) -> None:
    """Print the plan (as text or JSON) with how many of its trials `out` holds."""
    from testbed import jsonout
    from testbed.campaign.plan import estimate
    from testbed.campaign.store.store import read_rows

    db = out / "trials.sqlite"
    rows = read_rows(db) if db.is_file() else None  # InputError if it is not a store
    stored = None if rows is None else {r["trial_id"] for r in rows}
    differ = _version_differences(out)
    if as_json:
        jsonout.echo({**estimate.plan(campaign, runs, stored, rows),
                      "version_differences": differ})
        return
    for line in estimate.plan_text(campaign, runs, stored=stored, rows=rows):
        click.echo(line)
    for line in differ:
        click.echo(f"a resume here is refused without --rerun-runs or --mixed-versions: {line}")


def _version_differences(out: Path) -> list[str]:
    """Why a resume of the results folder `out` would be refused for versions
    (testbed.campaign.store.versions), one line each; none without a manifest."""
    import os

    from testbed.campaign.store import manifest, versions

    if not os.path.lexists(out / "manifest.json"):
        return []
    try:
        return versions.differences(out, manifest.versions())
    except InputError as e:
        return [str(e)]


MAX_WORKERS = 64


def _lanes_option(text: str) -> int | str:
    from testbed.campaign.plan.lanes import AUTO, MAX_LANES

    if text == AUTO:
        return AUTO
    if text.isdigit() and 1 <= int(text) <= MAX_LANES:
        return int(text)
    raise InputError(f"--lanes: expected a whole number from 1 to {MAX_LANES} or {AUTO}, "
                     f"got {text!r}")


def _cluster_options(scheduler: str | None, workers: str | None, tls: Path | None = None):
    """The cluster options, checked (None: none given, the campaign runs in this process)."""
    if scheduler is None and workers is None:
        if tls is not None:
            raise InputError("--tls: expected with --scheduler only")
        return None
    n = None
    if workers is not None:
        try:
            n = int(workers)
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_WORKERS:
            raise InputError(f"--workers: expected a whole number from 1 to {MAX_WORKERS}, "
                             f"got {workers!r}")
    if scheduler is None and n == 1 and tls is None:
        return None  # one local worker: this process, as without the option (no Dask)
    from testbed.campaign.cluster.cluster import ClusterOptions, check

    opts = ClusterOptions(scheduler=scheduler, workers=n, tls=tls)
    check(opts)
    return opts if opts.wanted else None


@click.command()
@click.argument("scheduler", metavar="SCHEDULER_ADDRESS")
@click.option("--name", help="This worker's id in the rows (default: w<pid>); unique in the "
                             "cluster.")
@click.option("--network", "networks", multiple=True, metavar="NAME",
              help="Calibrate only these network profiles at start (repeatable; default: "
                   "every profile in profiles/networks/).")
@click.option("--tls", "tls", metavar="DIR", type=click.Path(path_type=Path),
              help="This worker's credentials of the cluster (a folder made by `testbed "
                   "cluster certs`; default: Dask's distributed.comm.tls configuration).")
def worker(scheduler: str, name: str | None, networks: tuple[str, ...],
           tls: Path | None = None):
    """Join the Dask scheduler at SCHEDULER_ADDRESS (tls://HOST:PORT) as a testbed worker
    (one block at a time), after the doctor's required checks and the network
    calibration pass. Only holders of a certificate of the cluster's CA may talk to it.
    It leaves, naming the file, when its code, profiles or recordings differ from those
    of the campaign's coordinator. Run as root."""
    import asyncio
    import os

    from testbed.campaign.cluster import cluster as cluster_mod
    from testbed.campaign.cluster import credentials
    from testbed.campaign.cluster import worker as worker_mod
    from testbed.commands import doctor
    from testbed.emulate import calibrate
    from testbed.errors import TestbedError
    from testbed.formats import profiles
    from testbed.host import runstate
    from testbed.host.paths import NETWORKS_DIR
    from testbed.validate import verdict

    if os.geteuid() != 0:
        raise InputError("testbed worker: needs root (namespaces, Mahimahi); run it as root")
    credentials.check_address(scheduler, "SCHEDULER_ADDRESS")
    security = credentials.load("worker", tls)
    bad = verdict.failed(doctor.run_checks())
    if bad:
        r = bad[0]
        raise TestbedError(f"worker refuses to join: doctor: {r.name}: {r.observed}"
                           + (f" ({r.hint})" if r.hint else ""))
    names = networks or tuple(sorted(p.stem for p in NETWORKS_DIR.glob("*.toml")))
    for net in names:
        profile = profiles.load_network(net)
        try:
            cal = calibrate.for_profile(profile)
        except TestbedError as e:
            raise TestbedError(f"worker refuses to join: calibration of network {net}: "
                               f"{e}") from None
        click.echo(f"testbed worker: network {net}: delay {cal.delay_ms} ms each way, "
                   f"minimum RTT {cal.min_rtt_ms:.2f} ms", err=True)
    name = name or f"w{os.getpid()}"

    async def serve():
        from distributed import Worker
        from distributed.comm import get_address_host
        from distributed.utils import get_ip

        # listen on the address that reaches the scheduler only (Dask's default: all)
        host = get_ip(get_address_host(scheduler))
        async with Worker(scheduler, nthreads=1, resources={"testbed": 1}, name=name,
                          security=security, dashboard=False, host=host,
                          local_directory=str(cluster_mod.scratch(runstate.current().dir))
                          ) as w:
            click.echo(f"testbed worker: {name} joined {scheduler} as {w.address}", err=True)
            await w.finished()

    import dask

    from testbed.campaign.cluster.cluster import QUIET

    try:
        with dask.config.set(QUIET):
            asyncio.run(serve())
    except OSError as e:
        raise TestbedError(f"testbed worker: cannot reach scheduler {scheduler} ({e})") from None
    if worker_mod.REFUSED:
        raise TestbedError(worker_mod.REFUSED[0])


NAME_RE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}"
FIXED = ("scheduler", "coordinator")


@click.group(cls=Group)
def cluster():
    """A Dask cluster of several machines: the credentials its members talk TLS with
    (docs/clusters.md)."""


@cluster.command()
@click.option("--out", "out", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="New folder to make (0700): one folder per machine, each holding the "
                   "cluster's CA certificate, its own certificate and key (0600).")
@click.option("--workers", metavar="N", help="Folders worker-1 … worker-N (default 1).")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="A worker's folder named NAME instead (repeatable).")
def certs(out: Path, workers: str | None, names: tuple[str, ...]):
    """Make the credentials of a new cluster: a CA of its own (its key is not kept) and a
    certificate for the scheduler, the coordinator and each worker. Copy each machine
    its folder; only their holders can talk to the cluster."""
    import re

    from testbed.campaign.cluster import credentials

    if workers is not None and names:
        raise InputError("--workers, --name: expected one of them, not both")
    if workers is not None and not (workers.isdigit() and 1 <= int(workers) <= MAX_WORKERS):
        raise InputError(f"--workers: expected a whole number from 1 to {MAX_WORKERS}, "
                         f"got {workers!r}")
    members = list(names) or [f"worker-{i}" for i in range(1, int(workers or 1) + 1)]
    for n in members:
        if not re.fullmatch(NAME_RE, n) or n in FIXED:
            raise InputError(f"--name {n!r}: expected letters, digits, '.', '_', '-' (at most "
                             f"63), not {' or '.join(FIXED)}")
    if len(set(members)) != len(members):
        raise InputError("--name: expected each name once")
    folder = credentials.make(out, [*FIXED, *members])
    click.echo(f"testbed: credentials of a new cluster in {folder}: "
               f"{', '.join([*FIXED, *members])}; copy each machine its folder "
               "(only root may read it)", err=True)


@click.command()
@click.argument("results", metavar="RESULTS", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="Folder to keep them in (e.g. reference/); its trials.sqlite and "
                   "manifest.json are replaced.")
def checkpoint(results: Path, out: Path):
    """Keep the small, re-analysable data of a campaign: copy the store (tables trials
    and connections) and manifest.json of the results folder RESULTS into --out, safely
    while a runner is writing into RESULTS. The store is made anew from its rows as of
    one moment (the runner's lock is not taken), and one holding a trigger, a view or
    another table is refused. Videos, HARs and Browsertime JSON stay behind. `testbed report DIR`
    analyses the copy; `testbed run CAMPAIGN --resume-from DIR` continues the campaign
    from it, also with another build of its recordings (the same content digest). A
    session recorded without content digests gets those of the recordings found now
    that are exactly the files it measured."""
    from testbed.campaign.store import reference

    checked = safefs.check_out_dir(out, "--out")  # root may write it: checked first
    if results.resolve() == checked.resolve():
        raise InputError(f"{out}: --out: expected another folder than RESULTS")
    c = reference.checkpoint(results, checked)
    click.echo(f"testbed: {c['trials']} trials ({c['ok']} ok, {c['failed']} failed) and "
               f"{c['connections']} connections kept in {out}", err=True)


@click.command("upgrade-manifest")
@click.argument("folders", metavar="RESULTS...", nargs=-1, required=True,
                type=click.Path(file_okay=False, path_type=Path))
def upgrade_manifest(folders: tuple[Path, ...]):
    """Rewrite the manifest.json of each results folder (or checkpoint, e.g. reference/)
    in the current form (results_contract.manifest): an older manifest, which every
    command reads upgraded in memory, is written as it is read. Its sessions are kept
    as they are; the top level is derived from them again (each network's, setting's
    and recording's entry from the latest session that ran it)."""
    from testbed.campaign.store import manifest

    for folder in folders:
        was, now = manifest.upgrade(folder)
        click.echo(f"testbed: {folder / 'manifest.json'}: version {was} -> {now}", err=True)


@click.command()
@click.argument("source", metavar="SOURCE", type=click.Path(path_type=Path))
@click.option("--csv", "csv_out", metavar="FILE", help="Write the table as CSV ('-': stdout).")
@click.option("--parquet", "parquet_out", metavar="FILE",
              help="Write the table as Parquet ('-': stdout).")
@click.option("--table", type=click.Choice(["trials", "connections"]), default="trials",
              show_default=True,
              help="trials: one row per trial; connections: one row per transport "
                   "connection per trial (telemetry).")
def export(source: Path, csv_out: str | None, parquet_out: str | None,
           table: str = "trials"):
    """Export a campaign's trials (or their connections) as CSV or Parquet, the store's
    columns. What it wrote (the file, its row count) goes to stderr.

    SOURCE is what `testbed report` takes: a campaign results folder (with
    trials.sqlite), its store (.sqlite) or an export (.csv, .csv.gz, .parquet).
    """
    from results_contract import schema
    from results_contract.load import ResultsError, load, load_connections

    if (csv_out is None) == (parquet_out is None):
        raise InputError("give exactly one of --csv FILE or --parquet FILE")
    option, target = ("--csv", csv_out) if csv_out is not None else ("--parquet", parquet_out)
    assert target is not None  # exactly one of the two is given
    if target != "-":  # root may write it: checked before anything is read
        safefs.check_out_file(Path(target), option)
    try:  # the results loader: read-only by fd, never through a symlink, every value checked
        df = load(source) if table == "trials" else load_connections(source)
    except ResultsError as e:
        raise InputError(str(e)) from None
    columns = schema.TRIALS if table == "trials" else schema.CONNECTIONS
    for c in columns:  # whole numbers, also beside an empty cell
        if c.kind == schema.INTEGER_KIND:
            df[c.name] = df[c.name].astype("Int64")
    if csv_out is not None:
        from results_contract.cells import spreadsheet_safe

        text = spreadsheet_safe(df).to_csv(index=False)  # a spreadsheet runs no cell
        if csv_out == "-":
            sys.stdout.write(text)
        else:
            safefs.write_out_file(Path(csv_out), text, "--csv")
    else:
        if parquet_out == "-":
            df.to_parquet(sys.stdout.buffer, index=False)
        else:
            assert parquet_out is not None  # exactly one of the two is given
            safefs.write_out_file(Path(parquet_out), df.to_parquet(index=False),
                                  "--parquet")
    kind = "CSV" if csv_out is not None else "Parquet"
    click.echo(f"testbed: wrote {'to stdout' if target == '-' else target}: {len(df)} rows "
               f"of table {table} ({kind})", err=True)
