"""The recording format: one folder per recorded site.

    recordings/NAME/
        manifest.json     URL, versions, origins with IPs, every exchange
        bodies/<sha256>   each distinct response body once, by content hash

`schemas/recording.schema.json` is the format's single definition; the
recorder writes it, both replay servers validate against it on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jsonschema

from testbed.errors import InputError

FORMAT = "testbed-recording/1"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "recording.schema.json"
RECORDINGS_DIR = Path(__file__).resolve().parent.parent / "recordings"

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Origin:
    """A (scheme, host, port) that the page contacted, and the IP that answered."""

    scheme: str
    host: str
    port: int
    ip: str


@dataclass(frozen=True)
class Exchange:
    """One recorded request and the response the origin sent."""

    scheme: str
    host: str
    port: int
    ip: str
    method: str
    target: str
    """Path plus query string, as requested."""
    request_headers: Headers
    status: int
    response_headers: Headers
    """Normalised: no transfer-encoding, alt-svc or alternate-protocol."""
    body: str | None
    """SHA-256 of the body bytes (a file in bodies/), or None."""
    body_size: int = 0


@dataclass(frozen=True)
class Recording:
    path: Path
    name: str
    url: str
    recorded_at: str
    loads: int
    origins: tuple[Origin, ...]
    exchanges: tuple[Exchange, ...]
    chromium_version: str = ""
    mitmproxy_version: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def ips(self) -> list[str]:
        """Distinct server IPs, sorted."""
        return sorted({o.ip for o in self.origins}, key=_ip_key)

    @property
    def hosts(self) -> list[str]:
        return sorted({o.host for o in self.origins})

    @property
    def total_bytes(self) -> int:
        return sum(e.body_size for e in self.exchanges)

    def body_path(self, sha: str) -> Path:
        return self.path / "bodies" / sha

    def body(self, exchange: Exchange) -> bytes:
        if exchange.body is None:
            return b""
        return self.body_path(exchange.body).read_bytes()


def _ip_key(ip: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in ip.split("."))
    except ValueError:
        return (999,)


@cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def resolve(name_or_path: str | os.PathLike) -> Path:
    """A recording named in recordings/, or a path to a recording folder."""
    p = Path(name_or_path)
    if p.is_dir():
        return p
    candidate = RECORDINGS_DIR / str(name_or_path)
    if candidate.is_dir():
        return candidate
    raise InputError(f"{name_or_path}: no such recording (looked in {RECORDINGS_DIR} and as a path)")


def load(name_or_path: str | os.PathLike, check_bodies: bool = True) -> Recording:
    """Load and validate a recording; InputError names the file and what is wrong."""
    root = resolve(name_or_path)
    manifest = root / "manifest.json"
    try:
        data = json.loads(manifest.read_text())
    except FileNotFoundError:
        raise InputError(f"{manifest}: missing (not a recording folder)") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{manifest}: not valid JSON: {e.msg} at line {e.lineno}") from None
    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise InputError(f"{manifest}: key {where}: {e.message}") from None
    origins = tuple(Origin(**o) for o in data["origins"])
    exchanges = tuple(
        Exchange(
            **{
                **x,
                "request_headers": tuple(tuple(h) for h in x["request_headers"]),
                "response_headers": tuple(tuple(h) for h in x["response_headers"]),
            }
        )
        for x in data["exchanges"]
    )
    if check_bodies:
        for i, x in enumerate(exchanges):
            if x.body is not None and not (root / "bodies" / x.body).is_file():
                raise InputError(f"{manifest}: key exchanges/{i}/body: bodies/{x.body} is missing")
    known = {"format", "name", "url", "recorded_at", "loads", "origins", "exchanges",
             "requests", "bytes", "chromium_version", "mitmproxy_version"}
    return Recording(
        path=root,
        name=data["name"],
        url=data["url"],
        recorded_at=data["recorded_at"],
        loads=data["loads"],
        origins=origins,
        exchanges=exchanges,
        chromium_version=data.get("chromium_version", ""),
        mitmproxy_version=data.get("mitmproxy_version", ""),
        extra={k: v for k, v in data.items() if k not in known},
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _exchange_sort_key(x: dict) -> tuple:
    return (x["scheme"], x["host"], x["port"], x["method"], x["target"], x["body"] or "", x["status"])


def write(out_dir: Path, meta: dict, exchanges: list[tuple[dict, bytes]]) -> Path:
    """Write a recording atomically: a temporary folder renamed when complete.

    meta: name, url, recorded_at, loads and optional versions.
    exchanges: (exchange dict without body/body_size, body bytes) pairs.
    Origins, counts and sizes are derived here, in a deterministic order.
    """
    out_dir = Path(out_dir)
    final = out_dir / meta["name"]
    if final.exists():
        raise InputError(f"{final}: already exists (choose another --name or remove it)")
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{meta['name']}.", dir=out_dir))
    try:
        (tmp / "bodies").mkdir()
        rows, seen = [], set()
        for x, body in exchanges:
            digest = sha256(body) if body else None
            if digest is not None and not (tmp / "bodies" / digest).exists():
                (tmp / "bodies" / digest).write_bytes(body)
            row = {**x, "body": digest, "body_size": len(body)}
            key = json.dumps(row, sort_keys=True)
            if key not in seen:
                seen.add(key)
                rows.append(row)
        rows.sort(key=_exchange_sort_key)
        origins = sorted(
            {(r["scheme"], r["host"], r["port"], r["ip"]) for r in rows},
        )
        manifest = {
            "format": FORMAT,
            **meta,
            "origins": [dict(zip(("scheme", "host", "port", "ip"), o)) for o in origins],
            "requests": len(rows),
            "bytes": sum(r["body_size"] for r in rows),
            "exchanges": rows,
        }
        jsonschema.validate(manifest, schema())
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
        os.chmod(tmp, 0o755)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
