"""The TCP stack's application: one WSGI app answering every request from memory.

nginx terminates TLS 1.3 / HTTP/2 and passes each request over the uwsgi
protocol with the original scheme (UWSGI_SCHEME), host (TESTBED_HOST),
connection serial (TESTBED_CONNECTION) and the connection's TLS facts: resumed
(TESTBED_TLS_RESUMED), early data (TESTBED_EARLY_DATA), server name
(TESTBED_TLS_NAME). The app loads the whole recording when it starts, from the
folder descriptor root checked (`from_environ`), matches with testbed.replay.matching (Mahimahi's rule), and
answers with the recorded status, headers and body: hop-by-hop headers
dropped, content-length set to the body's size. No match: 404, counted as a
miss in the summary (testbed.replay.server_summary).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

import testbed
from testbed.formats import recording as rec
from testbed.replay.matching import Matcher, Request
from testbed.replay.server_summary import Summary

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade",
    # set by the app, or never replayed (the recorder removes them too)
    "content-length", "alt-svc", "alternate-protocol",
})


@dataclass(frozen=True)
class Response:
    status: str
    headers: list[tuple[str, str]]
    body: bytes


def status_line(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"{code} Unknown"


def prepare(exchange: rec.Exchange, body: bytes) -> Response:
    headers = [(k, v) for k, v in exchange.response_headers if k.lower() not in HOP_BY_HOP]
    headers.append(("content-length", str(len(body))))
    return Response(status_line(exchange.status), headers, body)


NOT_FOUND = Response("404 Not Found", [("content-type", "text/plain"),
                                       ("content-length", "24")], b"not in the recording :(\n")


class ReplayApp:
    """WSGI callable serving `recording` from memory."""

    def __init__(self, recording: rec.Recording, summary_path: Path | None = None, *,
                 summary_in_background: bool = False, folder: int | None = None):
        """folder: the recording folder's descriptor to read the bodies from (default:
        opened by its path)."""
        self.recording = recording
        self.matcher = Matcher(recording.exchanges)
        bodies: dict[str | None, bytes] = {None: b""}
        for x in recording.exchanges:
            if x.body not in bodies:
                bodies[x.body] = recording.body(x, folder)
        self.responses = [prepare(x, bodies[x.body]) for x in recording.exchanges]
        self.summary = Summary(summary_path, "uwsgi", testbed.__version__,
                               in_background=summary_in_background)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        scheme = environ.get("wsgi.url_scheme", "http")
        host = environ.get("TESTBED_HOST") or environ.get("HTTP_HOST") or environ.get(
            "SERVER_NAME", "")
        target = wsgi_str(environ.get("REQUEST_URI") or _target_from(environ))
        method = environ.get("REQUEST_METHOD", "GET")
        i = self.matcher.match(Request(scheme, host, method, target))
        response = NOT_FOUND if i is None else self.responses[i]
        body = response.body if method != "HEAD" else b""
        start_response(response.status, list(response.headers))
        return _Counted(body, lambda: self.summary.record(
            url=f"{scheme}://{host}{target}", hit=i is not None, nbytes=len(body),
            connection=environ.get("TESTBED_CONNECTION"),
            resumed=environ.get("TESTBED_TLS_RESUMED") == "r",
            early_data=environ.get("TESTBED_EARLY_DATA") == "1",
            name=environ.get("TESTBED_TLS_NAME") or None))


class _Counted:
    """The response body; counted in the summary once the server has sent it (WSGI calls
    close() then). uWSGI closes the connection to nginx only after close() returns, and
    nginx ends the response at that EOF, so under uWSGI the summary is written by a
    thread (ReplayApp(summary_in_background=True)), not here."""

    def __init__(self, body: bytes, on_close: Callable[[], None]):
        self.body = body
        self.on_close = on_close

    def __iter__(self):
        yield self.body

    def close(self) -> None:
        self.on_close()


def wsgi_str(s: str) -> str:
    """A WSGI "native string" (the raw bytes decoded as latin-1, PEP 3333) as the text
    the recording holds (UTF-8; undecodable bytes kept as surrogates)."""
    return s.encode("latin-1", "replace").decode("utf-8", "surrogateescape")


def _target_from(environ: dict) -> str:
    path = environ.get("PATH_INFO", "/") or "/"
    qs = environ.get("QUERY_STRING", "")
    return f"{path}?{qs}" if qs else path


RECORDING_FD = "TESTBED_REPLAY_RECORDING_FD"
RECORDING = "TESTBED_REPLAY_RECORDING"
SUMMARY = "TESTBED_REPLAY_SUMMARY"
"""The app's environment (testbed.replay.env sets it; never uWSGI's command line, which
would expand `$(VAR)` and `@(file)` in a path): the descriptor of the recording folder
root opened and checked, inherited; that folder's path, for messages only; the summary
file."""


def from_environ(env: Mapping[str, str] = os.environ) -> ReplayApp:
    """The app uWSGI loads: the recording in the inherited folder descriptor (every file
    read relative to it, so what is served is the folder root checked, whatever its
    path now leads to), the summary written off the response path."""
    fd = int(env[RECORDING_FD])
    try:
        recording = rec.load_folder(fd, Path(env[RECORDING]))
        return ReplayApp(recording, Path(env[SUMMARY]), summary_in_background=True,
                         folder=fd)
    finally:
        os.close(fd)
