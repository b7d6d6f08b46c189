"""The Firefox stack: what makes Firefox ESR reach a replay over one protocol stack.

Firefox gets what Chromium gets (testbed.host.chromium), by its own means where
Chromium's do not exist:

- the stack: preferences, not switches. TCP: HTTP/3 off (HTTP/2 over TLS 1.3).
  QUIC: HTTP/3 on and every recorded origin mapped to itself over h3
  (`network.http.http3.alt-svc-mapping-for-testing`), so the first request to
  each origin goes over QUIC without an Alt-Svc header (Chromium's
  --origin-to-force-quic-on=*); Firefox switches HTTP/3 off when it sees a root
  it did not ship (`network.http.http3.disable_when_third_party_roots_found`),
  which the replay's trust is, so that is turned off too;
- the replay's certificate: its CA (the one that issued the leaf) is made a trust
  anchor (`certutil -t C,,`; Firefox refuses a leaf marked as a trusted peer) in
  the NSS database of the trial's own profile, made fresh per browser by
  geckodriver in the block's TMPDIR (testbed/measure/firefox_launcher.py), never
  the user's; Chromium's equivalent is --ignore-certificate-errors-spki-list;
- names: Firefox has no --host-resolver-rules. Its native resolver reads
  /etc/hosts: the block's browser runs in a mount namespace in which /etc/hosts
  is the replay's (every recorded host to its recorded IP) and /etc/resolv.conf
  names only 127.0.0.1 (any other name fails at once inside the client's own
  namespace, no query leaves it), both files in the run's folder
  (testbed.host.enter's binds). DNS over HTTPS and HTTPS records are off, so no
  name is ever asked on the wire.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from testbed.host.paths import TOOLS

FIREFOX = Path("/usr/lib/firefox-esr/firefox-esr")
"""Debian's Firefox ESR (firefox-esr); /usr/bin/firefox-esr links to it."""
GECKODRIVER_VERSION = "0.37.1"
"""The geckodriver crate `make setup` builds (setup/setup.sh, step geckodriver)."""
GECKODRIVER = TOOLS / "geckodriver/bin/geckodriver"
CERTUTIL = "/usr/bin/certutil"
"""NSS's certutil (libnss3-tools): the trial profile's trust."""

QUIET_PREFS: Mapping[str, object] = {
    # nothing but the page on the wire
    "network.trr.mode": 5,  # DNS over HTTPS off, by choice
    "network.dns.disablePrefetch": True,
    "network.dns.disableIPv6": True,
    "network.dns.native_https_query": False,
    "network.dns.use_https_rr_as_altsvc": False,
    "network.dns.echconfig.enabled": False,
    "network.dns.http3_echconfig.enabled": False,
    "network.predictor.enabled": False,
    "network.prefetch-next": False,
    "network.http.speculative-parallel-limit": 0,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.proxy.type": 0,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.safebrowsing.provider.google4.updateURL": "",
    "privacy.trackingprotection.enabled": False,
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": False,
    "security.pki.crlite_mode": 0,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "browser.ping-centre.telemetry": False,
    "app.normandy.enabled": False,
    "app.shield.optoutstudies.enabled": False,
    "browser.region.network.url": "",
    "browser.region.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "browser.topsites.contile.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.startup.page": 0,
    "browser.startup.homepage": "about:blank",
    # the replay's leaf is trusted through the profile's NSS database
    "security.enterprise_roots.enabled": False,
    "network.http.http3.disable_when_third_party_roots_found": False,
    # content processes sandboxed as on a user's machine (the default level)
    "security.sandbox.content.level": 4,
}
"""Every Firefox the testbed starts gets these (Browsertime adds its own defaults)."""

STACK_PREFS: Mapping[str, Mapping[str, object]] = {
    "tcp": {"network.http.http3.enable": False, "network.http.http2.enabled": True,
            "network.http.altsvc.enabled": False},
    "quic": {"network.http.http3.enable": True, "network.http.http2.enabled": True,
             "network.http.altsvc.enabled": True},
}
"""What makes Firefox use one stack (the QUIC one needs h3_mapping too)."""

WARM_PREFS: Mapping[str, object] = {
    "security.tls.enable_0rtt_data": True,
    "network.http.http3.enable_0rtt": True,
}
"""A warm visit's: TLS 1.3 early data over TCP and QUIC's 0-RTT (both Firefox's
defaults, named as Chromium's warm visit names its early data switch). The warm-up
itself (clear the caches, close the connections) is the preScript's (hooks/pre.mjs)."""


def h3_mapping(origins: list[tuple[str, int]]) -> str:
    """`network.http.http3.alt-svc-mapping-for-testing`: each (host, port) as its own
    HTTP/3 alternative, known before the first request."""
    return ",".join(f'{host};h3=":{port}"' for host, port in origins)


def stack_prefs(stack: str, origins: list[tuple[str, int]]) -> dict[str, object]:
    """The preferences of one stack for a replay whose HTTPS origins are `origins`."""
    prefs = dict(STACK_PREFS[stack])
    if stack == "quic":
        prefs["network.http.http3.alt-svc-mapping-for-testing"] = h3_mapping(origins)
    return prefs


def hosts_file(ips: Mapping[str, str]) -> str:
    """/etc/hosts for a replay: localhost, then every recorded host (`ips`: host -> IP)."""
    lines = ["127.0.0.1\tlocalhost"]
    lines += [f"{ip}\t{host}" for host, ip in sorted(ips.items())]
    return "\n".join(lines) + "\n"


RESOLV_CONF = "# testbed: no name server; every replayed name is in /etc/hosts\nnameserver 127.0.0.1\noptions attempts:1 timeout:1\n"


def user_js(prefs: Mapping[str, object]) -> str:
    """prefs as lines of a profile's user.js."""
    return "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())


@cache
def version() -> str | None:
    """`Mozilla Firefox 153.7.0esr`, or None when Firefox is missing."""
    from testbed.host import proc

    if not os.access(FIREFOX, os.X_OK):
        return None
    cp = proc.run([str(FIREFOX), "--version"], check=False, timeout=30)
    return cp.stdout.strip() or None


def missing() -> str | None:
    """What of the Firefox stack is not installed, with the fix; None when all is."""
    if not os.access(FIREFOX, os.X_OK):
        return f"{FIREFOX} missing; run `make setup` (apt: firefox-esr)"
    if not os.access(GECKODRIVER, os.X_OK):
        return f"{GECKODRIVER} missing; run `make setup` (step geckodriver)"
    if not os.access(CERTUTIL, os.X_OK):
        return f"{CERTUTIL} missing; run `make setup` (apt: libnss3-tools)"
    return None
