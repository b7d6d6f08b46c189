"""Build and record the corpus: N sites shaped like the web, each a recording.

    sudo .venv/bin/python -m corpus build [--sites 38] [--out recordings/corpus]
    .venv/bin/python -m corpus table [--out recordings/corpus]   # figures per site, quantiles
    .venv/bin/python -m corpus lock                               # rewrite packages.lock.json

`build` fetches the npm packages of corpus/packages.lock.json once (checked
against their sha512; kept in ~/.cache/testbed/corpus or --cache), builds
each site (corpus/site.py) and records it with `testbed record` inside a
namespace (corpus/record.py) into OUT/NAME, swapped in when complete. A
site whose recording exists and was made from the same plan, packages and
generator (OUT/.digests/NAME) is skipped, so a second build does nothing.
Bad input and an unreachable registry are one line on stderr and exit 2,
before anything is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy
import PIL

from corpus import npm, shape
from testbed.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "recordings" / "corpus"
TESTBED = Path(sys.executable).parent / "testbed"


def plan_digest(plan: shape.SitePlan, lock_bytes: bytes) -> str:
    """What a recording was made from: the plan, the lock, the generator (its Python and
    its sites' scripts) and its encoders."""
    h = hashlib.sha256(json.dumps(dataclasses.asdict(plan), sort_keys=True).encode())
    h.update(lock_bytes)
    here = Path(__file__).resolve().parent
    for src in sorted([*here.glob("*.py"), *here.glob("js/*.js")]):
        h.update(src.relative_to(here).as_posix().encode() + src.read_bytes())
    h.update(f"{PIL.__version__} {numpy.__version__}".encode())
    return h.hexdigest()


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= n <= 250:
        raise argparse.ArgumentTypeError(f"expected 1 to 250, got {n}")
    return n


def build(args) -> int:
    plans = shape.plan(args.sites, args.seed)
    if args.only:
        unknown = sorted(set(args.only) - {p.name for p in plans})
        if unknown:
            raise InputError(f"--only: expected names of the plan's sites, got {unknown[0]!r}")
        plans = [p for p in plans if p.name in args.only]
    lock_bytes = args.lock.read_bytes() if args.lock.is_file() else b""
    out: Path = args.out
    todo = []
    for p in plans:
        stamp = out / ".digests" / p.name
        fresh = (stamp.is_file() and (out / p.name / "manifest.json").is_file()
                 and stamp.read_text().strip() == plan_digest(p, lock_bytes))
        if args.force or not fresh:
            todo.append(p)
    if not todo:
        print(f"corpus: {len(plans)} sites up to date in {out}")
        return 0
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out: expected a folder, got a file")
    # Every package before anything is written: an unreachable registry is one line.
    packages = npm.fetch_all(npm.load_lock(args.lock), args.registry, args.cache)
    if os.geteuid() != 0:
        raise InputError("corpus build: records in network namespaces, run it as root")
    from corpus import record, site  # Pillow and the encoders only when building

    for i, p in enumerate(todo, 1):
        t = time.monotonic()
        s = site.build(p, packages)
        rc = record.record(s, out / p.name, TESTBED, timeout=args.timeout)
        if rc != 0:
            print(f"corpus: recording {p.name} failed (testbed record exit {rc})",
                  file=sys.stderr)
            return rc
        (out / ".digests").mkdir(exist_ok=True)
        (out / ".digests" / p.name).write_text(plan_digest(p, lock_bytes) + "\n")
        print(f"corpus: [{i}/{len(todo)}] {p.name}: {len(s.resources)} requests, "
              f"{s.bytes() / 1024:.0f} KB, {len(s.ips)} hosts, "
              f"{time.monotonic() - t:.0f} s", flush=True)
    return 0


def table(args) -> int:
    from corpus import figures

    print(figures.render(args.out, shape.plan(args.sites, args.seed)))
    return 0


def lock(args) -> int:
    from corpus import catalog

    entries = {n: npm.resolve(n, v, args.registry) for n, v in catalog.VERSIONS.items()}
    npm.write_lock(entries)
    print(f"corpus: wrote {npm.LOCK} ({len(entries)} packages)")
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, exit 2, as every bad input is."""

    def error(self, message: str):
        print(f"corpus: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="python -m corpus", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, fn in (("build", build), ("table", table), ("lock", lock)):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn)
        p.add_argument("--registry", default=npm.default_registry(),
                       help="npm registry (default: $npm_config_registry or the public one)")
        p.add_argument("--sites", type=_positive, default=38, help="sites in the corpus")
        p.add_argument("--seed", type=int, default=2024, help="seed of the corpus's plan")
        p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="recordings folder")
    b = sub.choices["build"]
    b.add_argument("--cache", type=Path, default=npm.default_cache(),
                   help="package tarball cache (default ~/.cache/testbed/corpus)")
    b.add_argument("--only", nargs="+", metavar="NAME", help="build only these sites")
    b.add_argument("--force", action="store_true", help="record again even if up to date")
    b.add_argument("--lock", type=Path, default=npm.LOCK,
                   help="package lock (default corpus/packages.lock.json)")
    b.add_argument("--timeout", type=float, default=60, help="testbed record --timeout")
    args = ap.parse_args(argv)
    try:
        return args.fn(args)
    except InputError as e:
        print(f"corpus: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
