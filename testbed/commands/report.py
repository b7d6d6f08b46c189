"""`testbed report DIR`: the analysis report of a campaign (plots, tables, one HTML page)."""

from __future__ import annotations

from pathlib import Path

import click

from results_contract.manifest import Manifest
from results_contract.schema import CLIENTS
from testbed import jsonout
from testbed.console import echo
from testbed.errors import InputError
from testbed.host import safefs

DEFAULT_REPORTS = Path("reports")


def _pair(value: str) -> tuple[str, str]:
    a, sep, b = value.partition(":")
    if not sep or not a or not b:
        raise click.BadParameter(f"{value!r}: expected A:B, e.g. quic:tcp-plus")
    return a, b


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR",
              help="Report folder (default: reports/<name of SOURCE>).")
@click.option("--baseline", default=None,
              help="Setting the relative differences are taken against (default: tcp when "
                   "the campaign has it, otherwise its first setting).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="Significance level of the per-site test.")
@click.option("--test", "test", type=click.Choice(["anova", "welch", "mannwhitney", "kruskal"]),
              default="anova", show_default=True,
              help="Per-site test deciding wins and losses (anova: the paper's).")
@click.option("--correction", type=click.Choice(["none", "bh"]), default="none",
              show_default=True,
              help="Correction across the per-site tests (bh: Benjamini-Hochberg).")
@click.option("--mde", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True,
              help="Relative difference whose detection power the report gives.")
@click.option("--pair", "pairs", multiple=True, metavar="A:B",
              help="Settings compared by ANOVA (repeatable; default: each vs the baseline, "
                   "quic:tcp-plus, quic-bbr:tcp-plus-bbr).")
@click.option("--plot-lvc", is_flag=True, help="Also plot LVC (computed either way).")
@click.option("--by-worker", is_flag=True,
              help="Also show each worker's results and whether the workers agree "
                   "(campaigns run on several workers).")
@click.option("--client", "only_client", type=click.Choice(CLIENTS), default=None,
              help="Analyse only this browser's trials (default: each client present, in "
                   "a report of its own under --out/<client>/ when there are two).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary (counts, baseline, warnings, notes, the workers' "
                   "agreement, the page written) as JSON instead of text.")
def report(source: Path, out: Path | None, baseline: str | None, alpha: float, test: str,
           correction: str, mde: float, pairs: tuple[str, ...], plot_lvc: bool,
           by_worker: bool, only_client: str | None = None, as_json: bool = False):
    """Analyse a campaign and write a report folder.

    SOURCE is a campaign results folder (with trials.sqlite) or an export
    (.csv, .csv.gz, .parquet). Only trials with status ok enter the
    statistics; the report's health section accounts for the others. The
    folder holds index.html (open it from the file system), plots/ (PNG and
    SVG) and tables/ (CSV).
    """
    # The analysis (pandas, SciPy, matplotlib: seconds to import) only once the input
    # is known to be good: bad input is refused at once.
    from results_contract import profiles_meta
    from results_contract.load import ResultsError, load
    from results_contract.schema import PLOTTED_METRICS

    if out is not None:  # root may write the report: checked before anything is read
        out = safefs.check_out_dir(out, "--out")
    try:
        trials = load(source)
    except ResultsError as e:
        raise InputError(str(e)) from e
    if trials.empty:
        raise InputError(f"{source}: no trials yet; run the campaign first (testbed run ...)")
    settings = set(trials["setting"])
    wanted = [_pair(p) for p in pairs]
    unknown = sorted(({s for p in wanted for s in p} | ({baseline} if baseline else set()))
                     - settings)
    if unknown:
        raise InputError(f"--baseline/--pair: no setting {', '.join(unknown)} in {source}; "
                         f"settings present: {', '.join(sorted(settings))}")
    # A store's own files (trials.sqlite, trials.csv) are named after their folder.
    in_store = source.is_dir() or source.name.startswith("trials.")
    folder = source if source.is_dir() else source.parent
    name = folder.resolve().name if in_store else source.name.split(".")[0]
    out = safefs.check_out_dir(out or DEFAULT_REPORTS / name, "--out")
    manifest = _manifest(folder) if in_store else None
    try:  # the labels, order and pairs the analysis will use, checked before it runs
        profiles_meta.from_manifest(manifest, str(folder / "manifest.json"))
    except profiles_meta.ProfilesError as e:
        raise InputError(str(e)) from None
    from analysis import Config, analyse, write_report
    from analysis.statistics.bbr import largest_objects
    from analysis.statistics.clients import of_client
    from analysis.statistics.clients import present as clients_present
    from analysis.statistics.connections import connections_of

    config = Config(baseline=baseline, alpha=alpha, test=test, correction=correction, mde=mde,
                    pairs=tuple(wanted) or None,
                    plot_metrics=PLOTTED_METRICS + (("lvc",) if plot_lvc else ()),
                    by_worker=by_worker)
    try:
        connections = connections_of(source)
        largest = largest_objects(folder, trials) if in_store else None
    except ResultsError as e:
        raise InputError(str(e)) from e
    present = clients_present(trials)
    if only_client is not None and only_client not in present:
        raise InputError(f"--client {only_client}: no trial of that client in {source}; "
                         f"clients present: {', '.join(present)}")
    chosen = [only_client] if only_client else present
    summaries = []
    for client in chosen:
        mine = of_client(trials, client)
        ids = set(mine["trial_id"])
        conns = (connections[connections["trial_id"].isin(ids)]
                 if connections is not None else None)
        result = analyse(mine, config, connections=conns, manifest=manifest,
                         largest=largest)
        where = out / client if len(chosen) > 1 else out
        if len(chosen) > 1:
            where = safefs.check_out_dir(where, "--out")
        index = write_report(result, where, source=str(source), manifest=manifest,
                             results_dir=folder if in_store else None)
        summaries.append({**summary(result, index), "client": client})
        if not as_json:
            if len(chosen) > 1:
                echo(f"client {client}: settings compared among its own trials")
            _print(result, index)
    if as_json:
        jsonout.echo(summaries[0] if len(summaries) == 1 else summaries)


def _print(result, index: Path) -> None:
    o = result.overview
    echo(f"{o['trials']} trials ({o['ok']} ok, {o['failed']} failed), {o['sites']} sites, "
          f"{o['networks']} networks, {o['settings']} settings")
    echo(f"baseline: {result.baseline} ({result.baseline_why})")
    for warning in result.warnings:
        echo(f"warning: {warning}")
    for note in result.notes:
        echo(f"note: {note}")
    counts = findings_counts(result)
    if counts:
        echo("the paper's findings: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    if result.worker_tests is not None:
        for r in result.worker_tests.itertuples():
            echo(f"workers: {r.network} {r.setting}: {r.workers} workers {r.verdict} "
                  f"(ANOVA on log residuals within sites p = {r.p:.2g}; largest shift "
                  f"{r.largest_shift:+.1%}, {r.equivalence} at ±{r.margin:.0%}; medians "
                  f"{r.median_spread_ms:.0f} ms apart)")
        if result.worker_tests.empty:
            echo("workers: no network and setting was measured by two or more workers")
    echo(f"report: {index}")


def summary(result, index: Path) -> dict:
    """What `testbed report --json` prints: the summary the text gives."""
    o = result.overview
    return {"trials": o["trials"], "ok": o["ok"], "failed": o["failed"], "sites": o["sites"],
            "networks": o["networks"], "settings": o["settings"], "baseline": result.baseline,
            "baseline_why": result.baseline_why, "warnings": list(result.warnings),
            "notes": list(result.notes), "workers": result.worker_tests,
            "findings": findings_counts(result), "report": index}


def findings_counts(result) -> dict[str, int]:
    """Verdict -> how many rows of the paper's findings have it ({} without the table)."""
    from analysis.campaign.findings import VERDICTS

    f = result.findings
    if f is None or f.empty:
        return {}
    return {v: int((f["verdict"] == v).sum()) for v in VERDICTS}


def _manifest(folder: Path) -> Manifest | None:
    """The results folder's manifest (None if none) by the results loader: never through
    a symlink, checked and upgraded by its model."""
    from results_contract.load import ResultsError, load_manifest

    try:
        return load_manifest(folder)
    except ResultsError as e:
        raise InputError(str(e)) from None
