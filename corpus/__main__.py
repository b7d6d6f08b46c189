"""Build and record the corpus: two named sets of 38 sites each, every site a recording.

    sudo .venv/bin/python -m corpus build [--set paper|today|all] [--out recordings/corpus]
    .venv/bin/python -m corpus table [--set ...] [--out recordings/corpus]   # figures, quantiles
    .venv/bin/python -m corpus lock                               # rewrite packages.lock.json

The sets (corpus/sets.py): `paper`, pages like Wolsing et al.'s 2019 selection
(corpus/paper_shape.py), and `today`, today's web (corpus/shape.py). `build`
fetches the npm packages of corpus/packages.lock.json once (checked against
their sha512; kept in ~/.cache/testbed/corpus or --cache), builds each site
(corpus/site.py) and records it with `testbed record` inside a namespace
(corpus/record.py) into OUT/SET/NAME, swapped in when complete. A site whose
recording exists and was made from the same plan, packages and generator
(OUT/SET/.digests/NAME) is skipped, so a second build does nothing. A `today`
site recorded by an older build at OUT/NAME is moved to OUT/today/NAME first.
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

from corpus import npm, sets, shape
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


def _sets(args) -> list[str]:
    return list(sets.NAMES) if args.set == "all" else [args.set]


def _migrate(out: Path, plans: list[shape.SitePlan]) -> None:
    """Move `today` recordings an older build made at OUT/NAME to OUT/today/NAME (with
    their digests), so that they are not recorded again if still up to date."""
    for p in plans:
        old, new = out / p.name, out / "today" / p.name
        if (old / "manifest.json").is_file() and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            old.rename(new)
            stamp = out / ".digests" / p.name
            if stamp.is_file():
                (new.parent / ".digests").mkdir(exist_ok=True)
                stamp.rename(new.parent / ".digests" / p.name)
    legacy = out / ".digests"
    if legacy.is_dir() and not any(legacy.iterdir()):
        legacy.rmdir()


def build(args) -> int:
    planned = {name: sets.plan(name, args.sites, args.seed) for name in _sets(args)}
    if args.only:
        known = {p.name for plans in planned.values() for p in plans}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise InputError(f"--only: expected names of the plan's sites, got {unknown[0]!r}")
        planned = {k: [p for p in v if p.name in args.only] for k, v in planned.items()}
    lock_bytes = args.lock.read_bytes() if args.lock.is_file() else b""
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out: expected a folder, got a file")
    todo = []
    for name, plans in planned.items():
        for p in plans:
            stamp = out / name / ".digests" / p.name
            legacy = out / ".digests" / p.name if name == "today" else stamp
            fresh = any(s.is_file() and (s.parent.parent / p.name / "manifest.json").is_file()
                        and s.read_text().strip() == plan_digest(p, lock_bytes)
                        for s in (stamp, legacy))
            if args.force or not fresh:
                todo.append((name, p))
    total = sum(len(v) for v in planned.values())
    if not todo:
        if "today" in planned:
            _migrate(out, planned["today"])
        print(f"corpus: {total} sites up to date in {out}")
        return 0
    # Every package before anything is written: an unreachable registry is one line.
    packages = npm.fetch_all(npm.load_lock(args.lock), args.registry, args.cache)
    if os.geteuid() != 0:
        raise InputError("corpus build: records in network namespaces, run it as root")
    from corpus import record, site  # Pillow and the encoders only when building

    if "today" in planned:
        _migrate(out, planned["today"])
    for i, (name, p) in enumerate(todo, 1):
        t = time.monotonic()
        s = site.build(p, packages)
        rc = record.record(s, out / name / p.name, TESTBED, timeout=args.timeout)
        if rc != 0:
            print(f"corpus: recording {name}/{p.name} failed (testbed record exit {rc})",
                  file=sys.stderr)
            return rc
        (out / name / ".digests").mkdir(exist_ok=True)
        (out / name / ".digests" / p.name).write_text(plan_digest(p, lock_bytes) + "\n")
        print(f"corpus: [{i}/{len(todo)}] {name}/{p.name}: {len(s.resources)} requests, "
              f"{s.bytes() / 1024:.0f} KB, {len(s.ips)} hosts on "
              f"{len(set(s.ips.values()))} IPs ({p.layout}), "
              f"{time.monotonic() - t:.0f} s", flush=True)
    return 0


def table(args) -> int:
    from corpus import figures

    for name in _sets(args):
        print(f"## {name}\n")
        print(figures.render(args.out / name, sets.plan(name, args.sites, args.seed),
                             sets.SETS[name]))
        print()
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
        p.add_argument("--sites", type=_positive, default=38, help="sites in each set")
        p.add_argument("--seed", type=int, default=None,
                       help="seed of the sets' plans (default: each set's own)")
        p.add_argument("--set", choices=[*sets.NAMES, "all"], default="all",
                       help="the set to build or show (default: all)")
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
