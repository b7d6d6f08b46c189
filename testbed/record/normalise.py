"""Header normalisation of recorded responses, as the paper did.

Pure functions over header lists: no transfer-encoding (the body is stored
de-chunked), no alt-svc or alternate-protocol (a replayed page must not be
told to switch protocol), no x-accel-* (nginx would obey it on the TCP stack
alone: recording_rules.SERVER_DIRECTIVES), content-length equal to the stored body's size;
every other header kept in order, names lower-case.
"""

from __future__ import annotations

from collections.abc import Iterable

from testbed.formats.recording_rules import REMOVED_HEADERS as DROPPED  # the one list
from testbed.formats.recording_rules import SERVER_DIRECTIVES

Header = tuple[str, str]


def response_headers(headers: Iterable[Iterable[str]], body_size: int,
                     status: int = 200, method: str = "GET") -> tuple[Header, ...]:
    """Normalised response headers for a body of body_size bytes.

    content-length is set (replacing any value the server sent, where the
    first one stood) except where HTTP forbids a body length: 1xx, 204 and
    304 responses, and HEAD requests keep the server's header as sent.
    """
    out: list[Header] = []
    length_at = None
    for name, value in headers:
        name = name.lower()
        if name in DROPPED or name.startswith(SERVER_DIRECTIVES):
            continue
        if name == "content-length":
            if length_at is None:
                length_at = len(out)
                out.append((name, value))
            continue
        out.append((name, value))
    if status < 200 or status in (204, 304) or method.upper() == "HEAD":
        return tuple(out)
    length = ("content-length", str(body_size))
    if length_at is None:
        out.append(length)
    else:
        out[length_at] = length
    return tuple(out)


def request_headers(headers: Iterable[Iterable[str]]) -> tuple[Header, ...]:
    """Request headers as sent, names lower-case."""
    return tuple((name.lower(), value) for name, value in headers)
