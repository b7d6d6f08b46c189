"""The corpus generator (corpus/): its shape, determinism, packages and errors.

No network: packages are fake tarballs made here (every file the catalog
uses, small), served by a registry on loopback when a test needs one.
"""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import corpus_fake
from support.paths import ROOT

from corpus import catalog, npm, shape

# -- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tarballs() -> dict[str, tuple[npm.Locked, bytes]]:
    return corpus_fake.tarballs()


@pytest.fixture(scope="module")
def packages(tarballs) -> dict[str, npm.Package]:
    return {name: npm.Package(locked, data) for name, (locked, data) in tarballs.items()}


@pytest.fixture
def registry(tarballs):
    with corpus_fake.registry(tarballs) as served:
        yield served


def _closed_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- the plan -----------------------------------------------------------------


def test_plan_fits_published_quantiles():
    plans = shape.plan(38)
    req = np.percentile([p.requests for p in plans], [10, 50, 90])
    kb = np.percentile([p.kbytes for p in plans], [10, 50, 90])
    for got, want in zip(req, (24, 71, 176), strict=True):
        assert abs(got / want - 1) <= 0.25, (req, want)
    for got, want in zip(kb, (607, 2412, 9179), strict=True):
        assert abs(got / want - 1) <= 0.25, (kb, want)


def test_plan_origins_and_third_parties():
    plans = shape.plan(38)
    assert sum(p.single_origin for p in plans) == 2
    assert sum(p.third_party for p in plans) == 35  # 92 % of 38
    assert len({p.name for p in plans}) == 38
    for p in plans:
        assert p.js + p.image + p.css + p.font + p.html + p.other == p.requests
        assert min(p.js, p.image, p.css, p.font, p.html) >= 1


def test_plan_is_deterministic_and_seeded():
    assert shape.plan(38) == shape.plan(38)
    assert shape.plan(38, seed=1) != shape.plan(38)


def test_median_mix_follows_the_almanac():
    mid = min(shape.plan(38), key=lambda p: abs(p.requests - 71))
    assert (mid.js, mid.image, mid.css, mid.font) == pytest.approx((24, 18, 8, 4), abs=2)


# -- a built site -------------------------------------------------------------


def _small(plan: shape.SitePlan, kbytes: int = 400) -> shape.SitePlan:
    return dataclasses.replace(plan, kbytes=kbytes)


def _pick(pred) -> shape.SitePlan:
    return next(p for p in shape.plan(38) if pred(p))


def test_site_has_the_planned_requests_and_parts(packages):
    from corpus import site

    plan = _small(_pick(lambda p: p.third_party and 40 <= p.requests <= 70))
    s = site.build(plan, packages)
    assert len(s.resources) == plan.requests
    assert len(s.ips) >= 5
    types = {r.content_type.split(";")[0] for r in s.resources.values()}
    assert {"image/jpeg", "image/svg+xml", "font/woff2", "text/css",
            "application/javascript", "application/json", "text/html"} <= types
    statuses = sorted({r.status for r in s.resources.values()})
    assert 301 in statuses and 404 in statuses and 200 in statuses
    hosts = set(s.ips)
    assert "www.googletagmanager.com" in hosts and "www.google-analytics.com" in hosts
    page = site.gzip.decompress(s.resources[(plan.www, "/en/")].body).decode()
    assert "<script src=" in page and " defer>" in page and " async>" in page
    assert 'id="feed"' in page and 'id="slides"' in page and 'id="more"' in page
    # Everything the app fetches is a resource of the site.
    cfg = json.loads(page.split("window.__SITE__ = ")[1].split(";</script>")[0])
    for url in cfg["api"] + [cfg["lazyChunk"]]:
        host, _, target = url.removeprefix("https://").partition("/")
        assert (host, "/" + target) in s.resources


def test_site_bytes_follow_the_plan(packages):
    from corpus import site

    plan = _small(_pick(lambda p: p.third_party and p.requests < 40), kbytes=600)
    s = site.build(plan, packages)
    assert abs(s.bytes() / (plan.kbytes * 1024) - 1) <= 0.25


def test_single_origin_site_has_one_host(packages):
    from corpus import site

    plan = _small(_pick(lambda p: p.single_origin))
    s = site.build(plan, packages)
    assert list(s.ips) == [plan.www]
    assert {h for h, _ in s.resources} == {plan.www}
    assert len(s.resources) == plan.requests


def test_site_build_is_byte_identical(packages):
    from corpus import site

    plan = _small(_pick(lambda p: p.requests < 30), kbytes=300)
    assert site.build(plan, packages).digest() == site.build(plan, packages).digest()
    other = dataclasses.replace(plan, seed=plan.seed + 1)
    assert site.build(other, packages).digest() != site.build(plan, packages).digest()


