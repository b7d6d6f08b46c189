#!/usr/bin/env python3
"""Regenerate a bundled recording (recordings/local-news/, recordings/gallery/) with `testbed record`.

    sudo .venv/bin/python recordings/make_bundled.py [--site gallery] [--force]

The site is the generated news site of tests/site/ (sitegen.NEWS_SITE: four
host names on three IPs, HTML, CSS, scripts, a web font, JPEG/PNG images,
a JSON API with a query string, a beacon, gzip and chunked responses,
alt-svc headers, a redirect and a promo image picked at random per load).
It is served inside a network namespace made for this run, and recorded
there by `testbed record --netns ... --resolve ...` with 3 loads, exactly as
a researcher records a real site. Nothing leaves the namespace.

The new recording is written next to the old one and swapped in only when
complete (--force replaces an existing one).

`--site gallery` records the gallery page instead (sitegen.GALLERY_SITE: a
short HTML and 40 small images on one host, its CSS and script on a
second), the page that shows how many requests Chromium lets run at once
to one host.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "site"))

import sitegen
from harness import LocalSite

from testbed.host import runstate

BUNDLED = {"local-news": sitegen.NEWS_SITE, "gallery": sitegen.GALLERY_SITE}
TESTBED = Path(sys.executable).parent / "testbed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="replace an existing recording")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--site", choices=sorted(BUNDLED), default="local-news",
                    help="which generated site to record (default local-news)")
    args = ap.parse_args()
    spec = BUNDLED[args.site]
    name = args.site
    if os.geteuid() != 0:
        sys.exit("make_bundled: run as root (namespaces): sudo .venv/bin/python "
                 "recordings/make_bundled.py")
    final = ROOT / "recordings" / name
    if final.exists() and not args.force:
        sys.exit(f"make_bundled: {final} exists; pass --force to replace it")
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=final.parent))
    try:
        with LocalSite(spec, promo="random", purpose=args.site[:8]) as site:
            cp = subprocess.run([str(TESTBED), "record", spec.url(), "--name", name,
                                 "--out", str(staging), "--loads", str(args.loads),
                                 *site.record_args()], check=False)
        if cp.returncode != 0:
            return cp.returncode
        if final.exists():
            old = final.with_name(f".{name}.old")
            final.rename(old)
            (staging / name).rename(final)
            shutil.rmtree(old)
        else:
            (staging / name).rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        runstate.release()
    subprocess.run([str(TESTBED), "recording", "show", str(final)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
