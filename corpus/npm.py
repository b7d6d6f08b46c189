"""npm packages at pinned versions: the lock, the download cache, the files.

    lock = load_lock()                       # corpus/packages.lock.json
    pkgs = fetch_all(lock, registry, cache)  # every tarball, checked, or one InputError
    pkgs["jquery"].file("dist/jquery.min.js")

A tarball is fetched once from the registry (npm's layout:
REGISTRY/NAME/-/BASENAME-VERSION.tgz), checked against the lock's sha512
`integrity` (as npm's package-lock has it), and kept in the cache under its
digest; it is checked again on every use. A download goes to a temporary
file renamed when complete, so the cache never holds half a tarball.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from testbed.errors import InputError

LOCK = Path(__file__).resolve().parent / "packages.lock.json"
DEFAULT_REGISTRY = "https://registry.npmjs.org/"
TIMEOUT_S = 30
MAX_TARBALL = 64 * 1024 * 1024


def default_registry() -> str:
    return os.environ.get("npm_config_registry") or DEFAULT_REGISTRY


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "testbed" / "corpus"


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    integrity: str
    """"sha512-<base64>", as the registry publishes it."""

    def tarball_url(self, registry: str) -> str:
        base = self.name.rsplit("/", 1)[-1]
        return f"{registry.rstrip('/')}/{self.name}/-/{base}-{self.version}.tgz"

    @property
    def sha512(self) -> bytes:
        return base64.b64decode(self.integrity.removeprefix("sha512-"))


def load_lock(path: Path = LOCK) -> dict[str, Locked]:
    try:
        data = json.loads(path.read_text())
        pkgs = data["packages"]
        return {name: Locked(name, e["version"], e["integrity"]) for name, e in pkgs.items()}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: key packages: expected {{name: {{version, integrity}}}}, "
                         f"{type(e).__name__}: {e}") from None


def write_lock(entries: dict[str, Locked], path: Path = LOCK) -> None:
    data = {"lockfileVersion": 1,
            "about": "npm packages of the corpus (corpus/catalog.py); written by "
                     "`python -m corpus lock`",
            "packages": {n: {"version": e.version, "integrity": e.integrity}
                         for n, e in sorted(entries.items())}}
    path.write_text(json.dumps(data, indent=1) + "\n")


def _get(url: str, what: str, limit: int) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            body = r.read(limit + 1)
    except urllib.error.HTTPError as e:
        raise InputError(f"cannot fetch {what} from {url}: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise InputError(f"cannot fetch {what} from {url}: {reason}") from None
    if len(body) > limit:
        raise InputError(f"cannot fetch {what} from {url}: more than {limit} bytes")
    return body


def resolve(name: str, version: str, registry: str) -> Locked:
    """The registry's integrity for NAME@VERSION (for writing the lock)."""
    url = f"{registry.rstrip('/')}/{name}/{version}"
    meta = json.loads(_get(url, f"{name}@{version}", 16 * 1024 * 1024))
    integrity = meta.get("dist", {}).get("integrity", "")
    if not integrity.startswith("sha512-"):
        raise InputError(f"{url}: key dist.integrity: expected sha512-..., got {integrity!r}")
    return Locked(name, version, integrity)


class Package:
    """The files of one checked tarball."""

    def __init__(self, locked: Locked, data: bytes):
        self.locked = locked
        self._data = data

    @cached_property
    def files(self) -> dict[str, bytes]:
        out = {}
        with tarfile.open(fileobj=io.BytesIO(self._data), mode="r:gz") as tar:
            for m in tar.getmembers():
                if m.isfile() and "/" in m.name:
                    out[m.name.split("/", 1)[1]] = tar.extractfile(m).read()
        return out

    def file(self, path: str) -> bytes:
        try:
            return self.files[path]
        except KeyError:
            raise InputError(f"{self.locked.name}@{self.locked.version}: file {path}: "
                             "expected in the package, not there") from None


def fetch(locked: Locked, registry: str, cache: Path) -> Package:
    """The package from the cache, else from the registry; its integrity checked either way."""
    cached = cache / f"{locked.sha512.hex()[:64]}.tgz"
    what = f"{locked.name}@{locked.version}"
    if cached.is_file():
        data = cached.read_bytes()
        if hashlib.sha512(data).digest() == locked.sha512:
            return Package(locked, data)
        cached.unlink()  # damaged: fetch it again
    url = locked.tarball_url(registry)
    data = _get(url, what, MAX_TARBALL)
    if hashlib.sha512(data).digest() != locked.sha512:
        raise InputError(f"cannot fetch {what} from {url}: sha512 does not match "
                         "the lock's integrity")
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=cache)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, cached)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Package(locked, data)


def fetch_all(lock: dict[str, Locked], registry: str, cache: Path) -> dict[str, Package]:
    return {name: fetch(locked, registry, cache) for name, locked in sorted(lock.items())}
