"""The content of the local test website: a small multi-origin news site.

Pure and deterministic: `build(spec)` returns every static resource as bytes
(the same bytes on every call), so a server can serve it and a test can
compare what was recorded with what was served. The only parts that change
per request are served by `tests/site/server.py`: the promo script (picks one
of several promo images per page load), the headlines API (a query string)
and the page that never finishes loading.

What it exercises: HTML, CSS (gzip), JS (chunked), images (PNG, JPEG), a web
font (WOFF2, cross-origin), a JSON API with a query string (chunked), a
redirect, an `alt-svc` and an `alternate-protocol` header, and one resource
chosen at random on each load.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

FONT_SOURCE = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")  # Debian fonts-dejavu-core


@dataclass(frozen=True)
class SiteSpec:
    """Shape of a generated site: host names by role, their IPs, and its size."""

    name: str
    www: str
    static: str
    cdn: str
    api: str
    addresses: tuple[tuple[str, str], ...]
    """(host, IPv4 address it is served on) pairs."""
    articles: int = 6
    """Article teasers on the front page, each with a JPEG thumbnail."""
    promos: int = 4
    """Promo images the promo script chooses from on each load."""
    image_px: int = 320
    """Width of article thumbnails (larger = more bytes)."""
    beacon: bool = False
    """Whether the page sends an analytics-like beacon request."""
    layout: str = "news"
    """"news": the news front page; "gallery": a short HTML on `www` followed by
    `articles` images from `www` itself, with its stylesheet and script on `static`
    (a page that asks one host for many images at once); "single": one origin,
    `www` only: an HTML page, two stylesheets and `articles` JPEGs (bench/one_rtt)."""

    @property
    def ips(self) -> dict[str, str]:
        """host -> IP."""
        return dict(self.addresses)

    @property
    def hosts(self) -> list[str]:
        return sorted(self.ips)

    def url(self) -> str:
        return f"https://{self.www}/"


TEST_SITE = SiteSpec(
    name="site",
    www="www.site.test",
    static="static.site.test",
    cdn="cdn.site-cdn.test",
    api="www.site.test",
    addresses=(("www.site.test", "10.77.0.1"), ("static.site.test", "10.77.0.1"),
               ("cdn.site-cdn.test", "10.77.0.2")),
)

NEWS_SITE = SiteSpec(
    name="local-news",
    www="www.local-news.test",
    static="static.local-news.test",
    cdn="img.newscdn.test",
    api="api.local-news.test",
    addresses=(("www.local-news.test", "10.78.0.1"), ("static.local-news.test", "10.78.0.1"),
               ("img.newscdn.test", "10.78.0.2"), ("api.local-news.test", "10.78.0.3")),
    articles=18,
    promos=4,
    image_px=480,
    beacon=True,
)

GALLERY_SITE = SiteSpec(
    name="gallery",
    www="www.gallery.test",
    static="static.gallery-cdn.test",
    cdn="static.gallery-cdn.test",
    api="www.gallery.test",
    addresses=(("www.gallery.test", "10.79.0.1"), ("static.gallery-cdn.test", "10.79.0.2")),
    articles=40,
    promos=0,
    image_px=160,
    layout="gallery",
)

SINGLE_SITE = SiteSpec(
    name="one-origin",
    www="www.one-origin.test",
    static="www.one-origin.test",
    cdn="www.one-origin.test",
    api="www.one-origin.test",
    addresses=(("www.one-origin.test", "10.80.0.1"),),
    articles=3,
    promos=0,
    image_px=420,
    layout="single",
)
"""HTML + 2 CSS + 3 images (~150 KB) on one host: a page whose load the handshake
dominates, for bench/one_rtt."""

SITES = {s.name: s for s in (TEST_SITE, NEWS_SITE, GALLERY_SITE, SINGLE_SITE)}


@dataclass(frozen=True)
class Resource:
    """One static response: served as is (gzip bodies are stored compressed)."""

    host: str
    path: str
    content_type: str
    body: bytes
    status: int = 200
    gzip: bool = False
    """Body is gzip-compressed; sent with content-encoding: gzip."""
    chunked: bool = False
    """Sent with transfer-encoding: chunked instead of content-length."""
    headers: tuple[tuple[str, str], ...] = field(default=())


ALT_SVC = ('alt-svc', 'h3=":443"; ma=86400, h3-29=":443"; ma=86400')
ALT_PROTO = ("alternate-protocol", "443:quic")
CORS = ("access-control-allow-origin", "*")
CACHE = ("cache-control", "public, max-age=3600")


def promo_paths(spec: SiteSpec) -> list[str]:
    return [f"/promo/promo-{i}.jpg" for i in range(1, spec.promos + 1)]


def promo_script(spec: SiteSpec, index: int) -> bytes:
    """The promo script as served on one load: it shows promo `index` (0-based)."""
    path = promo_paths(spec)[index]
    return (
        "// Chosen per page load by the server, as ad and promo slots are.\n"
        "(function () {\n"
        "  var img = document.createElement('img');\n"
        f"  img.src = 'https://{spec.cdn}{path}';\n"
        "  img.alt = 'promo'; img.width = 300; img.height = 100;\n"
        "  document.getElementById('promo').appendChild(img);\n"
        "})();\n"
    ).encode()


def headlines(spec: SiteSpec, section: str, n: int) -> bytes:
    """The JSON the headlines API returns for ?section=...&n=..."""
    items = [{"id": i, "title": _title(i), "section": section} for i in range(n)]
    return json.dumps({"section": section, "items": items}, indent=1).encode()


def _title(i: int) -> str:
    words = ["Local", "council", "approves", "new", "cycle", "lanes", "after", "long",
             "debate", "market", "opens", "harbour", "festival", "returns", "weather", "warm"]
    return " ".join(words[(i * 3 + k) % len(words)] for k in range(5)).capitalize()


@cache
def build(spec: SiteSpec) -> dict[tuple[str, str], Resource]:
    """Every static resource of the site, keyed by (host, path)."""
    if spec.layout == "gallery":
        return _gallery(spec)
    if spec.layout == "single":
        return _single(spec)
    res: list[Resource] = []
    www, static, cdn, api = spec.www, spec.static, spec.cdn, spec.api

    res.append(Resource(www, "/", "text/html", b"", status=302,
                        headers=(("location", "/index.html"), ALT_SVC)))
    res.append(Resource(www, "/index.html", "text/html; charset=utf-8", _html(spec),
                        headers=(ALT_SVC, ALT_PROTO, ("cache-control", "no-cache"))))
    res.append(Resource(www, "/favicon.ico", "image/png", _png(16, 16, (200, 30, 30)),
                        headers=(CACHE,)))
    res.append(Resource(static, "/css/site.css", "text/css", gzip.compress(_css(spec), mtime=0),
                        gzip=True, headers=(CACHE, CORS, ALT_SVC)))
    res.append(Resource(static, "/js/app.js", "application/javascript", _app_js(spec),
                        chunked=True, headers=(CACHE, CORS)))
    res.append(Resource(static, "/img/logo.png", "image/png", _png(240, 60, (20, 60, 140)),
                        headers=(CACHE,)))
    res.append(Resource(cdn, "/fonts/sans.woff2", "font/woff2", _font(),
                        headers=(CACHE, CORS, ALT_SVC)))
    for i in range(spec.articles):
        res.append(Resource(cdn, f"/img/article-{i}.jpg", "image/jpeg",
                            _jpeg(spec.image_px, spec.image_px * 9 // 16, seed=i),
                            headers=(CACHE, CORS)))
    for i, path in enumerate(promo_paths(spec)):
        res.append(Resource(cdn, path, "image/jpeg", _jpeg(300, 100, seed=100 + i),
                            headers=(CACHE,)))
    if spec.beacon:
        res.append(Resource(api, "/px.gif", "image/gif", _gif(), headers=(CORS,)))
    if spec.articles > 8:
        res.append(Resource(static, "/css/print.css", "text/css",
                            b"@media print { nav, #promo { display: none } }\n",
                            headers=(CACHE,)))
    return {(r.host, r.path): r for r in res}


def _gallery(spec: SiteSpec) -> dict[tuple[str, str], Resource]:
    """The gallery page: `articles` small JPEGs (no lazy loading) on the page's own
    host, below a few lines of text; one stylesheet and one script on `static`.
    Every response but the HTML carries an alt-svc header, as a CDN's would."""
    www, static = spec.www, spec.static
    w, h = spec.image_px, spec.image_px * 3 // 4
    figures = "\n".join(
        f'  <img src="/img/photo-{i:02d}.jpg" width="{w}" height="{h}" alt="photo {i}">'
        for i in range(spec.articles))
    html = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{spec.name}: photos</title>
  <link rel="stylesheet" href="https://{static}/css/gallery.css">
  <script src="https://{static}/js/gallery.js" defer></script>
