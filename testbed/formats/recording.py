"""The recording format: one folder per recorded site.

    recordings/NAME/
        manifest.json     URL, versions, origins with IPs, every exchange
        bodies/<sha256>   each distinct response body once, by content hash

`schemas/recording.schema.json` is the format's single definition; the
recorder writes it, both replay servers validate against it on load.

A recording may come from someone else, so `load` checks all of it before
anything is served or written: the schema, the rules of
testbed.formats.recording_rules, and every body: a regular file in bodies/ (opened
without following a symbolic link), of the manifest's size, whose SHA-256 is
its name. The folder is opened once and every file of it is read relative to
that descriptor, so a folder put in its place after it was found (a symbolic
link to another, another folder) is never read from; a symbolic link as the
folder's own last step is followed only in a folder that only root or you can
change (as testbed.formats.recording_search follows one). `Recording.body` opens and
checks a body the same way again. Bodies are at most 256 MiB each and 1 GiB in all
(the schema's `body_size` and `bytes`): both replay servers hold them in memory, and
a body's file size is checked before a byte of it is read.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from testbed.errors import InputError
from testbed.formats import recording_rules, recording_search
from testbed.host import safefs
from testbed.host.paths import RECORDING_SCHEMA, RECORDINGS_DIR  # noqa: F401 (re-exported)

FORMAT = "testbed-recording/1"
SCHEMA_PATH = RECORDING_SCHEMA
MAX_MANIFEST_BYTES = 256 * 1024 * 1024

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
    seen_in: int | None = None
    """How many of the recording's loads asked for this request; None: not counted
    (a recording made before the recorder counted)."""


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
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    content_sha256: str = field(default="", compare=False)
    """What the replay serves, digested (see `content_digest`)."""

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

    def body(self, exchange: Exchange, folder: int | None = None) -> bytes:
        """The body's bytes, checked again as on load (regular file, size, hash); read
        from `folder`, the recording folder's descriptor, if given (see `load_folder`)."""
        if exchange.body is None:
            return b""
        i = next(i for i, x in enumerate(self.exchanges) if x.body == exchange.body)
        with ExitStack() as exits:
            top = exits.enter_context(open_folder(self.path)) if folder is None else folder
            bodies = exits.enter_context(_bodies_dir(top, self.path))
            return _read_body(bodies, self.path / "manifest.json", i, exchange, keep=True)


def _ip_key(ip: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in ip.split("."))
    except ValueError:
        return (999,)


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return loaded


def resolve(name_or_path: str | os.PathLike[str], base: Path | None = None) -> Path:
    """The recording folder a name or path stands for (testbed.formats.recording_search: the
    search path, paths against `base` or the current folder); InputError naming every
    place looked in if there is none."""
    if isinstance(name_or_path, os.PathLike) and Path(name_or_path).is_absolute():
        p = Path(name_or_path)
        if p.is_dir():
            return p
        raise InputError(f"{p}: no such recording folder")
    text = os.fspath(name_or_path)
    if isinstance(name_or_path, os.PathLike) and not text.startswith("."):
        text = f"./{text}"  # a relative Path object is a path, never a name
    return recording_search.find(text, base)


def load(name_or_path: str | os.PathLike[str], base: Path | None = None) -> Recording:
    """Load and check a recording; InputError names the file, the key and what is wrong.
    A name is looked up in the search path, a relative path against `base` (default:
    the current folder)."""
    root = resolve(name_or_path, base)
    with open_folder(root) as top:
        return _load(root, top)


def load_folder(fd: int, shown: Path) -> Recording:
    """Load and check the recording in the open folder `fd` (as `load` checks one): every
    file is read relative to it, none by path. A replay server gets the descriptor root
    opened and checked (testbed.replay.env); `shown` is its path, for messages only."""
    return _load(shown, fd)


def _load(root: Path, top: int) -> Recording:
    """The recording in the folder `top` (an open descriptor of root)."""
    manifest = root / "manifest.json"
    data = _read_manifest(top, manifest)
    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as e:
        raise InputError(f"{manifest}: {_schema_message(e)}") from None
    try:
        recording_rules.check(data)
    except recording_rules.RuleError as e:
        raise InputError(f"{manifest}: {e}") from None
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
    _check_bodies(top, root, exchanges)
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
        content_sha256=content_digest(data),
    )


