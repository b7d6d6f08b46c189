"""Chromium loading a page through the recording proxy.

    with recording_browser(proxy_port, spki, netns) as browser:
        result = load(browser, "https://example.org/", timeout=60)

The browser is testbed.host.chromium.Chromium (headless, DevTools over a
pipe, as the testbed user with its sandbox, a fresh profile deleted
afterwards). For recording it sends every request to the proxy, trusts the
proxy's certificates by the SHA-256 of their public key
(`--ignore-certificate-errors-spki-list`, so no trust store is touched),
keeps QUIC off and never resolves a name itself: the proxy does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from testbed.host.chromium import STACK_FLAGS, CDPError, Chromium


def flags(proxy_port: int, spki: str) -> list[str]:
    """Chromium's recording flags, beyond the driver's own (pure)."""
    return [
        f"--proxy-server=http://127.0.0.1:{proxy_port}",
        "--proxy-bypass-list=<-loopback>",
        f"--ignore-certificate-errors-spki-list={spki}",
        # Names are resolved by the proxy only; Chromium itself must not look up any.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        *STACK_FLAGS["tcp"],  # QUIC off: the proxy speaks TCP only
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--no-pings",
        "--metrics-recording-only",
        "--disable-features=OptimizationHints,Translate,NetworkTimeServiceQuerying",
        "--window-size=1366,768",
    ]


def recording_browser(proxy_port: int, spki: str, netns: str | None,
                      timeout: float = 60.0) -> Chromium:
    return Chromium(netns, flags(proxy_port, spki), timeout=timeout)


@dataclass
class LoadResult:
    """What one page load did, as Chromium saw it."""

    url: str
    loaded: bool = False
    """The load event fired."""
    idle: bool = False
    """The network went idle after the load event (no request for 500 ms)."""
    error: str | None = None
    """Chromium's navigation error (e.g. net::ERR_TUNNEL_CONNECTION_FAILED)."""
    timed_out: bool = False
    document_urls: list[str] = field(default_factory=list)
    """The main document's URL and every URL it was redirected to."""
    hosts: set[str] = field(default_factory=set)
    """Every host the page sent a request to (not the browser's own background traffic)."""


def load(browser: Chromium, url: str, timeout: float) -> LoadResult:
    """Load url in a new tab: wait for its load event, then for network idle.

    Each phase may take `timeout` seconds; a load that never fires its load
    event is `timed_out`, one that never goes idle is kept with idle=False.
    """
    result = LoadResult(url=url)
    page = browser.new_page()
    page.call("Page.setLifecycleEventsEnabled", {"enabled": True})
    deadline = time.monotonic() + timeout
    try:
        nav = page.call("Page.navigate", {"url": url}, timeout)
    except CDPError:
        if time.monotonic() < deadline:
            raise
        result.timed_out = True
        return result
    if nav.get("errorText"):
        result.error = nav["errorText"]
    frame, loader = nav.get("frameId"), nav.get("loaderId")
    seen: set[str] = set()
    while result.error is None and not result.idle:
        left = deadline - time.monotonic()
        if left <= 0:
            result.timed_out = True
            break
        try:
            ev = browser.wait_event("Page.lifecycleEvent", page.session, left)
        except CDPError:
            result.timed_out = True
            break
        if ev.get("frameId") != frame:
            continue
        if ev["name"] == "init" and ev.get("loaderId") != loader:
            loader, seen = ev["loaderId"], set()  # a new navigation (a script redirect)
        if ev.get("loaderId") == loader:
            seen.add(ev["name"])
        if "load" in seen and not result.loaded:
            result.loaded = True
            deadline = time.monotonic() + timeout  # the idle phase gets its own time
        result.idle = result.loaded and "networkIdle" in seen
    for ev in browser.take_events("Network.requestWillBeSent", page.session):
        result.hosts.add((urlsplit(ev["request"]["url"]).hostname or "").lower())
        if ev.get("type") == "Document" and ev.get("frameId") == frame:
            result.document_urls.append(ev["request"]["url"])
    for ev in browser.take_events("Network.loadingFailed", page.session):
        if ev.get("type") == "Document" and ev.get("requestId") == loader and not result.loaded:
            result.error = result.error or ev.get("errorText") or "navigation failed"
    return result
