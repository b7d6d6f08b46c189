"""`testbed record URL` and `testbed recording show|har NAME`."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click

from testbed import jsonout
from testbed.formats import recording as recording_mod
from testbed.host import safefs
from testbed.host.paths import RECORDINGS_DIR
from testbed.replay import layout
from testbed.replay.layout import DEFAULT as DEFAULT_LAYOUT
from testbed.replay.layout import LAYOUTS

NUMBERS = ("line", "origins", "IPs", "requests", "bytes")
"""Columns of the record tables shown right-justified."""


@click.command()
@click.argument("url", required=False)
@click.option("--list", "list_file", type=click.Path(path_type=Path), metavar="FILE",
              help="Record every URL of FILE (one a line, optionally a name after it; "
                   "'#' comments) instead of one URL.")
@click.option("--name", help="Folder name of the recording [default: from the URL's host].")
@click.option("--loads", default=3, show_default=True, type=click.IntRange(min=1),
              help="Page loads merged into the recording (catches resources picked at random).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              default=RECORDINGS_DIR, show_default="recordings/",
              help="Folder the recording is written into.")
@click.option("--force", is_flag=True,
              help="Record again what OUT already holds (replaced once the new one is "
                   "complete) [default: --list skips it, a URL is refused].")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=1),
              help="Seconds a load may take to fire its load event (and again to go idle).")
@click.option("--netns", metavar="NAME",
              help="Advanced: run the proxy and Chromium inside this existing network "
                   "namespace (e.g. to record a site served there).")
@click.option("--resolve", "resolve", multiple=True, metavar="HOST=IP",
              help="Advanced: the proxy contacts HOST at IP and looks up no name; when given, "
                   "hosts not listed are refused. Repeatable.")
@click.option("--upstream-ca", type=click.Path(dir_okay=False, path_type=Path),
              help="Advanced: CA file the proxy trusts for the servers, instead of the "
                   "public CAs (e.g. a local test site's CA).")
@click.option("--deterministic-scripts/--no-deterministic-scripts", default=True,
              show_default=True,
              help="The pages Chromium records run a script first that seeds Math.random and "
                   "starts Date at the recording's time, as replays do, so their scripts "
                   "ask for the URLs replays will; the recording keeps the responses as sent.")
@click.option("--recorded-at", metavar="YYYY-MM-DDTHH:MM:SSZ",
              help="Advanced: the recording's time (its recorded_at, where the pinned "
                   "script's clock starts) instead of now, so that a generated site records "
                   "the same bytes each time (make corpus).")
def record(url, list_file, name, loads, out, force, timeout, netns, resolve, upstream_ca,
           deterministic_scripts, recorded_at):
    """Record the page at URL (or every URL of --list FILE) into a recording folder.

    Chromium loads URL --loads times through mitmproxy (a fresh profile each
    time, until the network is idle); the union of all exchanges is written to
    OUT/NAME with each origin's server IP, headers normalised as for replay.

    With --list, a line that is bad or fails to record is reported with its
    line number and cause, and the others are still recorded; a table of every
    line ends the run. Exit status 1 if some line failed, 2 if FILE itself is
    bad (nothing recorded).
    """
    from testbed.errors import InputError
    from testbed.record.recorder import RecordOptions, check_recorded_at, parse_resolve

    if (url is None) == (list_file is None):
        raise InputError("testbed record: expected a URL or --list FILE (one of them)")
    if list_file is not None and name:
        raise InputError("--name: not with --list (put a name after a URL in the list file)")
    opts = RecordOptions(url=url or "", name=name, loads=loads, out=out, timeout=timeout,
                         netns=netns, resolve=parse_resolve(resolve), upstream_ca=upstream_ca,
                         deterministic_scripts=deterministic_scripts,
                         recorded_at=check_recorded_at(recorded_at))
    if list_file is not None:
        _record_list(list_file, opts, force)
        return
    from testbed.record.bulk import record_one

    path = record_one(opts, force, lambda msg: click.echo(f"record: {msg}", err=True))
    rec = recording_mod.load(path)
    click.echo(f"{path}: {len(rec.exchanges)} requests, {len(rec.origins)} origins on "
               f"{len(rec.ips)} IPs, {rec.total_bytes} bytes")


def _record_list(list_file: Path, template, force: bool) -> None:
    """Every site of the list file; the table; exit status 1 if a line failed."""
    from rich.console import Console

    from testbed.console import Eta, progress_bar, rows_table
    from testbed.host import safefs
    from testbed.record import bulk, recorder, sitelist

    entries = sitelist.parse(sitelist.read(list_file), list_file)
    out = safefs.check_out_dir(Path(template.out), "--out")
    recorder.check_setup(template)
    todo, outcomes = bulk.plan(entries, out, force)
    for o in outcomes:
        if not o.ok:
            click.echo(f"{list_file}:{o.line}: {o.url}: {o.cause}", err=True)
    console = Console()
    eta = Eta(len(todo))
    skipped = sum(o.status == bulk.SKIPPED for o in outcomes)
    if skipped:
        console.print(f"{skipped} already recorded in {out} (skipped; --force records "
                      "them again)", soft_wrap=True, highlight=False)
    bar = progress_bar(console, "record {task.fields[site]}")
    with bar:
        task = bar.add_task("record", total=len(todo), site="")
        for i, site in enumerate(todo, start=1):
            bar.update(task, site=site.name)

            def say(msg: str, n: str = site.name) -> None:
                click.echo(f"record: {n}: {msg}", err=True)

            o = bulk.record_site(site, template, force, say)
            outcomes.append(o)
            left = eta.step()
            if not o.ok:
                click.echo(f"{list_file}:{o.line}: {site.url}: {o.cause}", err=True)
            if console.is_terminal:
                bar.advance(task)
            else:
                click.echo(f"site {i}/{len(todo)} {site.name} {o.status} ETA {left}")
    outcomes.sort(key=lambda o: o.line)
    rows_table(console, ["line", "name", "origins", "IPs", "requests", "bytes", "status"],
               [[str(o.line), o.name, *(("" if v is None else str(v))
                                        for v in (o.origins, o.ips, o.requests, o.bytes)),
                 o.status] for o in outcomes], right=NUMBERS)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        click.echo(f"{list_file}: {len(failed)} of {len(outcomes)} lines failed "
                   f"(lines {', '.join(str(o.line) for o in failed)})", err=True)
        sys.exit(1)


@click.group()
def recording():
    """Inspect and export recordings."""


@recording.command(name="list")
@click.argument("folder", required=False, metavar="[DIR]",
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the recordings and the figures of the set as JSON.")
def list_(folder, as_json):
    """Every recording in DIR (or in the search path) and figures of the set.

    Per recording: name, URL, date recorded, origins, requests, bytes, single-
    or multi-origin; then, per set (the corpus's paper and today, else the
    folder) and for all, p10/p50/p90 of requests, bytes and server IPs per page,
    the largest page and how many sites have one origin and how many five or
    more. Recordings are found up to four folders deep
    (recordings/corpus/SET/NAME). A recording that does
    not load is listed as invalid with the reason, and the exit status is 1.
    """
    from testbed.errors import InputError
    from testbed.formats import recording_search
    from testbed.record import listing

    if folder is not None and not folder.is_dir():
        raise InputError(f"{folder}: no such folder (expected a folder of recordings)"
                         f"{recording_search.corpus_hint(folder)}")
    folders = [folder] if folder is not None else recording_search.search_dirs()
    rows = listing.found(folders)
    if as_json:
        jsonout.echo({"recordings": [{**asdict(r), "kind": r.kind, "set": listing.set_of(r.name)}
                                     for r in rows],
                      "figures": listing.figures(rows), "sets": listing.by_set(rows)})
    else:
        _print_list(rows)
    if not rows:
        where = ", ".join(str(f) for f in folders)
        hint = recording_search.corpus_hint(folder) if folder is not None else ""
        click.echo(f"no recordings found in {where}{hint}", err=True)
    if any(r.problem for r in rows):
        sys.exit(1)


def _print_list(rows) -> None:
    """The table of `recording list` and its summary line."""
    from rich.console import Console

    from testbed.console import plain_line, rows_table
    from testbed.record import listing

    console = Console(highlight=False)
    rows_table(console, ["name", "URL", "recorded", "origins", "requests", "bytes", "origin"],
               [[r.name, r.url, r.recorded_at[:10], str(r.origins), str(r.requests),
                 str(r.bytes), r.kind] if not r.problem else
                [r.name, "", "", "", "", "", f"invalid: {r.problem}"] for r in rows],
               right=NUMBERS)
    sets = listing.by_set(rows) if rows else {}
    summaries = [*(sets.items() if len(sets) > 1 else ()), ("all", listing.figures(rows))]
    for name, figures in summaries:  # each set's, then all recordings'
        pairs = listing.summary_pairs(figures)
        if console.is_terminal:
            console.print(f"{name}: " + "  ".join(f"{h}: {v}" for h, v in pairs),
                          soft_wrap=True, markup=False)
        else:
            click.echo(plain_line([("summary", name), *pairs]))


@recording.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True,
              help="Print the recording's facts, origins, request types, status codes "
                   "and layout as JSON.")
@click.option("--layout", "layout_name", type=click.Choice(LAYOUTS), default=DEFAULT_LAYOUT,
              show_default=True,
              help="Show the layout a replay in this layout serves (a campaign's `layout`).")
def show(name, as_json, layout_name):
    """Origins, IPs, request types, bytes and layout of recording NAME.

    NAME is a recording's name (found in the search path: --recordings,
    TESTBED_RECORDINGS, recordings/) or the path of a recording folder. The layout:
    which hosts share an address and a certificate, so which a browser may pool onto
    one connection (docs/layout.md).
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from testbed.console import text
    from testbed.record.recording_summary import summarise

    rec = recording_mod.load(name)
    s = summarise(rec)
    laid = layout.describe(layout.apply(rec, layout_name))
    if as_json:
        jsonout.echo({"name": rec.name, "url": rec.url, "recorded_at": rec.recorded_at,
                      "loads": rec.loads, "chromium_version": rec.chromium_version,
                      "mitmproxy_version": rec.mitmproxy_version, "requests": s.requests,
                      "bytes": s.bytes, "ips": s.ips, "origins": s.origins,
                      "types": [{"type": t, "requests": n, "bytes": b} for t, n, b in s.types],
                      "statuses": [{"status": st, "count": n} for st, n in s.statuses],
                      "layout": laid})
        return
    console = Console(highlight=False)
    # every recorded string as plain Text: no markup, no escape sequence (testbed.console)
    console.print(Text.assemble(text(rec.name, "bold"), "  ", text(rec.url)), soft_wrap=True)
    console.print(text(f"recorded {rec.recorded_at}, {rec.loads} load(s), "
                       f"Chromium {rec.chromium_version or '?'}, "
                       f"mitmproxy {rec.mitmproxy_version or '?'}"), soft_wrap=True)
    console.print(text(f"{s.requests} requests, {_size(s.bytes)} ({s.bytes} bytes), "
                       f"{len(s.origins)} origins on {len(s.ips)} IPs: {', '.join(s.ips)}"),
                  soft_wrap=True)
    origins = Table(title="Origins")
    for col in ("scheme", "host", "port", "IP"):
        origins.add_column(col)
    origins.add_column("requests", justify="right")
    origins.add_column("bytes", justify="right")
    for o in s.origins:
        origins.add_row(*(text(v) for v in (o.scheme, o.host, o.port, o.ip, o.requests,
                                             _size(o.bytes))))
    console.print(origins)
    types = Table(title="Requests by type")
    types.add_column("type")
    types.add_column("requests", justify="right")
    types.add_column("bytes", justify="right")
    for t, n, b in s.types:
        types.add_row(text(t), text(n), text(_size(b)))
    console.print(types)
    console.print(text("status codes: " + ", ".join(f"{st} x{n}" for st, n in s.statuses)),
                  soft_wrap=True)
    _print_layout(console, laid)