@contextmanager
def open_folder(root: Path) -> Iterator[int]:
    """A descriptor of the recording folder, opened once (see the module's note); closed
    when the block ends."""
    try:
        try:
            fd = safefs.open_folder(root)
        except safefs.UnsafePath:
            fd = safefs.open_folder(_followed(root))
    except (OSError, safefs.UnsafePath) as e:
        why = e.strerror if isinstance(e, OSError) else "not a folder"
        raise InputError(f"{root}: cannot open the recording folder: {why}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _followed(root: Path) -> Path:
    """Where the symbolic link `root` leads, if the folder holding it is only root's or
    yours to change; InputError otherwise."""
    holder = Path(os.path.realpath(root.parent))
    if not os.path.islink(root):
        raise InputError(f"{root}: not a recording folder (expected a folder)")
    try:
        safefs.check_root_dir(holder)
    except safefs.UnsafePath:
        raise InputError(f"{root}: a symbolic link in {holder}, which another user can "
                         "change; not followed (expected a recording folder)") from None
    return Path(os.path.realpath(root))


def _read_manifest(top: int, manifest: Path) -> dict[str, Any]:
    """manifest.json in the folder `top`: a regular file (not followed if a symbolic
    link), parsed."""
    try:
        os.stat("manifest.json", dir_fd=top, follow_symlinks=False)
    except FileNotFoundError:
        raise InputError(f"{manifest}: missing (not a recording folder)") from None
    fd = _open_regular(top, "manifest.json", f"{manifest}: the manifest")
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_MANIFEST_BYTES:
            raise InputError(f"{manifest}: {size} bytes, expected at most {MAX_MANIFEST_BYTES}")
        raw = f.read(MAX_MANIFEST_BYTES + 1)
    try:
        data: dict[str, Any] = json.loads(raw)  # an object: the schema checks it next
    except UnicodeDecodeError:
        raise InputError(f"{manifest}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{manifest}: not valid JSON: {e.msg} at line {e.lineno}") from None
    except RecursionError:
        raise InputError(f"{manifest}: not valid JSON: nested too deep") from None
    return data


def _schema_message(e: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
    rule = e.schema  # a pattern's rule is an object; its instance, a string
    if e.validator in ("pattern", "maximum") and isinstance(rule, Mapping) \
            and "description" in rule:
        return (f"key {where}: expected {rule['description']}, "
                f"got {recording_rules.short(str(e.instance))}")
    return f"key {where}: {_one_line(e.message)}"


def _one_line(text: str, limit: int = 300) -> str:
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[:limit] + "..."


def _open_regular(dir_fd: int, name: str, what: str) -> int:
    """A descriptor of `name` in dir_fd if it is a regular file: a symbolic link is not
    followed, and a FIFO or device is not waited on. InputError("WHAT is ...") if not."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as e:
        why: dict[int | None, str] = {errno.ENOENT: "missing",
                                      errno.ELOOP: "a symbolic link, expected a regular file"}
        raise InputError(f"{what} is {why.get(e.errno, f'unreadable: {e.strerror}')}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{what} is not a regular file")
    return fd


@contextmanager
def _bodies_dir(top: int, root: Path) -> Iterator[int]:
    """A descriptor of bodies/ in the folder `top` (root), not followed if a symbolic
    link."""
    try:
        fd = os.open("bodies", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=top)
    except OSError as e:
        link = _is_link(top, "bodies")  # O_NOFOLLOW|O_DIRECTORY: ENOTDIR or ELOOP
        reasons: dict[int | None, str] = {errno.ENOENT: "missing", errno.ENOTDIR: "not a folder"}
        what = "a symbolic link, expected a folder" if link else reasons.get(e.errno, e.strerror)
        raise InputError(f"{root / 'manifest.json'}: key exchanges: bodies/ is {what}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _is_link(top: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_body(bodies_fd: int, manifest: Path, i: int, x: Exchange, keep: bool) -> bytes:
    """Check exchange i's body: a regular file in bodies/ of body_size bytes whose SHA-256
    is its name. Its bytes if keep (else b"")."""
    key = f"{manifest}: key exchanges/{i}/body"
    assert x.body is not None  # called for the exchanges that have a body
    fd = _open_regular(bodies_fd, x.body, f"{key}: bodies/{x.body}")
    with os.fdopen(fd, "rb") as f:
        actual = os.fstat(f.fileno()).st_size
        if actual != x.body_size:
            raise InputError(f"{key}_size: {x.body_size}, but bodies/{x.body} has {actual} bytes")
        h, data, got = hashlib.sha256(), b"", 0
        if keep:  # one buffer of the body's size (at most the schema's maximum)
            data = f.read(x.body_size + 1)
            got = len(data)
            h.update(data)
        while not keep and got <= x.body_size and (chunk := f.read(1 << 20)):
            got += len(chunk)
            h.update(chunk)
    if got != x.body_size or h.hexdigest() != x.body:
        raise InputError(f"{key}: bodies/{x.body} does not hash to its name "
                         "(expected the SHA-256 of its bytes)")
    return data


def _check_bodies(top: int, root: Path, exchanges: tuple[Exchange, ...]) -> None:
    """Every body once, and every exchange that shares it with the same size."""
    manifest = root / "manifest.json"
    first: dict[str, int] = {}
    for i, x in enumerate(exchanges):
        if x.body is None:
            continue
        j = first.setdefault(x.body, i)
        if x.body_size != exchanges[j].body_size:
            raise InputError(f"{manifest}: key exchanges/{i}/body_size: {x.body_size}, but "
                             f"exchanges/{j} has {exchanges[j].body_size} for the same body")
    if not first:
        return
    with _bodies_dir(top, root) as bodies:
        for i in first.values():
            _read_body(bodies, manifest, i, exchanges[i], keep=False)


VOLATILE_HEADERS = frozenset({"date"})
"""Response headers that differ between two recordings of one site by the same code
(the clock's time when the origin answered), left out of `content_digest`."""

def content_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of what a recording's manifest says the replay serves, in a canonical
    form: two recordings of the same site by the same code digest equal although their
    manifest.json files differ.

    Left out: `recorded_at`, the response headers of VOLATILE_HEADERS, `requests` and
    `bytes` (they follow from the exchanges), and the order of the exchanges and of the
    origins. Kept: every other top-level key, the origins with their IPs, and every
    exchange's scheme, host, port, IP, method, target, request headers, status, other
    response headers (in their order), body hash and size. The replay answers a request
    with the earliest exchange of its scheme, host (any port), method and target
    (testbed.replay.matching), so which one is earliest, where a host is recorded on two
    ports, is kept too. `manifest` is a manifest checked as `load` checks it.
    """
    rows = [_canonical_exchange(x) for x in manifest["exchanges"]]
    first: dict[str, str] = {}
    for x, row in zip(manifest["exchanges"], rows, strict=True):
        key = json.dumps([x["scheme"].lower(), x["host"].lower(), x["method"], x["target"]])
        first.setdefault(key, row)
    doc = {
        **{k: v for k, v in manifest.items() if k not in ("recorded_at", "requests", "bytes",
                                                            "origins", "exchanges")},
        "origins": sorted(json.dumps(o, sort_keys=True) for o in manifest["origins"]),
        "exchanges": sorted(rows),
        "served": sorted(first.items()),
    }
    return sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())


def _canonical_exchange(x: dict[str, Any]) -> str:
    """An exchange without its volatile response headers, as canonical JSON."""
    return json.dumps({**x, "response_headers": [[k, v] for k, v in x["response_headers"]
                                                 if k.lower() not in VOLATILE_HEADERS]},
                      sort_keys=True, separators=(",", ":"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _exchange_sort_key(x: dict[str, Any]) -> tuple[Any, ...]:
    return (x["scheme"], x["host"], x["port"], x["method"], x["target"], x["body"] or "", x["status"])


def write(out_dir: Path, meta: dict[str, Any],
          exchanges: list[tuple[dict[str, Any], bytes]]) -> Path:
    """Write a recording atomically: a temporary folder renamed when complete.

    meta: name, url, recorded_at, loads and optional versions.
    exchanges: (exchange dict without body/body_size, body bytes) pairs.
    Origins, counts and sizes are derived here, in a deterministic order; an
    origin answered from several IPs (DNS round robin between loads) keeps the
    first one, since a replay resolves a host to one IP. The manifest is checked
    as `load` checks it, so a recording that would not load is not written.
    """
    out_dir = Path(out_dir)
    final: Path = out_dir / meta["name"]
    if final.exists():
        raise InputError(f"{final}: already exists (choose another --name or remove it)")
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{meta['name']}.", dir=out_dir))
    try:
        (tmp / "bodies").mkdir()
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        ips: dict[tuple[Any, ...], Any] = {}
        for x, body in exchanges:
            digest = sha256(body) if body else None
            if digest is not None and not (tmp / "bodies" / digest).exists():
                (tmp / "bodies" / digest).write_bytes(body)
            ip = ips.setdefault((x["scheme"], x["host"], x["port"]), x["ip"])
            row = {**x, "ip": ip, "body": digest, "body_size": len(body)}
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
        try:
            jsonschema.validate(manifest, schema())
            recording_rules.check(manifest)
        except jsonschema.ValidationError as e:
            raise InputError(f"{final / 'manifest.json'}: {_schema_message(e)}") from None
        except recording_rules.RuleError as e:
            raise InputError(f"{final / 'manifest.json'}: {e}") from None
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
        os.chmod(tmp, 0o755)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
