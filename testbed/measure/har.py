"""What a trial's HAR proves: the protocol of every request, per iteration.

Browsertime writes one HAR for all iterations of a block: one page per
iteration (titled "<url> run <N>") and entries pointing to their page. Chromium
reports each response's protocol (`h2`, `h3`, `http/1.1`; older builds
`http/2+quic/43`), which the HAR keeps as `response.httpVersion`.
"""

from __future__ import annotations

import re
from collections import Counter

_RUN = re.compile(r" run (\d+)$")


def normalise(version: str) -> str:
    """One name per protocol: h3, h2, http/1.1, http/1.0, or the value lower-cased."""
    v = (version or "").strip().lower()
    if v in ("h3", "http/3", "http/3.0") or v.startswith(("h3-", "http/2+quic")) or "quic" in v:
        return "h3"
    if v in ("h2", "http/2", "http/2.0"):
        return "h2"
    return v or "unknown"


def expected_protocol(stack: str) -> str:
    """The protocol every request of a trial over `stack` must use."""
    return {"quic": "h3", "tcp": "h2"}[stack]


def page_ids(har: dict) -> dict[int, str]:
    """Iteration number -> HAR page id (from the page titles Browsertime writes)."""
    out: dict[int, str] = {}
    for page in har.get("log", {}).get("pages", []):
        m = _RUN.search(page.get("title", ""))
        if m:
            out[int(m.group(1))] = page["id"]
    return out


def iteration(har: dict, index: int) -> dict | None:
    """The HAR of one iteration (its page and entries), or None if it has no page."""
    page_id = page_ids(har).get(index)
    if page_id is None:
        return None
    log = har.get("log", {})
    return {"log": {
        **{k: v for k, v in log.items() if k not in ("pages", "entries")},
        "pages": [p for p in log.get("pages", []) if p.get("id") == page_id],
        "entries": [e for e in log.get("entries", []) if e.get("pageref") == page_id],
    }}


def protocols(har: dict) -> dict[str, int]:
    """Protocol -> number of requests, over the HAR's entries (data: URLs excluded)."""
    counts: Counter[str] = Counter()
    for entry in har.get("log", {}).get("entries", []):
        url = entry.get("request", {}).get("url", "")
        if url.startswith(("data:", "blob:")):
            continue
        counts[normalise(entry.get("response", {}).get("httpVersion", ""))] += 1
    return dict(sorted(counts.items()))


def requests(har: dict) -> int:
    return sum(protocols(har).values())
