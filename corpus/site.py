"""One corpus site: every response it serves, built from a SitePlan and the packages.

    site = build(plan, packages)      # pure: the same inputs give the same bytes
    site.resources[(host, target)]   # Resource(status, content type, body, headers)

The page is what a real home page is made of: a redirect to the page, web
fonts (Google Fonts' CSS and files, icon fonts beside their stylesheets),
library stylesheets and scripts from the CDN host a real site uses (sync in
<head>, defer and async), first-party bundles (a runtime and chunks that
carry real CommonJS modules, as a bundler emits them), images above and
below the fold (JPEG, WebP, PNG, SVG), a JSON API whose answer the app
renders as a list and a carousel, content added after the load event (more
images, a script chunk), an iframe, tracking scripts and beacons on
third-party hosts (one answering with a redirect), and a few 404s. Text is
gzip-compressed as CDNs send it (mtime 0, so the bytes do not change).

Every URL the page or its scripts ask for is in `resources`, so one load
records all of it; nothing depends on time, randomness or the viewport.
The page paints in stages as real ones do (text first, web fonts swapping
in, the hero image, content the app inserts, progressive images): the
layout and where each stage's shape comes from are in corpus/painting.py. The
sites' own scripts are files beside this one: js/runtime.js (the bundler
runtime), js/app.js (the app) and js/tracker.js (the analytics tag, its
BEACONS filled in per site).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import posixpath
import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from corpus import addressing, catalog, images, painting
from corpus.shape import SitePlan

KB = 1024
SCRIPTS = Path(__file__).resolve().parent / "js"
"""The sites' own JavaScript: the bundler runtime, the app, the analytics tag."""
CACHE = ("cache-control", "public, max-age=31536000, immutable")
NO_CACHE = ("cache-control", "no-cache")
CORS = ("access-control-allow-origin", "*")
TYPES = {"js": "application/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
         "font": "font/woff2", "html": "text/html; charset=utf-8",
         "json": "application/json", "svg": "image/svg+xml", "jpeg": "image/jpeg",
         "webp": "image/webp", "png": "image/png", "gif": "image/gif",
         "ico": "image/x-icon"}
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c"
                    "00000000010001000002024401003b")
WORDS = ["city", "council", "market", "harbour", "season", "festival", "garden", "summer", "river", "project", "museum", "review", "guide", "recipe", "travel", "weekend", "offer", "price", "school", "music", "match", "science", "energy", "health", "design", "bridge", "station", "coast", "forest", "island", "report"]