</head>
<body>
  <h1>Harbour festival in pictures</h1>
  <p>{_lorem(0)}</p>
{figures}
</body>
</html>
""".encode()
    css = ("body { font-family: sans-serif; margin: 0 auto; max-width: 1000px; }\n"
           f"img {{ margin: 2px; width: {w}px; height: {h}px; }}\n").encode()
    js = (_app_js(spec).split(b"fetch(")[0]
          + b"document.title += ' (' + document.images.length + ')';\n")
    res = [Resource(www, "/", "text/html; charset=utf-8", html,
                    headers=(("cache-control", "no-cache"),)),
           Resource(static, "/css/gallery.css", "text/css", css,
                    headers=(CACHE, CORS, ALT_SVC)),
           Resource(static, "/js/gallery.js", "application/javascript", js,
                    headers=(CACHE, CORS, ALT_SVC))]
    res += [Resource(www, f"/img/photo-{i:02d}.jpg", "image/jpeg", _jpeg(w, h, seed=200 + i),
                     headers=(CACHE, ALT_SVC)) for i in range(spec.articles)]
    return {(r.host, r.path): r for r in res}


def _single(spec: SiteSpec) -> dict[tuple[str, str], Resource]:
    """The one-origin page: an article (text first, so the first contentful paint
    needs the HTML and its two render-blocking stylesheets) with `articles` JPEGs,
    everything from `www`."""
    www = spec.www
    w, h = spec.image_px, spec.image_px * 9 // 16
    figures = "\n".join(
        f'  <figure><img src="/img/photo-{i}.jpg" width="{w}" height="{h}" alt="photo {i}">'
        f"<figcaption>{_title(i)}</figcaption></figure>" for i in range(spec.articles))
    paragraphs = [f"  <p>{_lorem(i)}</p>" for i in range(24)]
    first, rest = "\n".join(paragraphs[:8]), "\n".join(paragraphs[8:])
    html = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{spec.name}: one origin</title>
  <link rel="stylesheet" href="/css/base.css">
  <link rel="stylesheet" href="/css/layout.css">
</head>
<body>
  <h1>Harbour festival returns</h1>
{first}
{figures}
{rest}
</body>
</html>
""".encode()
    base = ("body { font-family: sans-serif; color: #222; background: #fafafa; }\n"
            "h1 { color: #14388c; }\n"
            + "".join(f".m-{i} {{ margin: {i * 4}px; }} .p-{i} {{ padding: {i * 4}px; }}\n"
                      for i in range(60))).encode()
    layout = ("body { margin: 0 auto; max-width: 1000px; }\n"
              f"figure {{ display: inline-block; margin: 4px; width: {w}px; }}\n"
              + "".join(f".col-{i} {{ width: {i * 8.333:.3f}%; float: left; }}\n"
                        for i in range(1, 13))
              + "".join(f".g-{i} {{ grid-column: span {i % 12 + 1}; }}\n"
                        for i in range(60))).encode()
    res = [Resource(www, "/", "text/html; charset=utf-8", html,
                    headers=(("cache-control", "no-cache"),)),
           Resource(www, "/css/base.css", "text/css", base, headers=(CACHE,)),
           Resource(www, "/css/layout.css", "text/css", layout, headers=(CACHE,))]
    res += [Resource(www, f"/img/photo-{i}.jpg", "image/jpeg", _jpeg(w, h, seed=300 + i),
                     headers=(CACHE,)) for i in range(spec.articles)]
    return {(r.host, r.path): r for r in res}


