"""`testbed trials SOURCE` (every trial id with its status) and `testbed trial RESULTS
TRIAL_ID` (one trial, printed and as one self-contained page)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import click

from results_contract.schema import STATUSES
from testbed import jsonout
from testbed.console import clean_lines
from testbed.errors import InputError
from testbed.host import paths, safefs
from testbed.host.enter import SAFE_PATH

DEFAULT_REPORTS = Path("reports")


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--site", "sites", multiple=True, metavar="NAME",
              help="Only this site's trials (repeatable).")
@click.option("--network", "networks", multiple=True, metavar="NAME",
              help="Only this network's trials (repeatable).")
@click.option("--setting", "settings", multiple=True, metavar="NAME",
              help="Only this setting's trials (repeatable).")
@click.option("--protocol", "old_settings", multiple=True, metavar="NAME", hidden=True,
              help="The old name of --setting (docs/glossary.md, Retired).")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES),
              help="Only the trials of this status (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the trials as JSON (a list of trial_id, site, network, setting, "
                   "run, status, reason).")
def trials(source: Path, sites: tuple[str, ...], networks: tuple[str, ...],
           settings: tuple[str, ...], old_settings: tuple[str, ...],
           statuses: tuple[str, ...], as_json: bool):
    """List the trials of a campaign: each one's id (what `testbed trial` takes) and
    status (ok, or failed with the reason), by site, network, setting and run.

    SOURCE is what `testbed report` takes: a campaign results folder (with
    trials.sqlite), its store (.sqlite) or an export (.csv, .csv.gz, .parquet).
    --site, --network and --setting narrow the list as they narrow `testbed run`;
    --status keeps the ok or the failed trials. A count goes to stderr.
    """
    from results_contract.load import ResultsError, load
    try:
        df = load(source)
    except ResultsError as e:
        raise InputError(str(e)) from e
    df = narrowed(df, {"site": sites, "network": networks,
                       "setting": settings + old_settings, "status": statuses}, source)
    df = df.sort_values(["site", "network", "setting", "run"], kind="stable")
    rows = [{"trial_id": r.trial_id, "site": r.site, "network": r.network,
             "setting": r.setting, "run": int(r.run), "status": r.status, "reason": r.reason}
            for r in df[list(LISTED)].itertuples(index=False)]
    if as_json:
        jsonout.echo(rows)
        return
    for r in rows:
        reason = jsonout.plain(r["reason"])
        click.echo(clean_lines(f"{r['trial_id']}\t{r['status']}"
                               + (f"\t{reason}" if reason else "")))
    ok = sum(r["status"] == "ok" for r in rows)
    click.echo(f"{len(rows)} trials: {ok} ok, {len(rows) - ok} failed", err=True)


LISTED = ("trial_id", "site", "network", "setting", "run", "status", "reason")
"""The columns `testbed trials --json` prints per trial."""

OPTIONS = {"site": "--site", "network": "--network", "setting": "--setting",
           "status": "--status"}


def narrowed(df, wanted: dict[str, tuple[str, ...]], source: Path):
    """The rows whose column holds one of the values named for it (none named: any); a
    site, network or setting the source lacks is an InputError naming those it has."""
    for column, values in wanted.items():
        if not values:
            continue
        have = sorted(set(df[column].dropna().astype(str)))
        unknown = [v for v in values if v not in have and column != "status"]
        if unknown:
            shown = clean_lines(", ".join(have))
            raise InputError(f"{OPTIONS[column]} {clean_lines(unknown[0])}: expected one of "
                             f"the {column}s of {source} ({shown})")
        df = df[df[column].astype(str).isin(values)]
    return df


@click.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.argument("trial_id")
@click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              default=None, metavar="FILE",
              help="The HTML file to write (default: reports/<name of RESULTS>/trials/"
                   "<TRIAL_ID>.html).")
@click.option("--no-filmstrip", is_flag=True,
              help="Leave out the filmstrip (frames of the kept video, made with ffmpeg).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the trial as JSON (its row, waterfall, connections and notes) "
                   "instead of text; the page is written all the same.")
def trial(results: Path, trial_id: str, output: Path | None, no_filmstrip: bool,
          as_json: bool):
    """Look at one trial: its metrics, status, protocols and connections, and an HTML
    page with a waterfall of its requests and a filmstrip of its video.

    RESULTS is a campaign results folder; TRIAL_ID a trial's id as the store has it
    (site+network+setting+run; `testbed trials RESULTS` lists them with their
    status). The results are only read: the page goes to --output. It is one file
    with everything inline (no network, no script): a waterfall row per HAR entry
    with its host, protocol, connection and timing phases, the trial's connections
    (when the store has per-connection figures) and, when the video was kept, a
    filmstrip.
    """
    from results_contract.load import ResultsError
    from results_contract.trialfiles import folder_name_problem

    problem = folder_name_problem(trial_id)
    if problem:
        raise InputError(f"TRIAL_ID {trial_id!r}: {problem}")
    if output is not None:  # root may write the page: checked before anything is read
        safefs.check_out_dir(output.parent, "--output")
    if not results.is_dir():
        raise InputError(f"{results}: expected a campaign results folder (with trials.sqlite)")
    # the analysis package (seconds to import) once the arguments are known to be good
    from analysis.report.trial_page import page_name, render, trial_view

    try:
        view = trial_view(results, trial_id, filmstrip=not no_filmstrip, runner=_unprivileged)
    except ResultsError as e:
        raise InputError(str(e)) from e
    if output is None:
        output = DEFAULT_REPORTS / results.resolve().name / "trials" / page_name(trial_id)
    folder = safefs.check_out_dir(output.parent, "--output")
    folder.mkdir(parents=True, exist_ok=True)
    written = safefs.write_out_file(folder / output.name, render(view), "--output")
    if as_json:
        jsonout.echo({"trial_id": view.trial_id, "row": view.row, "waterfall": view.entries,
                      "connections": view.connections, "notes": view.notes,
                      "page": written})
        return
    click.echo(clean_lines(view.text()))  # the store's strings: no control sequence
    click.echo(clean_lines(f"page: {written}"))


def _unprivileged(argv: list[str], pass_fds: tuple[int, ...], timeout: float
                  ) -> subprocess.CompletedProcess[bytes]:
    """Run ffmpeg on someone else's video: as the testbed user when root, with a bare
    environment (analysis.report.trial_page.Runner)."""
    drop: dict[str, Any] = {}
    if os.geteuid() == 0:
        pw = paths.user()
        drop = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": [], "cwd": "/",
                "env": {"PATH": SAFE_PATH, "HOME": pw.pw_dir, "LANG": "C.UTF-8"}}
    return subprocess.run(argv, capture_output=True, timeout=timeout, pass_fds=pass_fds,
                          check=False, **drop)
