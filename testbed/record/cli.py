"""`testbed record URL` and `testbed recording show|har NAME`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from testbed import recording as recording_mod
from testbed import safefs


@click.command()
@click.argument("url")
@click.option("--name", help="Folder name of the recording [default: from the URL's host].")
@click.option("--loads", default=3, show_default=True, type=click.IntRange(min=1),
              help="Page loads merged into the recording (catches resources picked at random).")
@click.option("--out", type=click.Path(path_type=Path),
              default=recording_mod.RECORDINGS_DIR, show_default="recordings/",
              help="Folder the recording is written into.")
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
def record(url, name, loads, out, timeout, netns, resolve, upstream_ca):
    """Record the page at URL into a recording folder.

    Chromium loads URL --loads times through mitmproxy (a fresh profile each
    time, until the network is idle); the union of all exchanges is written to
    OUT/NAME with each origin's server IP, headers normalised as for replay.
    """
    from testbed.record.recorder import RecordOptions, parse_resolve
    from testbed.record.recorder import record as do_record

    opts = RecordOptions(url=url, name=name, loads=loads, out=out, timeout=timeout,
                         netns=netns, resolve=parse_resolve(resolve), upstream_ca=upstream_ca)
    path = do_record(opts, progress=lambda msg: click.echo(f"record: {msg}", err=True))
    rec = recording_mod.load(path)
    click.echo(f"{path}: {len(rec.exchanges)} requests, {len(rec.origins)} origins on "
               f"{len(rec.ips)} IPs, {rec.total_bytes} bytes")


@click.group()
def recording():
    """Inspect and export recordings."""


@recording.command()
@click.argument("name")
def show(name):
    """Origins, IPs, request types and bytes of recording NAME.

    NAME is a recording in recordings/ or the path of a recording folder.
    """
    from rich.console import Console
    from rich.table import Table

    from testbed.record.recording_summary import summarise

    rec = recording_mod.load(name)
    s = summarise(rec)
    console = Console()
    console.print(f"[bold]{rec.name}[/bold]  {rec.url}", soft_wrap=True)
    console.print(f"recorded {rec.recorded_at}, {rec.loads} load(s), "
                  f"Chromium {rec.chromium_version or '?'}, "
                  f"mitmproxy {rec.mitmproxy_version or '?'}", soft_wrap=True)
    console.print(f"{s.requests} requests, {_size(s.bytes)} ({s.bytes} bytes), "
                  f"{len(s.origins)} origins on {len(s.ips)} IPs: {', '.join(s.ips)}",
                  soft_wrap=True)
    origins = Table(title="Origins")
    for col in ("scheme", "host", "port", "IP"):
        origins.add_column(col)
    origins.add_column("requests", justify="right")
    origins.add_column("bytes", justify="right")
    for o in s.origins:
        origins.add_row(o.scheme, o.host, str(o.port), o.ip, str(o.requests), _size(o.bytes))
    console.print(origins)
    types = Table(title="Requests by type")
    types.add_column("type")
    types.add_column("requests", justify="right")
    types.add_column("bytes", justify="right")
    for t, n, b in s.types:
        types.add_row(t, str(n), _size(b))
    console.print(types)
    console.print("status codes: " + ", ".join(f"{st} x{n}" for st, n in s.statuses),
                  soft_wrap=True)


@recording.command()
@click.argument("name")
@click.option("--out", "-o", "--output", "output",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write the HAR here [default: standard output].")
@click.option("--bodies/--no-bodies", default=True, show_default=True,
              help="Include response bodies (base64).")
def har(name, output, bodies):
    """Export recording NAME as HAR 1.2.

    NAME is a recording in recordings/ or the path of a recording folder.
    """
    from testbed.har_export import to_har

    doc = to_har(recording_mod.load(name), bodies=bodies)
    text = json.dumps(doc, indent=1) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    safefs.write_out_file(output, text, "--output")
    click.echo(f"{output}: {len(doc['log']['entries'])} entries", err=True)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
