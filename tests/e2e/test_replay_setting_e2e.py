"""End to end, from the wire: `testbed replay --setting NAME` serves what the setting
says. Under tcp-plus-0rtt a TLS client that returns with the session ticket of its
first connection resumes the session and has its early data accepted (openssl s_client
in the replay's client namespace); under tcp-plus it gets no ticket to return with."""

from __future__ import annotations

import pytest
from support.paths import ROOT, run_testbed

pytestmark = pytest.mark.e2e

NEWS = str(ROOT / "recordings" / "local-news")

# Run as the testbed user in the client namespace: two TLS 1.3 connections to the page's
# server (its IP from the resolver rules), the second with the first's session and a
# request as early data; prints s_client's session and early-data lines of each.
PROBE = r"""
set -e
eval "$(python3 -I -c '
import os, urllib.parse
host = urllib.parse.urlsplit(os.environ["TESTBED_URL"]).hostname
rules = dict(r.split()[1:3] for r in os.environ["TESTBED_HOST_RESOLVER_RULES"].split(",")
             if r.strip().startswith("MAP ") and "~NOTFOUND" not in r)
print(f"host={host} ip={rules[host]}")')"
d=$(mktemp -d)
printf 'GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" > "$d/req"
timeout 20 openssl s_client -connect "$ip:443" -servername "$host" -tls1_3 \
    -sess_out "$d/sess" -ign_eof < "$d/req" > "$d/first" 2>&1 || true
timeout 20 openssl s_client -connect "$ip:443" -servername "$host" -tls1_3 \
    -sess_in "$d/sess" -early_data "$d/req" < /dev/null > "$d/second" 2>&1 || true
echo "first: $(grep -E '^(New|Reused),' "$d/first" | head -1)"
echo "second: $(grep -E '^(New|Reused),' "$d/second" | head -1)"
grep -E 'Early data was' "$d/second" || echo "early data: none sent"
rm -rf "$d"
"""


def probe(setting: str) -> str:
    cp = run_testbed("replay", NEWS, "--setting", setting, "--", "sh", "-c", PROBE,
                     timeout=180)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return cp.stdout


def test_tcp_plus_0rtt_resumes_and_accepts_early_data():
    out = probe("tcp-plus-0rtt")
    assert "first: New, TLSv1.3" in out, out
    assert "second: Reused, TLSv1.3" in out, out
    assert "Early data was accepted" in out, out


def test_tcp_plus_issues_no_ticket_to_resume_with():
    out = probe("tcp-plus")
    assert "first: New, TLSv1.3" in out, out
    assert "Reused" not in out and "Early data was accepted" not in out, out