def test_the_sites_scripts_come_from_their_files(packages, tmp_path, monkeypatch):
    """The runtime, the app and the analytics tag are corpus/js/*.js as they are, and a
    changed script is a changed recording (the build's digest covers the files)."""
    from corpus import __main__ as build_cmd
    from corpus import site

    plan = _small(_pick(lambda p: p.third_party and p.requests < 40))
    s = site.build(plan, packages)
    served = [site.gzip.decompress(r.body).decode() for r in s.resources.values()
              if r.content_type == site.TYPES["js"] and r.gzip]
    files = {n: (site.SCRIPTS / n).read_text() for n in ("runtime.js", "app.js", "tracker.js")}
    assert files["runtime.js"] in served and files["app.js"] in served
    head, tail = files["tracker.js"].split("BEACONS")
    assert any(js.startswith(head) and js.endswith(tail) and js != files["tracker.js"]
               for js in served)
    assert "BEACONS" not in files["runtime.js"] + files["app.js"]
    copy = tmp_path / "corpus"
    for src in [*site.SCRIPTS.parent.glob("*.py"), *site.SCRIPTS.glob("*.js")]:
        dest = copy / src.relative_to(site.SCRIPTS.parent)
        dest.parent.mkdir(exist_ok=True)
        dest.write_bytes(src.read_bytes())
    monkeypatch.setattr(build_cmd, "__file__", str(copy / "__main__.py"))
    before = build_cmd.plan_digest(plan, b"")
    assert before == build_cmd.plan_digest(plan, b"")
    (copy / "js" / "app.js").write_text(files["app.js"] + "\n")
    assert build_cmd.plan_digest(plan, b"") != before


def test_images_are_real_and_sized():
    from PIL import Image

    from corpus import images

    for kind, fmt in (("jpeg", "JPEG"), ("webp", "WEBP"), ("png", "PNG")):
        body, w, h = images.sized(kind, 60_000, 5, (4, 3))
        im = Image.open(io.BytesIO(body))
        assert im.format == fmt and im.size == (w, h)
        assert 0.6 <= len(body) / 60_000 <= 1.4, (kind, len(body))
        assert images.sized(kind, 60_000, 5, (4, 3))[0] == body


# -- packages -----------------------------------------------------------------


def test_fetch_checks_integrity_and_caches(tmp_path, registry, tarballs):
    url, handler = registry
    lock = {n: tarballs[n][0] for n in ("jquery", "react")}
    got = npm.fetch_all(lock, url, tmp_path / "cache")
    assert got["jquery"].file("dist/jquery.min.js").startswith(b"/* jquery")
    assert len(handler.hits) == 2
    npm.fetch_all(lock, url, tmp_path / "cache")
    assert len(handler.hits) == 2  # from the cache
    cached = next((tmp_path / "cache").glob("*.tgz"))
    cached.write_bytes(b"damaged")
    npm.fetch_all(lock, url, tmp_path / "cache")
    assert len(handler.hits) == 3  # the damaged one again
    bad = dataclasses.replace(lock["jquery"], integrity="sha512-" + "A" * 88)
    with pytest.raises(npm.InputError, match=r"cannot fetch jquery@3\.7\.1 .*sha512"):
        npm.fetch(bad, url, tmp_path / "cache2")
    assert not (tmp_path / "cache2").exists()


def test_lock_pins_every_catalog_package():
    lock = npm.load_lock()
    assert {n: e.version for n, e in lock.items()} == catalog.VERSIONS
    assert all(e.integrity.startswith("sha512-") and len(e.sha512) == 64
               for e in lock.values())


def _corpus(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corpus", *argv], cwd=ROOT, check=False,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def test_unreachable_registry_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    cp = _corpus("build", "--sites", "3", "--out", str(out), "--cache", str(tmp_path / "c"),
                 "--registry", f"http://127.0.0.1:{_closed_port()}/", cwd=tmp_path)
    lines = cp.stderr.splitlines()
    assert cp.returncode == 2, cp.stderr
    assert len(lines) == 1 and "Traceback" not in cp.stderr
    assert lines[0].startswith("corpus: error: cannot fetch ")
    assert "@" in lines[0] and "127.0.0.1" in lines[0]
    assert not out.exists() and not any((tmp_path / "c").glob("*.tgz"))


def test_registry_missing_a_package_names_it(tmp_path, registry):
    url, handler = registry
    handler.blobs.pop(next(k for k in handler.blobs if "/jquery/" in k))
    cp = _corpus("build", "--sites", "3", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "c"), "--registry", url, cwd=tmp_path)
    assert cp.returncode == 2
    # The lock's real integrity does not match the fake tarballs: the first is named.
    assert cp.stderr.count("\n") == 1 and "corpus: error: cannot fetch " in cp.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, expect", [
    (["build", "--sites", "0"], "--sites: expected 1 to 250, got 0"),
    (["build", "--sites", "x"], "--sites: expected a whole number"),
    (["build", "--sites", "3", "--only", "nosuch"], "--only: expected names of the plan"),
])
def test_bad_arguments_are_one_line(tmp_path, argv, expect):
    cp = _corpus(*argv, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert cp.returncode == 2 and expect in cp.stderr, cp.stderr
    assert cp.stderr.count("\n") == 1 and cp.stderr.startswith("corpus: error: ")
    assert not (tmp_path / "out").exists()


def test_testbed_never_imports_the_corpus():
    import ast

    for src in (ROOT / "testbed").rglob("*.py"):
        for node in ast.walk(ast.parse(src.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "corpus" or n.startswith("corpus.") for n in names), src
