"""Fake npm packages for the corpus's tests: every file the catalog uses, small,
as tarballs with their sha512, and a registry serving them on loopback."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from corpus import catalog, npm


def tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, body in sorted(files.items()):
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def fake_files(package: str) -> dict[str, bytes]:
    files = {}
    for f in catalog.needed_files().get(package, []):
        if f.endswith(".woff2"):
            files[f] = b"wOF2" + hashlib.sha256(f.encode()).digest() * 200
        elif f.endswith(".css"):
            rules = [f".{package.replace('/', '-')}-{i}{{margin:{i}px}}" for i in range(200)]
            files[f] = "\n".join(rules).encode()
        else:
            files[f] = (f"/* {package}/{f} */\n" + "".join(
                f"function f{i}(x){{return x*{i}}}\n" for i in range(300))).encode()
    if package == catalog.BUNDLED_PACKAGE:
        for i in range(40):
            files[f"mod{i}.js"] = (f"var dep = require('./mod{(i + 1) % 40}');\n"
                                   f"module.exports = function m{i}(x) {{ return x + {i}; }};\n"
                                   ).encode() * 20
    return files


def tarballs() -> dict[str, tuple[npm.Locked, bytes]]:
    out = {}
    for name, version in catalog.VERSIONS.items():
        data = tarball(fake_files(name))
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        out[name] = (npm.Locked(name, version, integrity), data)
    return out


class Handler(BaseHTTPRequestHandler):
    blobs: ClassVar[dict[str, bytes]] = {}
    hits: ClassVar[list[str]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.hits.append(self.path)
        body = self.blobs.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("content-length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")


@contextmanager
def registry(packages: dict[str, tuple[npm.Locked, bytes]]):
    """(URL, handler class) of a registry on 127.0.0.1 serving these tarballs."""
    handler = type("Registry", (Handler,), {"blobs": {}, "hits": []})
    for locked, data in packages.values():
        handler.blobs["/" + locked.tarball_url("").lstrip("/")] = data
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", handler
    finally:
        server.shutdown()
        server.server_close()
