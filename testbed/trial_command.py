"""`testbed trial RESULTS TRIAL_ID`: one trial, printed and as one self-contained page."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import click

from testbed import paths, safefs
from testbed.console import clean_lines
from testbed.enter import SAFE_PATH
from testbed.errors import InputError

DEFAULT_REPORTS = Path("reports")


@click.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.argument("trial_id")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="The HTML file to write (default: reports/<name of RESULTS>/trials/"
                   "<TRIAL_ID>.html).")
@click.option("--no-filmstrip", is_flag=True,
              help="Leave out the filmstrip (frames of the kept video, made with ffmpeg).")
def trial(results: Path, trial_id: str, out: Path | None, no_filmstrip: bool):
    """Look at one trial: its metrics, status, protocols and connections, and an HTML
    page with a waterfall of its requests and a filmstrip of its video.

    RESULTS is a campaign results folder; TRIAL_ID a trial's id as the store has it
    (site+network+protocol+run; `testbed results RESULTS` lists them). The results
    are only read: the page goes to --out. It is one file with everything inline
    (no network, no script): a waterfall row per HAR entry with its host,
    protocol, connection and timing phases, the trial's connections (when the
    store has per-connection figures) and, when the video was kept, a filmstrip.
    """
    from analysis import ResultsError
    from analysis.trial_page import page_name, render, trial_view
    from analysis.trialfiles import folder_name_problem

    problem = folder_name_problem(trial_id)
    if problem:
        raise InputError(f"TRIAL_ID {trial_id!r}: {problem}")
    if out is not None:  # root may write the page: checked before anything is read
        safefs.check_out_dir(out.parent, "--out")
    if not results.is_dir():
        raise InputError(f"{results}: expected a campaign results folder (with trials.sqlite)")
    try:
        view = trial_view(results, trial_id, filmstrip=not no_filmstrip, runner=_unprivileged)
    except ResultsError as e:
        raise InputError(str(e)) from e
    if out is None:
        out = DEFAULT_REPORTS / results.resolve().name / "trials" / page_name(trial_id)
    folder = safefs.check_out_dir(out.parent, "--out")
    folder.mkdir(parents=True, exist_ok=True)
    written = safefs.write_out_file(folder / out.name, render(view), "--out")
    click.echo(clean_lines(view.text()))  # the store's strings: no control sequence
    click.echo(clean_lines(f"page: {written}"))


def _unprivileged(argv: list[str], pass_fds: tuple[int, ...], timeout: float
                  ) -> subprocess.CompletedProcess:
    """Run ffmpeg on someone else's video: as the testbed user when root, with a bare
    environment (analysis.trial_page.Runner)."""
    drop = {}
    if os.geteuid() == 0:
        pw = paths.user()
        drop = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": [], "cwd": "/",
                "env": {"PATH": SAFE_PATH, "HOME": pw.pw_dir, "LANG": "C.UTF-8"}}
    return subprocess.run(argv, capture_output=True, timeout=timeout, pass_fds=pass_fds,
                          check=False, **drop)
