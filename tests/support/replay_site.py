"""A small multi-origin recording made from scratch for the replay tests.

Three hosts on two IPs (one a public address that exists only inside the
test's namespaces), HTML, CSS, JS, images, query strings. Every response
carries `timing-allow-origin: *` so Resource Timing exposes nextHopProtocol
for the cross-origin resources too.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from testbed.validate.site import exchange, write

WWW, STATIC, CDN = "www.replay.test", "static.replay.test", "cdn.example.org"
IP_A, IP_B = "93.184.216.34", "198.51.100.7"

HTML = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>replay test</title>
<link rel="icon" href="/favicon.ico">
<link rel="stylesheet" href="https://{STATIC}/css/site.css?v=3">
<script src="https://{CDN}/lib.js?ver=1.2&amp;min=1"></script>
</head><body><h1>Replayed</h1>
<img src="https://{STATIC}/img/logo.png" width="64" height="64">
<img src="https://{CDN}/img/photo.jpg?w=320&amp;h=200">
<div class="bg">background</div>
<script src="/app.js"></script>
</body></html>
""".encode()

CSS = f""".bg {{ background: url(https://{STATIC}/img/bg.png) repeat; height: 40px; }}
h1 {{ font-family: sans-serif; color: #234; }}""".encode()

LIB = b"window.lib = {ready: true};"
APP = f"""const i = new Image(); i.src = "https://{CDN}/img/pixel.png?ts=" + Date.now();
document.body.appendChild(i);""".encode()


def image(fmt: str, size: tuple[int, int], color: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, fmt)
    return out.getvalue()


def exchanges():
    tao = (("timing-allow-origin", "*"), ("cache-control", "max-age=3600"))
    png = image("PNG", (64, 64), "navy")
    return [
        exchange(f"https://{WWW}/", IP_A, HTML, "text/html; charset=utf-8", headers=tao),
        exchange(f"https://{WWW}/favicon.ico", IP_A, image("PNG", (16, 16), "red"),
                 "image/png", headers=tao),
        exchange(f"https://{WWW}/app.js", IP_A, APP, "text/javascript", headers=tao),
        exchange(f"https://{STATIC}/css/site.css?v=3", IP_A, CSS, "text/css", headers=tao),
        exchange(f"https://{STATIC}/css/site.css?v=2", IP_A, b"h1{color:red}", "text/css",
                 headers=tao),
        exchange(f"https://{STATIC}/img/logo.png", IP_A, png, "image/png", headers=tao),
        exchange(f"https://{STATIC}/img/bg.png", IP_A, image("PNG", (8, 8), "gray"),
                 "image/png", headers=tao),
        exchange(f"https://{CDN}/lib.js?ver=1.2&min=1", IP_B, LIB, "text/javascript",
                 headers=tao),
        exchange(f"https://{CDN}/img/photo.jpg?w=320&h=200", IP_B,
                 image("JPEG", (320, 200), "olive"), "image/jpeg", headers=tao),
        # requested with ?ts=<now>: found by the longest common prefix
        exchange(f"https://{CDN}/img/pixel.png?ts=1700000000000", IP_B,
                 image("PNG", (1, 1), "white"), "image/png", headers=tao),
    ]


# Resources one page load fetches (all but the unused site.css?v=2).
LOADED = 9


def make(parent: Path | None = None, name: str = "replay-test") -> Path:
    """Write the recording into a fresh world-readable folder (the servers run as the
    testbed user); remove it with shutil.rmtree(path.parent)."""
    d = Path(tempfile.mkdtemp(prefix="tb-replay-site-", dir=parent))
    d.chmod(0o755)
    try:
        return write(d, name, f"https://{WWW}/", exchanges())
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
