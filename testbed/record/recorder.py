"""`testbed record`: load a page N times through mitmproxy and write a recording.

    path = record(RecordOptions(url="https://example.org/"))

Steps: check the input and the tools (before anything starts), start
mitmdump with the capture addon, load the page N times in a fresh Chromium
each time, stop the proxy, merge the loads (the union of their exchanges:
sites pick some resources at random per load), normalise the headers and
write the recording atomically (testbed.formats.recording.write). A load that fails
stops the recording with one line naming the cause; nothing is written.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from testbed.errors import InputError, TestbedError
from testbed.formats import recording
from testbed.host import netns as netns_mod
from testbed.host import runstate, safefs
from testbed.host.paths import RECORDINGS_DIR
from testbed.record import browser as browser_mod
from testbed.record import normalise, pinned_script
from testbed.record.browser import LoadResult

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class LoadFailed(TestbedError):
    """A page load failed; the message names the cause."""


@dataclass(frozen=True)
class RecordOptions:
    url: str
    """The page to record (http:// or https://)."""
    name: str | None = None
    """Folder name of the recording; default: derived from the URL's host."""
    loads: int = 3
    """Page loads merged into the recording (catches resources picked at random)."""
    out: Path = RECORDINGS_DIR
    """Folder the recording is written into."""
    timeout: float = 60.0
    """Seconds one load may take to fire its load event, and again to go network-idle."""
    netns: str | None = None
    """Run the proxy and the browser inside this existing network namespace."""
    resolve: dict[str, str] = field(default_factory=dict)
    """host -> IP the proxy contacts for host, instead of looking the name up."""
    upstream_ca: Path | None = None
    """CA file the proxy trusts for upstream servers, instead of the public ones."""
    deterministic_scripts: bool = True
    """The pages the browser records run the pinned script (testbed.record.pinned_script)
    with the recording's time, as its replays will: their own scripts ask for the URLs
    the replays ask for. The recording keeps the responses as sent."""
    recorded_at: str | None = None
    """The recording's time ("YYYY-MM-DDTHH:MM:SSZ") instead of now: a generated site
    recorded twice gives the same bytes (check_recorded_at)."""


# Pure parts -------------------------------------------------------------------------

def check_recorded_at(text: str | None) -> str | None:
    """--recorded-at as given if it is a UTC time "YYYY-MM-DDTHH:MM:SSZ"; InputError
    otherwise (None passes: now)."""
    if text is None:
        return None
    try:
        parsed = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise InputError(f"--recorded-at {text!r}: expected a UTC time "
                         "YYYY-MM-DDTHH:MM:SSZ") from None
    if parsed.year < 1995:
        raise InputError(f"--recorded-at {text!r}: expected a time after 1995")
    return text

def check_url(url: str) -> str:
    """The URL if it is an absolute http(s) URL with a host; InputError otherwise."""
    if any(not c.isprintable() or c.isspace() for c in url):
        raise InputError(f"{url!r}: a control character or blank in the URL")
    try:
        parts = urlsplit(url)
    except ValueError as e:  # an unbalanced '[' (IPv6 literal)
        raise InputError(f"{url}: not a URL ({e})") from None
    if parts.scheme not in ("http", "https"):
        raise InputError(f"{url}: not an http:// or https:// URL")
    if not parts.hostname:
        raise InputError(f"{url}: no host name in the URL")
    try:
        _ = parts.port
    except ValueError:
        raise InputError(f"{url}: invalid port") from None
    return url


def default_name(url: str) -> str:
    """A recording name from the URL's host: www.example.org:8443 -> example.org-8443."""
    parts = urlsplit(url)
    host = (parts.hostname or "site").lower()
    host = host.removeprefix("www.")
    name = re.sub(r"[^A-Za-z0-9._-]", "-", host)
    if parts.port:
        name += f"-{parts.port}"
    return name.strip(".-_") or "site"


def parse_resolve(items: Iterable[str]) -> dict[str, str]:
    """["host=ip", ...] -> {host: ip}; InputError names a bad item."""
    out = {}
    for item in items:
        host, sep, ip = item.partition("=")
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise InputError(f"--resolve {item}: expected HOST=IP (e.g. www.example.org=10.0.0.1)") \
                from None
        if not sep or not host:
            raise InputError(f"--resolve {item}: expected HOST=IP")
        out[host.lower()] = ip
    return out


def request_key(x: dict) -> tuple:
    return (x["scheme"], x["host"], x["port"], x["method"], x["target"])


def merge(loads: list[list[dict]]) -> list[dict]:
    """The union of several loads' exchanges: the first response seen for each request.

    A request is (scheme, host, port, method, target). Requests seen in a later
    load only (resources a site picks at random per load) are added; a request
    seen again keeps the response of its first load, since replay serves one
    response per request. Each keeps `seen_in`: how many loads asked for it.
    """
    out: dict[tuple, dict] = {}
    seen: dict[tuple, int] = {}
    for rows in loads:
        for key in {request_key(row) for row in rows}:
            seen[key] = seen.get(key, 0) + 1
        for row in rows:
            out.setdefault(request_key(row), row)
    return [{**row, "seen_in": seen[key]} for key, row in out.items()]


def normalise_row(row: dict) -> dict:
    """A captured exchange as the recording stores it (without body fields)."""
    return {
        "scheme": row["scheme"], "host": row["host"], "port": row["port"], "ip": row["ip"],
        "method": row["method"], "target": row["target"],
        "request_headers": [list(h) for h in normalise.request_headers(row["request_headers"])],
        "status": row["status"],
        "response_headers": [list(h) for h in normalise.response_headers(
            row["response_headers"], row["body_size"], row["status"], row["method"])],
        **({"seen_in": row["seen_in"]} if "seen_in" in row else {}),
    }


def page_rows(rows: list[dict], result: LoadResult) -> tuple[list[dict], set[str]]:
    """The exchanges with hosts the page requested, and the other hosts seen.

    Chromium talks to a few services of its own (component updates, network
    time) through the same proxy; those hosts are not part of the site.
    """
    hosts = result.hosts | {(urlsplit(u).hostname or "").lower()
                            for u in [result.url, *result.document_urls]}
    keep = [r for r in rows if r["host"] in hosts]
    return keep, {r["host"] for r in rows} - hosts


def explain_failure(result: LoadResult, errors: list[dict], timeout: float) -> str:
    """One line naming why a load failed, from Chromium's view and the proxy's errors."""
    hosts = [urlsplit(u).hostname for u in [result.url, *result.document_urls]]
    relevant = [e for e in errors if e.get("host") in hosts]
    for kind, what in (("tls", "TLS failure with"), ("connect", "cannot reach")):
        for e in relevant:
            if e.get("kind") == kind:
                where = f"{e['host']}:{e['port']}"
                if e.get("address") and e["address"] != e["host"]:
                    where += f" ({e['address']})"
                return f"{what} {where}: {e['error']}"
    if result.error:
        return f"{result.url} failed to load: {result.error}"
    if result.timed_out and not result.loaded:
        return f"{result.url} did not finish loading within {timeout:g} s"
    return f"{result.url} failed to load"


def load_succeeded(result: LoadResult, captured: list[dict]) -> bool:
    """The load event fired and the main document came from the server, not the proxy."""
    if not result.loaded or result.error:
        return False
    urls = result.document_urls or [result.url]
    final = urlsplit(urls[-1])
    return any(x["scheme"] == final.scheme and x["host"] == (final.hostname or "")
               and x["target"] == (final.path or "/") + (f"?{final.query}" if final.query else "")
               for x in captured)


# Orchestration ----------------------------------------------------------------------

def preconditions(opts: RecordOptions) -> Path:
    """Check everything before anything starts; return the final recording path."""
    final = target(opts)
    check_setup(opts)
    return final


def target(opts: RecordOptions) -> Path:
    """The URL, the name and the output folder checked: OUT/NAME, which must not exist."""
    check_url(opts.url)
    name = opts.name or default_name(opts.url)
    if not NAME_RE.match(name):
        raise InputError(f"--name {name}: use letters, digits, '.', '_' and '-' "
                         "(starting with a letter or digit)")
    # Root writes the recording there: no folder on the way may be the testbed user's.
    final = safefs.check_out_dir(Path(opts.out), "--out") / name
    if final.exists() or final.is_symlink():
        raise InputError(f"{final}: already exists (choose another --name or remove it)")
    return final


def check_setup(opts: RecordOptions) -> None:
    """What every recording needs, whatever its URL: root, the tools, --netns,
    --upstream-ca."""
    if opts.loads < 1:
        raise InputError(f"--loads {opts.loads}: must be at least 1")
    if os.geteuid() != 0:
        raise InputError("testbed record must run as root (it runs Chromium and mitmproxy "
                         f"as the {runstate.USER} user): sudo testbed record ...")
    if shutil.which("chromium") is None:
        raise InputError("chromium: not found; install it (make setup)")
    from testbed.record.proxy import MITMDUMP

    if not MITMDUMP.exists():
        raise InputError(f"{MITMDUMP}: missing; install the Python env (make setup)")
    if opts.netns is not None and not netns_mod.exists(opts.netns):
        raise InputError(f"--netns {opts.netns}: no such network namespace (ip netns list)")
    if opts.upstream_ca is not None and not Path(opts.upstream_ca).is_file():
        raise InputError(f"--upstream-ca {opts.upstream_ca}: no such file")


def record(opts: RecordOptions, progress=None) -> Path:
    """Record opts.url; return the recording's folder. Raises TestbedError on failure."""
    from testbed.record.proxy import Mitmdump

    final = preconditions(opts)
    say = progress or (lambda msg: None)
    run = runstate.current()
    # The recording's time: when it started, and where the pinned script's clock starts.
    recorded_at = opts.recorded_at or dt.datetime.now(dt.UTC).replace(
        microsecond=0).isoformat().replace("+00:00", "Z")
    pin = pinned_script.pin_at(recorded_at) if opts.deterministic_scripts else None
    with ExitStack() as exits:
        work = Path(tempfile.mkdtemp(prefix="record-", dir=run.dir))
        os.chmod(work, 0o755)
        exits.callback(shutil.rmtree, work, True)
        proxy = exits.enter_context(Mitmdump(work, netns=opts.netns, resolve=opts.resolve,
                                             upstream_ca=opts.upstream_ca, run=run,
                                             pin_ms=pin.time_ms if pin else None))
        loads: list[list[dict]] = []
        chromium_version = ""
        for i in range(opts.loads):
            before = len(proxy.exchanges())
            with browser_mod.recording_browser(proxy.port, proxy.spki, opts.netns,
                                               timeout=opts.timeout) as chromium:
                version = chromium.call("Browser.getVersion").get("product", "")
                chromium_version = version.split("/")[-1]
                result = browser_mod.load(chromium, opts.url, opts.timeout)
            if not proxy.alive():
                raise TestbedError(f"mitmdump stopped during load {i + 1}: "
                                   f"{proxy.bg.tail(3)}")
            rows, others = page_rows(proxy.exchanges()[before:], result)
            if not load_succeeded(result, rows):
                raise LoadFailed(explain_failure(result, proxy.errors(), opts.timeout))
            if others:
                say(f"load {i + 1}: left out requests Chromium made on its own to "
                    + ", ".join(sorted(others)))
            if not result.idle:
                say(f"load {i + 1}: the network did not go idle within {opts.timeout:g} s "
                    "after the load event; keeping what had loaded")
            loads.append(rows)
            say(f"load {i + 1}/{opts.loads}: {len(rows)} requests")
        proxy.stop()
        # Every flow is on disk once the proxy has stopped.
        merged = merge(loads)
        exchanges = [(normalise_row(r), proxy.body(r["body"])) for r in merged]
        meta = {
            "name": final.name,
            "url": opts.url,
            "recorded_at": recorded_at,
            "loads": opts.loads,
            "chromium_version": chromium_version,
            "mitmproxy_version": _mitmproxy_version(),
        }
        return recording.write(final.parent, meta, exchanges)


def _mitmproxy_version() -> str:
    from mitmproxy.version import VERSION

    return VERSION
