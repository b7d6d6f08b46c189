"""`testbed compare A B`: do two campaigns reach the same verdicts? (analysis.campaign.agreement)"""

from __future__ import annotations

from pathlib import Path

import click

from testbed import jsonout
from testbed.console import echo
from testbed.errors import InputError
from testbed.host import safefs

SHOWN_DIFFS = 20
"""Manifest differences printed (all of them are in manifest_diff.csv with --out)."""


@click.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR",
              help="Also write index.html (the agreement with its figures), sites.csv, "
                   "summary.csv and manifest_diff.csv into this folder.")
@click.option("--baseline", default=None,
              help="Baseline setting (default: tcp when both have it, else their first).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="Significance level of the per-site test.")
@click.option("--test", "test", type=click.Choice(["anova", "welch", "mannwhitney", "kruskal"]),
              default="anova", show_default=True, help="Per-site test.")
@click.option("--correction", type=click.Choice(["none", "bh"]), default="none",
              show_default=True, help="Correction across the per-site tests.")
@click.option("--margin", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.02, show_default=True,
              help="Equivalence margin: effects within ±margin (0.02 = ±2 %) count as the same.")
@click.option("--equivalence-alpha", type=click.FloatRange(0, 0.5, min_open=True, max_open=True),
              default=None,
              help="Level of the two one-sided tests (default: --alpha, the report's level; "
                   "0.05 is the usual 90 % interval within the margin).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the result (score, per-cell summary, per-site verdicts, manifest "
                   "differences, equivalence) as JSON instead of text.")
def compare(a: Path, b: Path, out: Path | None, baseline: str | None, alpha: float, test: str,
            correction: str, margin: float, equivalence_alpha: float | None,
            as_json: bool = False):
    """Compare two campaigns' results (folders or exports): whether they reach the same
    verdicts. First the agreement (how many sites get the same verdict, win / tie /
    loss, in both) and the equivalence of their effects, then per pair, network and
    metric the agreement and the median difference of relative differences, the
    equivalence per cell, and last the manifests' differences. An export carries no manifest: a folder and its own export
    compare as the same campaign. Two campaigns with no site, network and setting in
    common print what each has and their manifests' differences, and exit 2. Runs
    without root."""
    from analysis.campaign.agreement import agreement, manifest_diff, read_manifest
    from results_contract.load import ResultsError, load

    if out is not None:  # root may write there: checked before anything is read
        out = safefs.check_out_dir(out, "--out")
    try:
        ta, tb = load(a), load(b)
        ma = read_manifest(a) if a.is_dir() else None
        mb = read_manifest(b) if b.is_dir() else None
    except ResultsError as e:
        raise InputError(str(e)) from e
    missing = _nothing_in_common(ta, tb)
    if missing:
        diff = manifest_diff(*(m.document() if m else {} for m in (ma, mb)))
        if not as_json:
            for line in missing:
                echo(line)
            _echo_manifests(diff, ma, mb, None)
        raise InputError(f"{a} and {b}: no site, network and setting pair in common to "
                         "compare" + ("" if as_json else " (what each has: above)"))
    try:
        result = agreement(ta, tb, ma, mb, baseline=baseline, alpha=alpha, test=test,
                           correction=correction, margin=margin,
                           equivalence_alpha=equivalence_alpha)
    except ValueError as e:  # a baseline neither campaign has
        raise InputError(f"--baseline: {e}") from e
    if result.sites.empty:
        raise InputError(f"{a} and {b}: no site, network and setting pair in common to compare")
    written = _write(out, _out_files(result, a, b)) if out is not None else []
    if as_json:
        jsonout.echo(json_doc(result, a, b, written))
        return

    from results_contract.schema import label

    tested = int(result.sites["agree"].notna().sum())
    score = "n/a (no site tested in both)" if tested == 0 else f"{result.score:.1%}"
    echo(f"agreement: {score} of {tested} site verdicts (baseline {result.baseline}; "
         f"per-site test {test}, correction {correction}, p < {alpha})")
    _echo_equivalence_summary(result)
    echo(_trials_line(ta, tb))
    for warning in result.warnings:
        echo(f"warning: {warning}")
    echo("")
    echo(f"{'pair':<22} {'network':<8} {'metric':<6} {'agree':>9} {'median Δrel':>12}")
    for r in result.summary.itertuples(index=False):
        share = "–" if r.tested == 0 else f"{r.agreeing}/{r.tested}"
        echo(f"{label(r.a) + ' vs ' + label(r.b):<22} {label(r.network):<8} "
             f"{label(r.metric):<6} {share:>9} {r.median_diff_rel:>+11.1%}")
    _echo_equivalence(result)
    _echo_manifests(result.manifest_diff, ma, mb, out)
    for path in written:
        echo(f"wrote {path}")


def _nothing_in_common(ta, tb) -> list[str]:
    """What each campaign has, one line each, when they share no site, network or
    setting ([] when they share at least one of each)."""
    kinds = ("site", "network", "setting")
    if all(set(ta[k]) & set(tb[k]) for k in kinds):
        return []
    lines = []
    for name, t in (("A", ta), ("B", tb)):
        lines.append(f"{name}: " + "; ".join(
            f"{k}s {_short(', '.join(sorted(map(str, set(t[k])))), 80)}" for k in kinds))
    shared = [k + "s" for k in kinds if not set(ta[k]) & set(tb[k])]
    lines.append(f"in common: no {' and no '.join(shared)}")
    return lines


def _trials_line(ta, tb) -> str:
    both = len(set(ta["trial_id"]) & set(tb["trial_id"]))
    return f"trials: A {len(ta)}, B {len(tb)}, {both} ids in both"


def _echo_manifests(diff, ma, mb, out: Path | None) -> None:
    """The manifests' differences (SHOWN_DIFFS of them); none compared when a side has
    no manifest (an export carries none)."""
    absent = [name for name, m in (("A", ma), ("B", mb)) if m is None]
    if absent:
        echo(f"manifests: not compared ({' and '.join(absent)} without one: an export "
             "carries no manifest)")
        return
    echo(f"manifests: {len(diff)} difference(s)" + (":" if len(diff) else ""))
    for row in diff.head(SHOWN_DIFFS).itertuples(index=False):
        echo(f"  {row.key}: {_short(row.a)} | {_short(row.b)}")
    if len(diff) > SHOWN_DIFFS:
        echo(f"  ... {len(diff) - SHOWN_DIFFS} more" + (" in manifest_diff.csv" if out
                                                          else " (--out DIR lists all)"))


def _out_files(result, a: Path, b: Path) -> dict[str, bytes]:
    """What --out holds: every table as CSV, index.html and its figures."""
    from analysis.campaign.agreement import csv_files
    from analysis.report.compare_page import files

    tables = csv_files(result)
    return {**tables, **files(result, str(a), str(b), list(tables))}


def _write(out: Path, files: dict[str, bytes]) -> list[Path]:
    """The files into the folder `out`, as every writer of results does (testbed.host.safefs:
    the folder checked again, each file new and renamed into place)."""
    folder = safefs.check_out_dir(out, "--out")
    folder.mkdir(parents=True, exist_ok=True)
    return [safefs.write_out_file(folder / name, data, "--out") for name, data in files.items()]


def json_doc(result, a: Path, b: Path, written) -> dict:
    """What `testbed compare --json` prints: the agreement and its tables."""
    tested = int(result.sites["agree"].notna().sum())
    return {"a": a, "b": b, "baseline": result.baseline, "pairs": result.pairs,
            "score": result.score, "tested": tested, "margin": result.margin,
            "equivalence_alpha": result.equivalence_alpha,
            "warnings": list(result.warnings), **result.tables(),
            "written": written}


def _echo_equivalence_summary(result) -> None:
    """One line: how many cells' effects are equivalent, different, inconclusive."""
    eq = result.equivalence
    if eq is None or eq.empty:
        return
    counts = eq["verdict"].value_counts()
    echo("equivalence: " + ", ".join(f"{int(counts.get(v, 0))} {v}" for v in
                                     ("equivalent", "different", "inconclusive"))
         + f" of {len(eq)} cells (margin ±{result.margin:.1%}, "
           f"TOST at {result.equivalence_alpha:g})")


def _echo_equivalence(result) -> None:
    """Per pair, network and metric: the TOST verdict on the campaigns' effects."""
    from results_contract.schema import label

    eq = result.equivalence
    if eq is None or eq.empty:
        return
    echo(f"equivalence of the effects across sites: margin ±{result.margin:.1%}, "
         f"TOST at {result.equivalence_alpha:g} "
         f"({1 - 2 * result.equivalence_alpha:.0%} interval of the shift)")
    for r in eq.itertuples(index=False):
        line = (f"  {label(r.a) + ' vs ' + label(r.b):<22} {label(r.network):<8} "
                f"{label(r.metric):<6} {r.verdict:<13} shift {r.shift:+.1%} "
                f"[{r.shift_low:+.1%}, {r.shift_high:+.1%}] over {r.sites} sites")
        if r.verdict == "inconclusive" and r.runs_needed > r.runs:  # (False for NaN)
            line += f"; needs ~{r.runs_needed:.0f} runs (now {r.runs:.0f})"
        elif r.verdict == "inconclusive" and r.runs_needed <= r.runs:
            line += f"; {r.runs:.0f} runs would do for no shift: this shift keeps it open"
        echo(line)
    if eq["verdict"].eq("inconclusive").any():
        from analysis.campaign.agreement import EQUIVALENCE_POWER

        echo(f"  runs: per setting and site in each campaign for {EQUIVALENCE_POWER:.0%} power "
             "to show equivalence if both measure the same thing (analysis.statistics.planner)")


def _short(value: str, width: int = 60) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"