def _print_layout(console, laid: dict) -> None:
    """`recording show`'s layout: each address, its hosts and its certificate, and which
    hosts a browser may pool onto one connection."""
    from rich.table import Table

    from testbed.console import text

    table = Table(title=f"Layout ({laid['layout']}): {len(laid['addresses'])} addresses, "
                        f"{len(laid['certificates'])} certificate(s)")
    for col in ("address", "hosts", "certificate"):
        table.add_column(col)
    for a in laid["addresses"]:
        table.add_row(text(a["ip"]), text(", ".join(a["hosts"])), text(a["certificate"]))
    console.print(table)
    for c in laid["certificates"]:
        console.print(text(f"certificate {c['number']}: {', '.join(c['names'])}"),
                      soft_wrap=True)
    pooled = laid["pooled"]
    console.print(text("pooled (one address, one certificate naming them): "
                       + ("; ".join(", ".join(g) for g in pooled) if pooled else "none")),
                  soft_wrap=True)


@recording.command()
@click.argument("name")
@click.option("--output", "output", metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write the HAR here [default: standard output].")
@click.option("--bodies/--no-bodies", default=True, show_default=True,
              help="Include response bodies (base64).")
def har(name, output, bodies):
    """Export recording NAME as HAR 1.2.

    NAME is a recording's name (found in the search path) or the path of a
    recording folder.
    """
    from testbed.record.har_export import to_har

    doc = to_har(recording_mod.load(name), bodies=bodies)
    text = json.dumps(doc, indent=1) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    safefs.write_out_file(output, text, "--output")
    click.echo(f"{output}: {len(doc['log']['entries'])} entries", err=True)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