@cache
def script(name: str) -> str:
    """One of the sites' scripts (js/NAME), as every site serves it."""
    return (SCRIPTS / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Resource:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    gzip: bool = False
    """The body is stored gzip-compressed and sent with content-encoding: gzip."""


@dataclass
class Site:
    plan: SitePlan
    url: str
    ips: dict[str, str]
    resources: dict[tuple[str, str], Resource] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        return sorted(self.ips)

    def add(self, url: str, kind: str, body: bytes, status: int = 200,
            headers: tuple[tuple[str, str], ...] = (CACHE, CORS), ctype: str = "") -> str:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        compress = kind in ("js", "css", "html", "json", "svg") and status == 200 and body
        if compress:
            body = gzip.compress(body, compresslevel=6, mtime=0)
        self.resources[(parts.hostname, target)] = Resource(
            status, ctype or TYPES[kind], body, headers, bool(compress))
        return url

    def bytes(self) -> int:
        return sum(len(r.body) for r in self.resources.values())

    def digest(self) -> str:
        h = hashlib.sha256()
        for (host, target), r in sorted(self.resources.items()):
            h.update(json.dumps([host, target, r.status, r.content_type, r.headers,
                                 r.gzip]).encode())
            h.update(hashlib.sha256(r.body).digest())
        return h.hexdigest()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _title(rng: random.Random) -> str:
    return _words(rng, rng.randint(3, 7)).capitalize()


class _Builder:
    def __init__(self, plan: SitePlan, packages: dict):
        self.p = plan
        self.pk = packages
        self.rng = random.Random(plan.seed)
        n = plan.name
        self.www = f"www.{n}.example"
        if plan.single_origin:
            self.static = self.img = self.api = self.www
        else:
            self.static, self.img, self.api = (f"static.{n}.example", f"img.{n}.example",
                                               f"api.{n}.example")
        ips = addressing.first_party(plan.index, plan.layout, self.www, self.static,
                                     self.img, self.api)  # which hosts share an address
        self.site = Site(plan, f"https://{self.www}/", ips)
        self.head: list[str] = []
        self.body: list[str] = []
        self.tail: list[str] = []
        self.after_load: list[str] = []  # URLs the app fetches after the load event
        self.js_left = plan.js
        self.budget = plan.kbytes * KB

    # -- hosts -------------------------------------------------------------
    def _host(self, host: str) -> str:
        if host not in self.site.ips:
            self.site.ips[host] = addressing.THIRD_PARTY_IPS[host]
        return host

    def _vendor_url(self, asset: catalog.Asset) -> str:
        """Where this page loads a package file from: the CDN, or its own host."""
        if self.p.third_party:
            return f"https://{self._host(asset.host)}{asset.path}"
        version = catalog.VERSIONS[asset.package]
        return f"https://{self.static}/assets/vendor/{asset.package}@{version}/{asset.file}"

    def _url(self, host: str, path: str) -> str:
        return f"https://{host}{path}"

    # -- parts -------------------------------------------------------------
    def fonts_and_styles(self) -> None:
        p, rng = self.p, self.rng
        families = list(catalog.FONT_FAMILIES)
        rng.shuffle(families)
        options: list[tuple[str, ...]] = []
        for i, (pkg, fam) in enumerate(families):
            options += [("family", pkg, fam, "400"), ("family", pkg, fam, "700")]
            if i == 0:
                options += [("style", catalog.STYLES[2].key, str(j)) for j in range(3)]
            if i == 1:
                options += [("style", catalog.STYLES[3].key, "0")]
        chosen = options[:p.font]
        css_left = p.css
        by_family: dict[tuple[str, str], list[str]] = {}
        icon_styles: dict[str, list[int]] = {}
        for o in chosen:
            if o[0] == "family":
                by_family.setdefault((o[1], o[2]), []).append(o[3])
            else:
                icon_styles.setdefault(o[1], []).append(int(o[2]))
        self.font_uses: list[str] = []
        self.families = [fam for _, fam in by_family]  # the first one sets the body text
        for (pkg, fam), weights in by_family.items():
            css_left -= 1
            self.head.append(f'<link rel="stylesheet" href="{self._font_css(pkg, fam, weights)}">')
        styles = {a.key: a for a in catalog.STYLES}
        for key, idx in icon_styles.items():
            css_left -= 1
            url = self._vendor_url(styles[key])
            self._add_package_file(url, styles[key].package, styles[key].file, "css")
            self.head.append(f'<link rel="stylesheet" href="{url}">')
            for j in idx:
                file, use = catalog.STYLE_FONTS[key][j]
                rel = posixpath.relpath(file, posixpath.dirname(styles[key].file))
                self._add_package_file(urljoin(url, rel), styles[key].package, file, "font")
                self.font_uses.append(use.format(icon=rng.choice(["star", "heart", "bell"]),
                                                 brand=rng.choice(["github", "x-twitter"]),
                                                 bicon=rng.choice(["alarm", "cart", "house"])))
        # Library stylesheets, then first-party ones.
        self.libs_css: list[str] = []
        extra = [a for a in catalog.STYLES if a.key not in icon_styles]
        rng.shuffle(extra)
        for a in extra[:max(0, css_left - 1)]:
            if a.package in ("swiper", "aos"):
                continue  # come with their scripts
            url = self._vendor_url(a)
            self._add_package_file(url, a.package, a.file, "css")
            self.head.append(f'<link rel="stylesheet" href="{url}">')
            css_left -= 1
        self.css_left = css_left

    def _font_css(self, pkg: str, fam: str, weights: list[str]) -> str:
        slug = fam.lower().replace(" ", "")
        faces = []
        for w in weights:
            if self.p.third_party:
                furl = (f"https://{self._host('fonts.gstatic.com')}/s/{slug}/v30/"
                        f"{hashlib.sha1(f'{fam}{w}'.encode()).hexdigest()[:20]}.woff2")
            else:
                furl = self._url(self.static, f"/assets/fonts/{slug}-{w}.woff2")
            self._add_package_file(furl, pkg, catalog.font_file(pkg, int(w)), "font")
            faces.append(f"/* latin */\n@font-face {{\n  font-family: '{fam}';\n"
                         f"  font-style: normal;\n  font-weight: {w};\n  font-display: swap;\n"
                         f"  src: url({furl}) format('woff2');\n  unicode-range: U+0000-00FF, "
                         "U+0131, U+0152-0153, U+02BB-02BC, U+02C6, U+02DA, U+02DC, U+2000-206F;\n}\n")
            self.font_uses.append(f'<p style="font-family:\'{fam}\';font-weight:{w}">'
                                  f"{_title(self.rng)}</p>")
        fam_q = fam.replace(" ", "+")
        if self.p.third_party:
            url = (f"https://{self._host('fonts.googleapis.com')}/css2?family={fam_q}:wght@"
                   f"{';'.join(weights)}&display=swap")
        else:
            url = self._url(self.static, f"/assets/fonts/{slug}.css")
        self.site.add(url, "css", "".join(faces).encode(), headers=(NO_CACHE, CORS))
        return url

    def _add_package_file(self, url: str, package: str, file: str, kind: str) -> None:
        self.site.add(url, kind, self.pk[package].file(file))

    def scripts(self) -> None:
        p, rng = self.p, self.rng
        fixed = 2 + (2 if p.third_party else 1)  # runtime, app, trackers (or own analytics)
        fixed += 1  # the chunk loaded after the load event
        lib_slots = max(0, self.js_left - fixed - max(1, self.js_left // 5))
        js_budget = int(self.budget * 0.33)
        pool = list(catalog.SCRIPTS)
        rng.shuffle(pool)
        by_key = {a.key: a for a in catalog.SCRIPTS}
        chosen: dict[str, catalog.Asset] = {}
        spent = 0
        for a in pool:
            group = [by_key[k] for k in a.needs if k not in chosen] + [a]
            size = sum(len(gzip.compress(self.pk[g.package].file(g.file), mtime=0))
                       for g in group)
            if len(chosen) + len(group) > lib_slots or spent + size > js_budget * 0.6:
                continue
            for g in group:
                chosen[g.key] = g
            spent += size
        self.libs = [a for a in catalog.SCRIPTS if a.key in chosen]  # catalog order
        if any(a.package == "swiper" for a in self.libs):
            self._lib_css("swiper")
        if any(a.package == "aos" for a in self.libs):
            self._lib_css("aos")
        for a in self.libs:
            url = self._vendor_url(a)
            self._add_package_file(url, a.package, a.file, "js")
            attr = {"sync": "", "defer": " defer", "async": " async"}[a.load]
            (self.head if a.load == "sync" else self.tail).append(
                f'<script src="{url}"{attr}></script>')
        self.js_left -= len(self.libs)
        self.js_spent = spent
        self.js_budget = js_budget

    def _lib_css(self, package: str) -> None:
        a = next(s for s in catalog.STYLES if s.package == package)
        url = self._vendor_url(a)
        self._add_package_file(url, a.package, a.file, "css")
        self.head.append(f'<link rel="stylesheet" href="{url}">')
        self.css_left -= 1

    def first_party_css(self) -> None:
        n = max(0, self.css_left)
        budget = max(2 * KB, int(self.budget * 0.04))
        for i in range(n):
            rules = []
            size = 0
            j = 0
            target = budget * 5 // max(1, n)
            while size < target:
                sel = f".{self.rng.choice(WORDS)}-{j}"
                rule = (f"{sel}{{display:flex;margin:{j % 24}px {j % 16}px;padding:{j % 12}px;"
                        f"color:#{self.rng.randrange(0x1000000):06x};"
                        f"border-radius:{j % 9}px;font-size:{0.75 + (j % 8) / 8:.3f}rem}}\n"
                        f"@media (min-width:{576 + 192 * (j % 4)}px){{{sel}{{flex:0 0 "
                        f"{(j % 12 + 1) * 8.333:.3f}%}}}}\n")
                rules.append(rule)
                size += len(rule)
                j += 1
            name = "main" if i == 0 else f"chunk-{i}"
            url = self._url(self.static, f"/_next/static/css/{name}."
                            f"{hashlib.sha1(f'{self.p.name}{i}'.encode()).hexdigest()[:16]}.css")
            self.site.add(url, "css", "".join(rules).encode())
            self.head.append(f'<link rel="stylesheet" href="{url}">')

    def first_party_js(self) -> None:
        """The bundler runtime, chunks of real modules, the app, trackers; fills js_left."""
        p, rng = self.p, self.rng
        lodash = self.pk[catalog.BUNDLED_PACKAGE].files
        modules = sorted(f for f in lodash if "/" not in f and f.endswith(".js"))
        trackers = self._trackers()
        n_chunks = max(0, self.js_left - 3 - len(trackers))  # runtime, app, lazy chunk
        budget = max(4 * KB, self.js_budget - self.js_spent)
        h = hashlib.sha1(p.name.encode()).hexdigest()
        runtime = self._url(self.static, f"/_next/static/chunks/webpack-{h[:16]}.js")
        self.site.add(runtime, "js", script("runtime.js").encode())
        self.tail.insert(0, f'<script src="{runtime}" defer></script>')
        start = rng.randrange(len(modules))
        per_chunk = max(1, budget * 3 // max(1, n_chunks + 1))
        pos = start
        chunk_urls = []
        for i in range(n_chunks + 1):
            parts, size = [], 0
            while size < per_chunk or not parts:
                name = modules[pos % len(modules)]
                src = lodash[name].decode()
                parts.append(f'"lodash/{name[:-3]}":function(module,exports,require){{\n{src}\n}}')
                size += len(src)
                pos += 1
            body = (f"(self.webpackChunk_{p.name}=self.webpackChunk_{p.name}||[]).push([[{i}],{{\n"
                    + ",\n".join(parts) + "\n}]);\n")
            url = self._url(self.static, f"/_next/static/chunks/{i}-"
                            f"{hashlib.sha1(body.encode()).hexdigest()[:16]}.js")
            self.site.add(url, "js", body.encode())
            chunk_urls.append(url)
        for url in chunk_urls[:-1]:
            self.tail.append(f'<script src="{url}" defer></script>')
        self.lazy_chunk = chunk_urls[-1]
        self.tail.extend(trackers)
        self.js_left = 0

    def _trackers(self) -> list[str]:
        p = self.p
        tags = []
        if not p.third_party:
            url = self._url(self.www, "/matomo.js")
            self.site.add(url, "js", script("tracker.js").replace(
                "BEACONS", json.dumps(self.beacons)).encode())
            return [f'<script src="{url}" async></script>']
        gtm = self._url(self._host("www.googletagmanager.com"), f"/gtag/js?id=G-{p.seed % 10**8:08d}")
        self.site.add(gtm, "js", script("tracker.js").replace("BEACONS", json.dumps(self.beacons)).encode())
        tags.append(f'<script src="{gtm}" async></script>')
        if self.fb_beacon:
            fb = self._url(self._host("connect.facebook.net"), "/en_US/fbevents.js")
            self.site.add(fb, "js", script("tracker.js").replace(
                "BEACONS", json.dumps([self.fb_beacon])).encode())
            tags.append(f'<script src="{fb}" async></script>')
        return tags

    def others(self) -> None:
        """Redirect, favicon, API calls, beacons, 404s: `other` requests in all."""
        p, rng = self.p, self.rng
        left = p.other
        self.site.add(self._url(self.www, "/"), "html", b"", status=301,
                      headers=(("location", "/en/"), NO_CACHE))
        self.site.add(self._url(self.www, "/favicon.ico"), "ico",
                      images.encode("png", 32, 32, p.seed))
        left -= 2
        self.api_calls: list[str] = []
        self.beacons: list[str] = []
        self.fb_beacon = ""
        self.missing: list[str] = []
        ga = f"G-{p.seed % 10**8:08d}"
        dl = f"https%3A%2F%2F{self.www}%2Fen%2F"
        api_base = "/api/v1" if p.single_origin else "/v1"
        self.feed = self._url(self.api, f"{api_base}/feed?page=1&lang=en")
        self.api_calls.append(self.feed)
        left -= 1
        self.missing.append(self._url(self.img, "/uploads/2019/03/banner-spring.jpg"))
        left -= 1
        if p.third_party and left >= 2:
            collect = f"/g/collect?v=2&tid={ga}&en=page_view&dl={dl}"
            self.beacons.append(self._url(self._host("www.google-analytics.com"), collect))
            self.site.add(self.beacons[-1], "gif", b"", status=302, headers=(
                ("location", f"https://{self._host('stats.g.doubleclick.net')}{collect}"),
                NO_CACHE))
            self.site.add(f"https://stats.g.doubleclick.net{collect}", "gif", b"",
                          status=204, headers=(NO_CACHE, CORS))
            left -= 2
        events = ["scroll", "user_engagement", "view_item_list", "view_promotion",
                  "select_content", "file_download", "video_start", "search"]
        k = 0
        while left > 0:
            kind = ("api", "beacon", "api", "missing", "beacon")[k % 5]
            k += 1
            if kind == "api":
                url = self._url(self.api, f"{api_base}/{rng.choice(WORDS)}s?limit={k + 4}&n={k}")
                self.api_calls.append(url)
            elif kind == "beacon":
                if p.third_party and not self.fb_beacon and p.js > 12:
                    self.fb_beacon = self._url(self._host("www.facebook.com"),
                                               f"/tr/?id={p.seed % 10**15}&ev=PageView&noscript=1")
                    self.site.add(self.fb_beacon, "gif", GIF, headers=(NO_CACHE,))
                elif p.third_party:
                    url = (f"https://www.google-analytics.com/g/collect?v=2&tid={ga}"
                           f"&en={events[k % len(events)]}&_s={k}&dl={dl}")
                    self.beacons.append(url)
                    self.site.add(url, "gif", b"", status=204, headers=(NO_CACHE, CORS))
                else:
                    url = self._url(self.www, f"/matomo.php?idsite={p.index + 1}&rec=1&action_name"
                                    f"=home&e_c={events[k % len(events)]}&n={k}")
                    self.beacons.append(url)
                    self.site.add(url, "gif", GIF, headers=(NO_CACHE,))
            else:
                self.missing.append(self._url(self.static, f"/js/legacy/polyfill-{k}.js"))
            left -= 1
        if not p.third_party and not self.beacons:
            self.beacons.append(self._url(self.www, f"/matomo.php?idsite={p.index + 1}&rec=1"))
            self.site.add(self.beacons[-1], "gif", GIF, headers=(NO_CACHE,))
        for url in self.missing:
            self.site.add(url, "html", b"<h1>404 Not Found</h1>\n", status=404,
                          headers=(NO_CACHE,), ctype="text/html")

    def images_and_html(self) -> None:
        p, rng = self.p, self.rng
        n = p.image
        iframes = []
        if p.html >= 2:
            if p.third_party:
                vid = hashlib.sha1(p.name.encode()).hexdigest()[:11]
                iframes.append(("yt", self._url(self._host("www.youtube-nocookie.com"),
                                                f"/embed/{vid}?rel=0")))
            else:
                iframes.append(("own", self._url(self.www, "/widgets/newsletter.html")))
        if p.html >= 3:
            iframes.append(("own", self._url(self.www, "/widgets/weather.html")))
        poster = 1 if any(k == "yt" for k, _ in iframes) else 0
        fixed = 2 + poster  # logo (SVG), hero
        rest = max(0, n - fixed)
        slides = rest // 4
        lazy = rest // 5
        icons = min(4, rest // 6)
        cards = rest - slides - lazy - icons
        budget = max(n * 3 * KB, self.budget - self.site.bytes() - self._html_estimate(cards))
        weights = ([6.0] + [3.0] * slides + [1.5] * cards + [1.0] * lazy)
        weights = [w * rng.lognormvariate(0, 0.35) for w in weights]
        total_w = sum(weights) or 1
        posters_bytes = 0
        targets = [max(2 * KB, min(2000 * KB, int((budget - posters_bytes) * w / total_w)))
                   for w in weights]
        it = iter(targets)

        def image(kind_choices, target, name, aspect=None):
            kind = rng.choice(kind_choices)
            aspect = aspect or rng.choice(images.ASPECTS[:4])
            body, w, h = images.sized(kind, target, rng.randrange(2**31), aspect)
            ext = {"jpeg": "jpg", "webp": "webp", "png": "png"}[kind]
            url = self._url(self.img, f"/media/{name}.{ext}")
            self.site.add(url, kind, body)
            return url, w, h

        logo = self._url(self.static, "/static/img/logo.svg")
        self.site.add(logo, "svg", images.svg_icon(p.seed, 160))
        hero = image(["jpeg", "webp"], next(it), "hero", (16, 9))
        self.paint = painting.plan(p.seed)
        self.paint_rng = random.Random(f"painting-text-{p.seed}")
        slide_imgs = [image(["jpeg", "webp"], next(it), f"slides/{i}", (16, 9))
                      for i in range(slides)]
        card_imgs = [image(["jpeg", "webp", "jpeg", "png"], next(it), f"cards/{i}")
                     for i in range(cards)]
        lazy_imgs = [image(["jpeg", "webp"], next(it), f"more/{i}") for i in range(lazy)]
        icon_urls = []
        for i in range(icons):
            u = self._url(self.static, f"/static/icons/{rng.choice(WORDS)}-{i}.svg")
            self.site.add(u, "svg", images.svg_icon(p.seed + i))
            icon_urls.append(u)
        for kind, url in iframes:
            if kind == "yt":
                vid = urlsplit(url).path.rsplit("/", 1)[1]
                pb, _, _ = images.sized("jpeg", 26 * KB, p.seed, (4, 3))
                purl = f"https://{self._host('i.ytimg.com')}/vi/{vid}/hqdefault.jpg"
                self.site.add(purl, "jpeg", pb)
                doc = (f'<!doctype html><html><head><meta charset="utf-8"><style>body{{margin:0;'
                       f'background:#000}}img{{width:100%}}</style></head><body><img src="{purl}" '
                       'alt="video"></body></html>\n')
            else:
                doc = ('<!doctype html><html><head><meta charset="utf-8"><style>form{display:flex;'
                       'gap:.5em;font:16px sans-serif}</style></head><body><form><input type="email" '
                       'placeholder="you@example.org"><button>Subscribe</button></form></body></html>\n')
            self.site.add(url, "html", doc.encode(), headers=(NO_CACHE,))
        self._api(slide_imgs, lazy_imgs, hero)
        self._page(hero, card_imgs, icon_urls, logo, iframes)

    def _html_estimate(self, cards: int) -> int:
        return 6 * KB + cards * 300

    def _api(self, slides, lazy, hero) -> None:
        rng = self.rng
        feed = {"items": [{"id": i, "title": _title(rng), "summary": _words(rng, 20),
                           "tags": [rng.choice(WORDS) for _ in range(3)]}
                          for i in range(8 + len(slides))],
                "slides": [{"src": u, "width": w, "height": h, "title": _title(rng)}
                           for u, w, h in slides],
                "more": [{"src": u, "width": w, "height": h, "caption": _title(rng)}
                         for u, w, h in lazy]}
        # Painted after first paint by js/app.js (corpus/painting.py).
        feed["promo"] = f"{self.p.name}: {_words(self.paint_rng, 12)}"
        if self.paint.hero == "script":
            feed["hero"] = {"src": hero[0], "width": hero[1], "height": hero[2]}
        cors = (NO_CACHE, ("access-control-allow-origin", f"https://{self.www}"))
        self.site.add(self.feed, "json", json.dumps(feed, indent=1).encode(), headers=cors)
        for url in self.api_calls[1:]:
            data = {"data": [{"id": j, "name": _title(rng), "value": rng.randint(1, 999)}
                             for j in range(rng.randint(3, 12))]}
            self.site.add(url, "json", json.dumps(data).encode(), headers=cors)

    def _page(self, hero, cards, icons, logo, iframes) -> None:
        p, rng = self.p, self.rng
        missing_img = [u for u in self.missing if u.endswith(".jpg")]
        missing_js = [u for u in self.missing if u.endswith(".js")]
        config = {"api": self.api_calls, "lazyChunk": self.lazy_chunk,
                  "site": p.name}
        app_url = self._url(self.static, f"/_next/static/chunks/pages/index-"
                            f"{hashlib.sha1(p.name.encode()).hexdigest()[:16]}.js")
        self.site.add(app_url, "js", script("app.js").encode())
        head = "\n".join(["  " + h for h in self.head])
        libs = {a.package for a in self.libs}
        nav_icons = "".join(f'<img src="{u}" width="20" height="20" alt="">' for u in icons)
        card_html = "\n".join(
            f'    <article class="card"><img src="{u}" width="{w}" height="{h}" '
            f'style="width:100%;height:auto" alt=""><h2>{_title(rng)}</h2><p>{_words(rng, 40)}</p>'
            "</article>" for u, w, h in cards)
        frames = "\n".join(f'  <iframe src="{u}" width="560" height="315" title="embed" '
                           'loading="eager"></iframe>' for _, u in iframes)
        extras = []
        if "react-dom" in libs:
            extras.append('<div id="react-root"></div>')
        if "vue" in libs:
            extras.append('<div id="vue-app">{{ message }}</div>')
        if "chart.js" in libs:
            extras.append('<canvas id="chart" width="600" height="240"></canvas>')
        if "d3" in libs:
            extras.append('<div id="d3-chart"></div>')
        if "alpinejs" in libs:
            extras.append('<div x-data="{ open: true }"><p x-show="open" x-text="\'Alpine: '
                          'opened\'"></p></div>')
        html = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{p.name}: {_title(rng)}</title>
  <meta name="description" content="{_words(rng, 20)}">
  <link rel="icon" href="/favicon.ico">
  <style>{painting.critical_css(self.paint, (self.families or [None])[0])}</style>
{head}
  <script>window.__SITE__ = {json.dumps(config)};</script>
{chr(10).join('  ' + t for t in self.tail)}
{chr(10).join(f'  <script src="{u}" defer></script>' for u in missing_js)}
  <script src="{app_url}" defer></script>
</head>
<body>
  <header class="top"><img src="{logo}" width="160" height="160" alt="{p.name}">
  <nav>{nav_icons} {' '.join(self.font_uses)}</nav></header>
  <div class="fold">
  <section class="hero">{painting.hero_html(self.paint, *hero)}
    <h1>{_title(rng)}</h1><p class="lede">{_words(self.paint_rng, 34).capitalize()}.</p></section>
  <aside class="side">
  <section id="carousel" class="swiper"><div class="swiper-wrapper" id="slides"></div>
    <button id="prev">&lsaquo;</button><button id="next">&rsaquo;</button></section>
  <div id="promo"></div>
  <section><h2>Latest</h2><ul id="feed"></ul></section>
  </aside>
  </div>
  {' '.join(extras)}
  <main>
{card_html}
  </main>
{frames}
{chr(10).join(f'  <img src="{u}" width="600" height="200" alt="">' for u in missing_img)}
  <section id="more"></section>
  <footer><p>{_words(rng, 30)}</p></footer>
  <script type="application/json" id="__NEXT_DATA__">{json.dumps(
      {"props": {"pageProps": {"n": p.index, "text": _words(rng, 200)}}})}</script>
</body>
</html>
"""
        self.site.add(self._url(self.www, "/en/"), "html", html.encode(), headers=(NO_CACHE,))


def build(plan: SitePlan, packages: dict) -> Site:
    b = _Builder(plan, packages)
    b.others()
    b.fonts_and_styles()
    b.scripts()
    b.first_party_js()
    b.first_party_css()
    b.images_and_html()
    return b.site
