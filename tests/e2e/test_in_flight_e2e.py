"""End to end: Chromium lets as many requests run at once to one host over QUIC as
over HTTP/2 (recordings/gallery: 40 images on the page's own host).

Chromium's resource scheduler holds images ("delayable" requests) at 6 per host
unless it knows that the host handles request priorities: from an HTTP/2
session, or from a QUIC alternative service (alt-svc) for the origin. The
replay forces QUIC on every origin, so over QUIC Chromium learns it only from
h3server's alt-svc header. One load per stack, 24 ms RTT (mm-delay).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from support.needs import need
from support.paths import ROOT

from testbed.host.chromium import CDPError, Chromium
from testbed.host.paths import H3SERVER
from testbed.measure import trial_har
from testbed.replay.env import ReplayEnv

pytestmark = pytest.mark.e2e

GALLERY = ROOT / "recordings" / "gallery"
URL = "https://www.gallery.test/"
IMAGE_HOST = "www.gallery.test"
PROTOCOL = {"tcp": "h2", "quic": "h3"}
# Each resource: URL, when its request was sent (ms since the epoch), how long until
# its last byte, protocol. requestStart is after any wait in Chromium's scheduler.
TIMES = """JSON.stringify(performance.getEntriesByType('resource').map(e => [e.name,
  performance.timeOrigin + e.requestStart, e.responseEnd - e.requestStart,
  e.nextHopProtocol]))"""


def as_har(rows: list) -> dict:
    return {"log": {"entries": [
        {"request": {"url": url},
         "startedDateTime": dt.datetime.fromtimestamp(sent / 1000, dt.UTC).isoformat(),
         "time": total} for url, sent, total, _ in rows]}}


def load(stack: str) -> tuple[dict[str, int], set[str]]:
    """One whole page load. Chromium may see a network change while the new namespaces
    settle: then the navigation fails, or the page loads with a fetch that failed (an
    entry without protocol); either way the page is loaded again, at most 3 times."""
    with ReplayEnv(GALLERY, stack) as env, \
            Chromium(env.client_netns, env.chromium_flags(), wrap=["mm-delay", "12"]) as b:
        for attempt in range(3):
            page = b.new_page()
            try:
                page.navigate(URL)
                rows = json.loads(page.evaluate(TIMES))
            except CDPError as e:
                if "ERR_NETWORK_CHANGED" not in str(e) or attempt == 2:
                    raise
                continue
            finally:
                page.close()
            images = [r for r in rows if r[0].startswith(f"https://{IMAGE_HOST}/img/")]
            if all(r[3] for r in images):
                break
    assert len(images) == 40, rows
    return trial_har.max_in_flight(as_har(rows)), {r[3] for r in images}


def test_quic_is_not_held_to_six_requests_per_host():
    if not H3SERVER.exists():
        need(f"{H3SERVER} not built (make setup)")
    tcp, tcp_protocols = load("tcp")
    quic, quic_protocols = load("quic")
    assert tcp_protocols == {"h2"} and quic_protocols == {"h3"}
    assert tcp[IMAGE_HOST] > 6, tcp
    assert quic[IMAGE_HOST] > 6, (quic, tcp)