def _html(spec: SiteSpec) -> bytes:
    teasers = "\n".join(
        f'    <article><img src="https://{spec.cdn}/img/article-{i}.jpg" width="320" '
        f'height="180" alt=""><h2>{_title(i)}</h2>'
        f"<p>{_lorem(i)}</p></article>"
        for i in range(spec.articles)
    )
    print_css = (f'  <link rel="stylesheet" media="print" href="https://{spec.static}/css/print.css">\n'
                 if spec.articles > 8 else "")
    beacon = (f'  <img src="https://{spec.api}/px.gif?ev=pageview&amp;page=home" width="1" '
              'height="1" alt="">\n' if spec.beacon else "")
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{spec.name}: front page</title>
  <link rel="stylesheet" href="https://{spec.static}/css/site.css">
{print_css}  <script src="https://{spec.static}/js/app.js" defer></script>
</head>
<body>
  <header><img src="https://{spec.static}/img/logo.png" width="240" height="60" alt="logo">
  <nav>Home | World | Local | Sport</nav></header>
  <div id="promo"></div>
  <script src="https://{spec.static}/js/promo.js"></script>
  <section id="headlines"><h1>Headlines</h1><ul id="list"></ul></section>
  <main>
{teasers}
  </main>
{beacon}</body>
</html>
""".encode()


def _lorem(i: int) -> str:
    text = ("The quick brown fox jumps over the lazy dog while the town hall clock "
            "strikes noon and the market fills with people. ")
    return text * (2 + i % 3)


def _css(spec: SiteSpec) -> bytes:
    rules = [
        ("@font-face { font-family: 'SiteSans'; font-display: swap; "
        f"src: url('https://{spec.cdn}/fonts/sans.woff2') format('woff2'); }}"),
        ("body { font-family: 'SiteSans', sans-serif; margin: 0 auto; max-width: 1000px; "
        "color: #222; background: #fafafa; }"),
        ("header { display: flex; align-items: center; gap: 2em; padding: 1em; "
        "background: #14388c; color: white; }"),
        "main { display: grid; grid-template-columns: repeat(3, 1fr); gap: 1em; }",
        "article img { width: 100%; height: auto; }",
        "#promo { min-height: 100px; margin: 1em 0; }",
    ]
    # Padding rules so the stylesheet compresses like a real one does.
    rules += [f".col-{i} {{ width: {i * 8.333:.3f}%; float: left; }}" for i in range(1, 13)]
    rules += [f".m-{i} {{ margin: {i * 4}px; }} .p-{i} {{ padding: {i * 4}px; }}"
              for i in range(40)]
    return ("\n".join(rules) + "\n").encode()


def _app_js(spec: SiteSpec) -> bytes:
    filler = "".join(f"function helper{i}(x) {{ return x * {i} + {i % 7}; }}\n"
                     for i in range(150))
    return (
        "// Fills the headlines list from the API (a URL with a query string).\n"
        + filler
        + "fetch('https://" + spec.api + "/api/headlines?section=top&n=5')\n"
        "  .then(function (r) { return r.json(); })\n"
        "  .then(function (d) {\n"
        "    var ul = document.getElementById('list');\n"
        "    d.items.forEach(function (it) {\n"
        "      var li = document.createElement('li'); li.textContent = it.title;\n"
        "      ul.appendChild(li);\n"
        "    });\n"
        "  });\n"
    ).encode()


def _png(w: int, h: int, rgb: tuple[int, int, int]) -> bytes:
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (w, h), rgb)
    d = ImageDraw.Draw(im)
    for x in range(0, w, 8):
        d.line([(x, 0), (x, h)], fill=tuple(min(255, c + 40) for c in rgb))
    out = io.BytesIO()
    im.save(out, "PNG", optimize=False)
    return out.getvalue()


def _jpeg(w: int, h: int, seed: int) -> bytes:
    """A deterministic photo-like JPEG (gradient plus noise, so it does not shrink to nothing)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([
        (x * 255 // max(w - 1, 1) + seed * 37) % 256,
        (y * 255 // max(h - 1, 1) + seed * 91) % 256,
        ((x + y) * 255 // max(w + h - 2, 1) + seed * 53) % 256,
    ], axis=-1).astype(np.int16)
    noise = rng.integers(-40, 40, size=base.shape, dtype=np.int16)
    arr = np.clip(base + noise, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr, "RGB").save(out, "JPEG", quality=85)
    return out.getvalue()


def _gif() -> bytes:
    return bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c"
                         "00000000010001000002024401003b")


@cache
def _font() -> bytes:
    """DejaVu Sans cut down to ASCII, as WOFF2 (as web font services do)."""
    import logging

    from fontTools import subset

    logging.getLogger("fontTools.subset").setLevel(logging.ERROR)
    opts = subset.Options()
    opts.flavor = "woff2"
    font = subset.load_font(str(FONT_SOURCE), opts)
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=range(0x20, 0x7F))
    sub.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, opts)
    return out.getvalue()
