"""The TCP stack's configuration: nginx in front of one uWSGI app.

Pure functions from a recording's listeners to the nginx config text and
the uWSGI argv; testbed.replay.env starts them.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

HERE = Path(__file__).resolve().parent
BUFFER = 64 * 1024


@dataclass(frozen=True, order=True)
class Listen:
    ip: str
    port: int
    tls: bool


def listeners(recording, stack: str) -> list[Listen]:
    """Every address a stack serves: 443 (TLS) and, for TCP, 80 on every recorded IP,
    plus any other recorded (ip, port)."""
    out = set()
    for ip in recording.ips:
        out.add(Listen(ip, 443, True))
        if stack == "tcp":
            out.add(Listen(ip, 80, False))
    for o in recording.origins:
        if o.scheme == "https":
            out.add(Listen(o.ip, o.port, True))
        elif stack == "tcp":
            out.add(Listen(o.ip, o.port, False))
    if stack == "tcp":
        tls = {(x.ip, x.port) for x in out if x.tls}
        clash = tls & {(x.ip, x.port) for x in out if not x.tls}
        if clash:
            ip, port = min(clash)
            raise ValueError(f"{ip}:{port} is recorded both as http and https")
    return sorted(out)


@dataclass(frozen=True)
class Server:
    """A server block of its own: the listeners served with one certificate."""

    cert: Path
    key: Path
    listens: tuple[Listen, ...]


@dataclass(frozen=True)
class NginxConfig:
    prefix: Path
    """The servers' own folder (the testbed user's): pid, error log, temp paths."""
    cert: Path
    key: Path
    socket: Path
    """uWSGI's unix socket."""
    listens: tuple[Listen, ...]
    largest_body: int = 0
    """Bytes of the largest recorded body; sizes nginx's memory buffers."""
    workers: int = 1
    access_log: bool = False
    error_level: str = "warn"
    session_tickets: bool = False
    """Issue TLS session tickets (resumption); off: every handshake is a full one."""
    early_data: bool = False
    """Accept TLS 1.3 early data (with session_tickets)."""
    servers: tuple[Server, ...] = ()
    """A server block per certificate (a `split` layout, testbed.replay.layout), each
    with its listeners; none: one block of `listens` with `cert`."""


def buffers_for(largest_body: int) -> int:
    """64 KiB buffers enough to hold the largest response whole (at least 8)."""
    return max(8, math.ceil(largest_body / BUFFER) + 2)


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    return env.get_template("nginx.conf.j2")


def render(conf: NginxConfig) -> str:
    if not conf.listens:
        raise ValueError("nginx needs at least one listen address")
    blocks: list[tuple[Path | None, Path | None, tuple[Listen, ...]]] = (
        [(s.cert, s.key, s.listens) for s in conf.servers] or [(None, None, conf.listens)])
    return _template().render(
        prefix=conf.prefix, cert=conf.cert, key=conf.key, socket=conf.socket,
        servers=blocks, buffers=buffers_for(conf.largest_body), workers=conf.workers,
        access_log=f"{conf.prefix}/nginx-access.log" if conf.access_log else "off",
        error_level=conf.error_level, session_tickets=conf.session_tickets,
        early_data=conf.early_data)


def nginx_argv(prefix: Path, conf_path: Path) -> list[str]:
    return ["nginx", "-p", str(prefix), "-c", str(conf_path), "-e",
            str(Path(prefix) / "nginx-error.log"), "-g", "daemon off;"]


def uwsgi_argv(*, socket: Path, threads: int = 1, venv: Path | None = None) -> list[str]:
    """One uWSGI process (a few threads) running testbed.replay.wsgi:application.

    uWSGI expands `$(VAR)`, `@(file)` and more in its options, so no path a user
    chose is among them: the recording reaches the app through the process's
    environment (testbed.replay.app.from_environ). The socket is in the replay's own
    folder and the venv is the installed one's; either holding `$(`, `@(` or `%(`
    is refused rather than expanded."""
    venv = venv or Path(sys.prefix)
    for path in (socket, venv):
        if any(mark in str(path) for mark in ("$(", "@(", "%(")):
            raise ValueError(f"{path}: uWSGI would expand $(, @( or %( in it")
    return [
        "uwsgi", "--plugin", "python3", "--strict", "--die-on-term",
        "--need-app", "--processes", "1", "--threads", str(threads), "--enable-threads",
        "--socket", str(socket), "--chmod-socket=600",
        "--home", str(venv),
        "--module", "testbed.replay.wsgi:application",
        "--buffer-size", "65535",
        "--disable-logging",
    ]
