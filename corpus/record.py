"""Serve a built site inside a namespace and record it with `testbed record`.

    with Served(site) as served:          # namespace, every IP, a throwaway CA, the server
        record(site, served, out_dir)     # testbed record URL --netns ... --resolve ...

The same way recordings/make_bundled.py records the bundled local-news:
the site's IPs exist only on the loopback of a namespace made for this
block, the server's certificate comes from a CA made for it, and
`testbed record` reaches the hosts through `--resolve` only. Nothing leaves
the namespace; everything is removed when the block ends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from corpus.server import AS_OF
from corpus.site import Site
from testbed.host import proc
from testbed.host.netns import NetNS

ROOT = Path(__file__).resolve().parent.parent
SERVER = Path(__file__).resolve().parent / "server.py"
RECORDED_AT = dt.datetime.fromtimestamp(AS_OF, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
"""Every corpus recording's time (`testbed record --recorded-at`): with the server's
fixed Date headers, a site recorded twice gives the same bytes."""
sys.path.insert(0, str(ROOT / "tests" / "site"))
from harness import make_certs


def write_site(site: Site, out: Path) -> None:
    """site.json and bodies/ for corpus/server.py."""
    (out / "bodies").mkdir(parents=True)
    rows = []
    for (host, target), r in sorted(site.resources.items()):
        sha = hashlib.sha256(r.body).hexdigest() if r.body else ""
        if sha:
            (out / "bodies" / sha).write_bytes(r.body)
        rows.append([host, target, r.status, r.content_type, r.headers, r.gzip, sha])
    (out / "site.json").write_text(json.dumps({"ips": site.ips, "resources": rows}))


class Served:
    """The site served inside its own namespace while the block runs."""

    def __init__(self, site: Site):
        self.site = site

    def __enter__(self) -> Self:
        with ExitStack() as exits:
            self.dir = Path(tempfile.mkdtemp(prefix="corpus-site-"))
            exits.callback(shutil.rmtree, self.dir, True)
            write_site(self.site, self.dir / "site")
            self.ns = exits.enter_context(NetNS("corpus"))
            for ip in sorted(set(self.site.ips.values())):
                self.ns.add_address(ip)
            self.ca_file, cert, key = make_certs(self.site.hosts, self.dir)
            ready = self.dir / "ready"
            server = exits.enter_context(proc.Background(
                self.ns.exec([sys.executable, SERVER, "--site", self.dir / "site",
                              "--cert", cert, "--key", key, "--ready", ready]),
                log=self.dir / "server.out"))
            deadline = time.monotonic() + 30
            while not ready.exists():
                if not server.alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"corpus site server did not start: {server.tail()}")
                time.sleep(0.05)
            self._exits = exits.pop_all()
        return self

    def __exit__(self, *exc) -> None:
        self._exits.close()

    def record_args(self) -> list[str]:
        args = ["--netns", self.ns.name, "--upstream-ca", str(self.ca_file)]
        for host, ip in sorted(self.site.ips.items()):
            args += ["--resolve", f"{host}={ip}"]
        return args


def record(site: Site, final: Path, testbed: Path, timeout: float = 60) -> int:
    """Record the site into `final` (a new folder swapped in when complete); the exit status."""
    name = final.name
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=final.parent))
    try:
        with Served(site) as served:
            cp = subprocess.run([str(testbed), "record", site.url, "--name", name,
                                 "--out", str(staging), "--loads", "1",
                                 "--recorded-at", RECORDED_AT,
                                 "--timeout", str(timeout), *served.record_args()],
                                check=False)
        if cp.returncode != 0:
            return cp.returncode
        if final.exists():
            old = final.with_name(f".{name}.old")
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            (staging / name).rename(final)
            shutil.rmtree(old)
        else:
            (staging / name).rename(final)
        return 0
    finally:
        shutil.rmtree(staging, ignore_errors=True)
