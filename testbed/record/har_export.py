"""Export a recording as HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/).

    har = to_har(recording.load("local-news"))   # a dict, json.dumps it

One page (the recorded URL) with one entry per exchange, in the recording's
order. A recording keeps no timings, so every entry starts at the recording
time and its timings are 0; the HTTP version is not recorded
(`unknown`). Response content is given decoded (HAR's
`content.text`, base64), as the spec asks; `bodySize` is the size on the
wire and `content.compression` the difference. Decoding stops at
testbed.record.decoding.MAX_DECODED bytes a body (an InputError naming the body);
a body that does not decode is given as stored. `serverIPAddress` is the IP
that answered.
"""

from __future__ import annotations

import base64
from http import HTTPStatus
from urllib.parse import parse_qsl, urlsplit

from testbed import __version__
from testbed.errors import InputError
from testbed.formats.recording import Exchange, Recording
from testbed.record import decoding

PAGE_ID = "page_1"


def url_of(x: Exchange) -> str:
    default = {"http": 80, "https": 443}[x.scheme]
    netloc = x.host if x.port == default else f"{x.host}:{x.port}"
    return f"{x.scheme}://{netloc}{x.target}"


def _header(headers, name: str) -> str | None:
    for k, v in headers:
        if k == name:
            return v
    return None


def _headers(headers) -> list[dict]:
    return [{"name": k, "value": v} for k, v in headers]


def _decoded(body: bytes, encoding: str | None, where: str) -> bytes:
    """The body with its content-encoding undone (at most decoding.MAX_DECODED bytes);
    as stored if it does not decode."""
    try:
        return decoding.decode(body, encoding)
    except decoding.DecodedTooLarge as e:
        raise InputError(f"{where}: {e}; HAR export stops there") from None
    except ValueError:
        return body


def _cookies(headers, name: str) -> list[dict]:
    out = []
    for k, v in headers:
        if k != name:
            continue
        parts = v.split(";") if name == "cookie" else [v.split(";", 1)[0]]
        for part in parts:
            n, sep, val = part.strip().partition("=")
            if sep:
                out.append({"name": n, "value": val})
    return out


def entry(rec: Recording, x: Exchange, bodies: bool = True, index: int | None = None) -> dict:
    """The HAR entry of exchange x (index: its place in the recording, for messages)."""
    body = rec.body(x) if bodies else b""
    encoding = _header(x.response_headers, "content-encoding")
    i = rec.exchanges.index(x) if index is None and bodies and body else index
    where = f"{rec.path / 'manifest.json'}: key exchanges/{i}/body"
    decoded = _decoded(body, encoding, where) if bodies else b""
    size = len(decoded) if bodies else x.body_size
    content: dict = {
        "size": size,
        "mimeType": _header(x.response_headers, "content-type") or "x-unknown",
    }
    if bodies and body:
        content["compression"] = len(decoded) - len(body)
        content["text"] = base64.b64encode(decoded).decode()
        content["encoding"] = "base64"
    try:
        reason = HTTPStatus(x.status).phrase
    except ValueError:
        reason = ""
    return {
        "pageref": PAGE_ID,
        "startedDateTime": rec.recorded_at,
        "time": 0,
        "request": {
            "method": x.method,
            "url": url_of(x),
            "httpVersion": "unknown",
            "cookies": _cookies(x.request_headers, "cookie"),
            "headers": _headers(x.request_headers),
            "queryString": [{"name": k, "value": v}
                            for k, v in parse_qsl(urlsplit(x.target).query,
                                                  keep_blank_values=True)],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": x.status,
            "statusText": reason,
            "httpVersion": "unknown",
            "cookies": _cookies(x.response_headers, "set-cookie"),
            "headers": _headers(x.response_headers),
            "content": content,
            "redirectURL": _header(x.response_headers, "location") or "",
            "headersSize": -1,
            "bodySize": x.body_size,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
        "serverIPAddress": x.ip,
    }


def to_har(rec: Recording, bodies: bool = True) -> dict:
    """The recording as a HAR 1.2 document (a dict ready for json.dumps)."""
    log: dict = {
        "version": "1.2",
        "creator": {"name": "testbed", "version": __version__},
        "pages": [{
            "startedDateTime": rec.recorded_at,
            "id": PAGE_ID,
            "title": rec.url,
            "pageTimings": {"onContentLoad": -1, "onLoad": -1},
        }],
        "entries": [entry(rec, x, bodies, i) for i, x in enumerate(rec.exchanges)],
        "comment": f"testbed recording {rec.name}: {rec.loads} load(s) merged, "
                   "no timings recorded",
    }
    if rec.chromium_version:
        log["browser"] = {"name": "Chromium", "version": rec.chromium_version}
    return {"log": log}
