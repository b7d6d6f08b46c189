"""The real web parts a corpus site is built from: npm packages at pinned versions.

Each `Asset` is one file of one package, with the URL a real site uses for it
(the public CDN that serves that package under that path). The versions here
and the lock file (corpus/packages.lock.json: tarball URL and sha512
integrity of each package) go together: `python -m corpus lock` writes the
lock from this table, `python -m corpus build` only reads the lock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Asset:
    """One file of a package as a page uses it."""

    package: str
    file: str
    """Path inside the package tarball (without its leading `package/`)."""
    kind: str
    """"js", "css" or "font"."""
    host: str
    """The CDN host name a real site loads it from."""
    path: str
    """The URL path on that host."""
    load: str = "defer"
    """For scripts: "sync" (in head, blocking), "defer" or "async"."""
    needs: tuple[str, ...] = ()
    """Other assets (by `key`) that must load first (a plugin needs its library)."""

    @property
    def key(self) -> str:
        return f"{self.package}/{self.file}"


VERSIONS: dict[str, str] = {
    "jquery": "3.7.1",
    "react": "18.3.1",
    "react-dom": "18.3.1",
    "vue": "3.4.38",
    "bootstrap": "5.3.3",
    "@popperjs/core": "2.11.8",
    "lodash": "4.17.21",
    "underscore": "1.13.7",
    "moment": "2.30.1",
    "dayjs": "1.11.13",
    "luxon": "3.5.0",
    "d3": "7.9.0",
    "chart.js": "4.4.4",
    "swiper": "11.1.14",
    "gsap": "3.12.5",
    "axios": "1.7.7",
    "alpinejs": "3.14.1",
    "htmx.org": "1.9.12",
    "lazysizes": "5.3.2",
    "js-cookie": "3.0.5",
    "dompurify": "3.1.6",
    "handlebars": "4.7.8",
    "mustache": "4.2.0",
    "fuse.js": "7.0.0",
    "clipboard": "2.0.11",
    "aos": "2.3.4",
    "web-vitals": "4.2.3",
    "core-js-bundle": "3.38.1",
    "animate.css": "4.1.1",
    "normalize.css": "8.0.1",
    "bootstrap-icons": "1.11.3",
    "@fortawesome/fontawesome-free": "6.6.0",
    "@fontsource/roboto": "5.0.14",
    "@fontsource/open-sans": "5.0.30",
    "@fontsource/inter": "5.0.21",
    "@fontsource/lato": "5.0.21",
    "@fontsource/montserrat": "5.0.19",
    "@fontsource/merriweather": "5.0.13",
    "@fontsource/source-sans-3": "5.0.12",
}


def _jsd(pkg: str, file: str, kind: str = "js", load: str = "defer", needs=()) -> Asset:
    return Asset(pkg, file, kind, "cdn.jsdelivr.net", f"/npm/{pkg}@{VERSIONS[pkg]}/{file}",
                 load, tuple(needs))


def _unpkg(pkg: str, file: str, kind: str = "js", load: str = "defer", needs=()) -> Asset:
    return Asset(pkg, file, kind, "unpkg.com", f"/{pkg}@{VERSIONS[pkg]}/{file}", load,
                 tuple(needs))


def _cdnjs(pkg: str, lib: str, file: str, url_file: str, kind: str = "js",
           load: str = "defer", needs=()) -> Asset:
    return Asset(pkg, file, kind, "cdnjs.cloudflare.com",
                 f"/ajax/libs/{lib}/{VERSIONS[pkg]}/{url_file}", load, tuple(needs))


REACT = "react/umd/react.production.min.js"
GSAP = "gsap/dist/gsap.min.js"
DAYJS = "dayjs/dayjs.min.js"

# Scripts, in the order a page that uses several would list them.
SCRIPTS: tuple[Asset, ...] = (
    Asset("jquery", "dist/jquery.min.js", "js", "ajax.googleapis.com",
          "/ajax/libs/jquery/3.7.1/jquery.min.js", "sync"),
    _cdnjs("core-js-bundle", "core-js", "minified.js", "minified.js", load="sync"),
    _unpkg("react", "umd/react.production.min.js", load="sync"),
    _unpkg("react-dom", "umd/react-dom.production.min.js", load="sync", needs=[REACT]),
    _unpkg("vue", "dist/vue.global.prod.js"),
    _jsd("@popperjs/core", "dist/umd/popper.min.js"),
    _jsd("bootstrap", "dist/js/bootstrap.bundle.min.js"),
    _jsd("lodash", "lodash.min.js"),
    _jsd("underscore", "underscore-umd-min.js"),
    _cdnjs("moment", "moment.js", "min/moment.min.js", "moment.min.js"),
    _jsd("dayjs", "dayjs.min.js"),
    _jsd("dayjs", "plugin/relativeTime.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/utc.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/timezone.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/customParseFormat.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/advancedFormat.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/localizedFormat.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/duration.js", needs=[DAYJS]),
    _jsd("dayjs", "plugin/isBetween.js", needs=[DAYJS]),
    _jsd("luxon", "build/global/luxon.min.js"),
    _jsd("d3", "dist/d3.min.js"),
    _jsd("chart.js", "dist/chart.umd.js"),
    _jsd("swiper", "swiper-bundle.min.js"),
    _cdnjs("gsap", "gsap", "dist/gsap.min.js", "gsap.min.js"),
    _cdnjs("gsap", "gsap", "dist/ScrollTrigger.min.js", "ScrollTrigger.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/ScrollToPlugin.min.js", "ScrollToPlugin.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/Draggable.min.js", "Draggable.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/Flip.min.js", "Flip.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/Observer.min.js", "Observer.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/TextPlugin.min.js", "TextPlugin.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/EasePack.min.js", "EasePack.min.js", needs=[GSAP]),
    _cdnjs("gsap", "gsap", "dist/MotionPathPlugin.min.js", "MotionPathPlugin.min.js",
           needs=[GSAP]),
    _jsd("axios", "dist/axios.min.js"),
    _jsd("htmx.org", "dist/htmx.min.js"),
    _jsd("lazysizes", "lazysizes.min.js", load="async"),
    _jsd("js-cookie", "dist/js.cookie.min.js"),
    _cdnjs("dompurify", "dompurify", "dist/purify.min.js", "purify.min.js"),
    _jsd("handlebars", "dist/handlebars.min.js"),
    _cdnjs("mustache", "mustache.js", "mustache.min.js", "mustache.min.js"),
    _jsd("fuse.js", "dist/fuse.min.js"),
    _cdnjs("clipboard", "clipboard.js", "dist/clipboard.min.js", "clipboard.min.js"),
    _unpkg("aos", "dist/aos.js"),
    _unpkg("web-vitals", "dist/web-vitals.iife.js", load="async"),
    # Alpine starts itself on the page; it goes last.
    _jsd("alpinejs", "dist/cdn.min.js"),
)

STYLES: tuple[Asset, ...] = (
    _cdnjs("normalize.css", "normalize", "normalize.css", "normalize.css", kind="css"),
    _jsd("bootstrap", "dist/css/bootstrap.min.css", kind="css"),
    _cdnjs("@fortawesome/fontawesome-free", "font-awesome", "css/all.min.css",
           "css/all.min.css", kind="css"),
    _jsd("bootstrap-icons", "font/bootstrap-icons.min.css", kind="css"),
    _cdnjs("animate.css", "animate.css", "animate.min.css", "animate.min.css", kind="css"),
    _jsd("swiper", "swiper-bundle.min.css", kind="css"),
    _unpkg("aos", "dist/aos.css", kind="css"),
)

# Files a stylesheet above refers to by a relative URL (served beside it).
STYLE_FONTS: dict[str, tuple[tuple[str, str], ...]] = {
    # stylesheet key -> (file in package, class that makes the browser use it)
    "@fortawesome/fontawesome-free/css/all.min.css": (
        ("webfonts/fa-solid-900.woff2", '<i class="fa-solid fa-{icon}"></i>'),
        ("webfonts/fa-regular-400.woff2", '<i class="fa-regular fa-{icon}"></i>'),
        ("webfonts/fa-brands-400.woff2", '<i class="fa-brands fa-{brand}"></i>'),
    ),
    "bootstrap-icons/font/bootstrap-icons.min.css": (
        ("font/fonts/bootstrap-icons.woff2", '<i class="bi bi-{bicon}"></i>'),
    ),
}

# Web font families (Google Fonts' CSS on fonts.googleapis.com, the files on
# fonts.gstatic.com, as a site embedding Google Fonts has them).
FONT_FAMILIES: tuple[tuple[str, str], ...] = (
    ("@fontsource/roboto", "Roboto"),
    ("@fontsource/open-sans", "Open Sans"),
    ("@fontsource/inter", "Inter"),
    ("@fontsource/lato", "Lato"),
    ("@fontsource/montserrat", "Montserrat"),
    ("@fontsource/merriweather", "Merriweather"),
    ("@fontsource/source-sans-3", "Source Sans 3"),
)
FONT_WEIGHTS = (400, 700)


def font_file(package: str, weight: int) -> str:
    slug = package.split("/", 1)[1]
    return f"files/{slug}-latin-{weight}-normal.woff2"


def needed_files() -> dict[str, list[str]]:
    """package -> files of it the corpus uses (for checking a lock and a fixture)."""
    out: dict[str, list[str]] = {}
    for a in SCRIPTS + STYLES:
        out.setdefault(a.package, []).append(a.file)
        for f, _ in STYLE_FONTS.get(a.key, ()):
            out[a.package].append(f)
    for pkg, _family in FONT_FAMILIES:
        out.setdefault(pkg, []).extend(font_file(pkg, w) for w in FONT_WEIGHTS)
    return {k: sorted(set(v)) for k, v in sorted(out.items())}


# First-party bundles carry the real CommonJS modules of this package (every
# `*.js` at its top level), as a bundler's chunks do: each module a function,
# run when the app requires it.
BUNDLED_PACKAGE = "lodash"
