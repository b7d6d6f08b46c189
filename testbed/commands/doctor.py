"""`testbed doctor`: what this machine can do, one row per capability.

Each check is a small function returning a Row. Checks that exercise a part
(a Mahimahi shell, Chromium) really start it, inside namespaces the doctor
owns and removes. Required checks that fail make the exit status 1.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from testbed.errors import CommandFailed
from testbed.host import chromium, proc, runstate, safefs
from testbed.host.enter import as_user
from testbed.host.paths import PYTHON, QUIC_SERVERS, ROOT, shown
from testbed.validate import verdict
from testbed.validate.verdict import Row

TRACE = "/usr/share/mahimahi/traces/TMobile-LTE-driving.up"
PROBE_IP = "203.0.113.1"  # TEST-NET-3; exists only inside the doctor's namespace
FIREFOX_SEEN = "firefox-seen.png"
"""The image of the doctor's Firefox page: its request in the server's log says Firefox
loaded the page (Firefox has no --dump-dom)."""


def passed(name: str, detail: str) -> Row:
    return Row(name, observed=detail, ok=True)


def failed(name: str, detail: str, hint: str) -> Row:
    return Row(name, observed=detail, ok=False, hint=hint)


def info(name: str, detail: str, hint: str = "") -> Row:
    return Row(name, observed=detail, ok=None, hint=hint, required=False)


def json_row(row: Row) -> dict:
    """A row as `testbed doctor --json` gives it."""
    return {"name": row.name, "status": verdict.PASS_FAIL.word(row.ok), "detail": row.observed,
            "hint": row.hint, "required": row.required}


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


# ---- checks that need no namespace ----------------------------------------------------

def check_root() -> Row:
    if os.geteuid() == 0:
        return passed("root", "running as root")
    return failed("root", f"running as uid {os.geteuid()}", "run as root: sudo .venv/bin/testbed doctor")


def check_user() -> Row:
    try:
        pw = pwd.getpwnam(runstate.USER)
    except KeyError:
        return failed("testbed user", f"no user {runstate.USER!r}", "make setup creates it")
    return passed("testbed user", f"{pw.pw_name} (uid {pw.pw_uid}) runs Mahimahi and Chromium")


def check_tun() -> Row:
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return failed("TUN", f"/dev/net/tun: {e.strerror}", "load the tun module; in Docker use --privileged")
    return passed("TUN", "/dev/net/tun opens")


def check_ip_forward() -> Row:
    value = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
    if value == "1":
        return passed("ip_forward", "net.ipv4.ip_forward = 1 (Mahimahi's nested shells need it)")
    return failed("ip_forward", f"net.ipv4.ip_forward = {value}",
                  "sysctl -w net.ipv4.ip_forward=1 (make setup makes it persistent)")


def check_congestion_control() -> Row:
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = [cc for cc in ("cubic", "bbr") if cc not in available]
    if missing:
        for cc in missing:
            proc.run(["modprobe", f"tcp_{cc}"], check=False)
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        missing = [cc for cc in ("cubic", "bbr") if cc not in available]
    default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    if missing:
        return failed("BBR and CUBIC", f"available: {' '.join(available)}",
                      f"kernel lacks {', '.join(missing)} (CONFIG_TCP_CONG_BBR / _CUBIC)")
    return passed("BBR and CUBIC", f"available ({' '.join(available)}); host default {default}, "
                  "every protocol setting sets its own")


def check_chromium() -> Row:
    chromium = proc.version(["chromium", "--version"])
    driver = proc.version(["chromedriver", "--version"])
    if not chromium or not driver:
        return failed("Chromium", f"chromium: {chromium}, chromedriver: {driver}",
                      "apt-get install chromium chromium-driver (make setup)")
    return passed("Chromium", f"{chromium}; {driver.split(' (')[0]}")


def check_firefox() -> Row:
    from testbed.host import firefox

    problem = firefox.missing()
    if problem and "geckodriver" not in problem:
        return failed("Firefox", problem, "make setup (apt: firefox-esr libnss3-tools)")
    ver = firefox.version()
    if not ver:
        return failed("Firefox", f"{firefox.FIREFOX} does not start", "make setup (apt: firefox-esr)")
    return passed("Firefox", f"{ver}; certutil for the trial profiles' trust")


def check_geckodriver() -> Row:
    from testbed.host import firefox

    ver = proc.version([str(firefox.GECKODRIVER), "--version"])
    if not ver:
        return failed("geckodriver", f"{shown(firefox.GECKODRIVER)} missing or does not start",
                      "make setup (step geckodriver: cargo install from crates.io)")
    if ver.split()[-1] != firefox.GECKODRIVER_VERSION:
        return failed("geckodriver", f"{ver}, pinned {firefox.GECKODRIVER_VERSION}",
                      "make setup (step geckodriver) installs the pinned version")
    return passed("geckodriver", ver)


def check_browsertime() -> Row:
    from testbed.measure import browsertime

    problem = browsertime.missing()
    if problem:
        return failed("Browsertime", problem, "make setup")
    node = proc.version([str(browsertime.NODE), "--version"])
    if not proc.version([str(browsertime.NODE), str(browsertime.BROWSERTIME), "--version"]):
        return failed("Browsertime", f"does not start with Node {node}", "make setup")
    return passed("Browsertime", f"browsertime {browsertime.version()} on Node {node}")


def check_visual_metrics() -> Row:
    ffmpeg = proc.version(["ffmpeg", "-version"])
    try:
        cp = proc.run(proc.python("-c", "import numpy, PIL; print(numpy.__version__, PIL.__version__)",
                                  interpreter=PYTHON))
        libs = cp.stdout.split()
    except CommandFailed as e:
        return failed("visual metrics", str(e), "make setup (NumPy and Pillow in .venv)")
    if not ffmpeg:
        return failed("visual metrics", "ffmpeg missing", "apt-get install ffmpeg")
    return passed("visual metrics", f"{' '.join(ffmpeg.split()[:3])}; NumPy {libs[0]}, Pillow {libs[1]}")


def check_xvfb() -> Row:
    if not shutil.which("Xvfb"):
        return failed("Xvfb", "Xvfb missing", "apt-get install xvfb")
    display = f":{90 + os.getpid() % 100}"
    with proc.Background(["Xvfb", display, "-nolisten", "tcp", "-screen", "0", "1280x1024x24"]) as x:
        time.sleep(0.5)
        if not x.alive():
            return failed("Xvfb", f"Xvfb {display} exited at start", "check Xvfb's log")
    return passed("Xvfb", f"starts ({display})")


def check_nginx() -> Row:
    cp = proc.run(["nginx", "-V"], check=False)
    text = cp.stderr + cp.stdout
    if cp.returncode != 0:
        return failed("nginx", "nginx missing", "apt-get install nginx-light")
    ver = first_line(text).split(":")[-1].strip()
    if "http_v2_module" not in text or "http_ssl_module" not in text:
        return failed("nginx", f"{ver} lacks HTTP/2 or TLS", "install Debian's nginx-light")
    return passed("nginx", f"{ver} with HTTP/2 and TLS")


def check_uwsgi() -> Row:
    ver = proc.version(["uwsgi", "--version"])
    plugin = Path("/usr/lib/uwsgi/plugins/python3_plugin.so")
    if not ver or not plugin.exists():
        return failed("uWSGI", f"uwsgi {ver}, python3 plugin {'present' if plugin.exists() else 'missing'}",
                      "apt-get install uwsgi-core uwsgi-plugin-python3")
    return passed("uWSGI", f"uWSGI {ver} with the python3 plugin")


def _quic_server(name: str, what: str) -> Row:
    binary = QUIC_SERVERS[name]
    if not binary.exists():
        return failed(what, f"{shown(binary)} not built", "make setup")
    ver = proc.version([str(binary), "--version"])
    if not ver:
        return failed(what, f"{name} does not start", "make setup rebuilds it")
    return passed(what, ver)


def check_h3server() -> Row:
    return _quic_server("h3server", "HTTP/3 server")


def check_h3quinn() -> Row:
    return _quic_server("h3quinn", "HTTP/3 server (quinn)")


def check_mitmproxy() -> Row:
    ver = proc.version([str(ROOT / ".venv/bin/mitmdump"), "--version"])
    if not ver:
        return failed("mitmproxy", "mitmdump missing from .venv", "make setup")
    return passed("mitmproxy", ver)


def check_iperf3() -> Row:
    ver = proc.version(["iperf3", "--version"])
    return passed("iperf3", ver) if ver else failed("iperf3", "missing", "apt-get install iperf3")


# ---- checks that run inside the doctor's namespaces ------------------------------------

@contextmanager
def lab() -> Iterator:
    """A replay topology with one server IP and a tiny HTTP server on it."""
    from testbed.host.topology import ReplayTopology

    with ReplayTopology([PROBE_IP]) as topo:
        www = Path(tempfile.mkdtemp(prefix="doctor-www-"))
        (www / "index.html").write_text("<html><title>doctor</title><body>doctor-ok</body></html>")
        (www / "firefox.html").write_text(
            f'<html><title>doctor</title><body><img src="{FIREFOX_SEEN}"></body></html>')
        os.chmod(www, 0o755)
        server = topo.server.exec(proc.python("-m", "http.server", "80", "--bind", PROBE_IP,
                                              "--directory", str(www)))
        try:
            with proc.Background(server, log=server_log()):
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    probe = proc.run(topo.client.exec(["curl", "-s", "-o", "/dev/null", "-m", "1",
                                                       f"http://{PROBE_IP}/"]), check=False)
                    if probe.returncode == 0:
                        break
                    time.sleep(0.1)
                yield topo
        finally:
            shutil.rmtree(www, ignore_errors=True)


def check_netns_iptables(topo) -> list[Row]:
    rows = [passed("network namespaces", f"created {topo.server.name}, {topo.client.name} and a veth pair"),
            check_own_ehash(topo)]
    ipt = proc.version(["iptables", "--version"])
    nft = proc.version(["nft", "--version"])
    cp = proc.run(topo.client.exec(["iptables", "-t", "nat", "-S"]), check=False)
    if cp.returncode != 0:
        rows.append(failed("iptables/nftables", first_line(cp.stderr), "apt-get install iptables nftables"))
    else:
        rows.append(passed("iptables/nftables", f"{ipt}; {nft}; NAT table usable in a namespace"))
    return rows


def check_own_ehash(topo) -> Row:
    """The namespace's own TCP established hash table (testbed.host.netns.EHASH_ENTRIES)."""
    name = "TCP hash table per namespace"
    got = proc.run(topo.server.exec(["sysctl", "-n", "net.ipv4.tcp_ehash_entries"]), check=False)
    try:
        n = int(got.stdout.strip())
    except ValueError:
        return info(name, f"unreadable: {first_line(got.stderr) or got.stdout.strip()}")
    if n > 0:  # negative: the host's shared table
        return passed(name, f"{n} buckets of its own: a telemetry dump takes microseconds")
    return info(name, f"shares the host's {-n} buckets (no tcp_child_ehash_entries before "
                "Linux 6.1): each telemetry dump walks them all, ~1 ms",
                "a kernel >= 6.1 makes the TCP telemetry's dumps cheap")


def check_qdiscs(topo) -> list[Row]:
    """fq and netem, tried on the client end of the doctor's veth."""
    rows = []
    dev = topo.client_dev
    fq = proc.run(topo.client.exec(["tc", "qdisc", "replace", "dev", dev, "root", "fq"]), check=False)
    if fq.returncode == 0:
        rows.append(info("fq qdisc", "available: TCP pacing uses fq on the server side"))
    else:
        rows.append(info("fq qdisc", "missing (CONFIG_NET_SCH_FQ): TCP pacing uses Linux's internal "
                         "pacing, switched on per socket with SO_MAX_PACING_RATE",
                         "nothing to do; pacing is verified by `testbed validate protocols`"))
    netem = proc.run(topo.client.exec(["tc", "qdisc", "replace", "dev", dev, "root", "netem",
                                       "delay", "1ms"]), check=False)
    rows.append(info("netem qdisc", "available (not used: Mahimahi shapes)" if netem.returncode == 0
                     else "missing (not needed: Mahimahi shapes the path)"))
    proc.run(topo.client.exec(["tc", "qdisc", "del", "dev", dev, "root"]), check=False)
    return rows


def mahimahi_shells() -> dict[str, list[str]]:
    return {
        "mm-delay": ["mm-delay", "5"],
        "mm-link": ["mm-link", TRACE, TRACE, "--"],
        "mm-loss": ["mm-loss", "uplink", "0.0"],
    }


def check_mahimahi(topo) -> list[Row]:
    rows = []
    for name, prefix in mahimahi_shells().items():
        if not shutil.which(name):
            rows.append(failed(name, "not installed", "make setup (Mahimahi from Debian 11)"))
            continue
        probe = ["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", f"http://{PROBE_IP}/"]
        cp = proc.run(as_user([*prefix, *probe], netns=topo.client.name), check=False, timeout=30)
        if cp.returncode == 0 and cp.stdout.strip() == "200":
            rows.append(passed(name, f"starts as {runstate.USER}; HTTP request through it answered"))
        else:
            why = first_line(cp.stderr) or f"exit {cp.returncode}, HTTP {cp.stdout.strip() or 'none'}"
            hint = ("the iptables shim is missing: make setup" if "111" in why
                    else "see `testbed doctor --json` for the full message")
            rows.append(failed(name, why, hint))
    return rows


def check_chromium_load(topo) -> Row:
    profile = chromium.make_profile(prefix="doctor-chromium-")
    tmp = chromium.make_profile(prefix="doctor-chromium-tmp-")
    try:
        argv = chromium.launch_argv(profile, tmp, [
            "--disable-gpu", *chromium.STACK_FLAGS["tcp"],
            f"--host-resolver-rules=MAP doctor.test {PROBE_IP}", "--dump-dom",
            "http://doctor.test/"], netns=topo.client.name)
        cp = proc.run(argv, check=False, timeout=60)
    finally:
        safefs.rmtree(tmp)  # the testbed user's tree
        safefs.rmtree(profile)
    if "doctor-ok" in cp.stdout:
        return passed("Chromium headless load", f"loaded a local page as {runstate.USER}, sandbox on")
    return failed("Chromium headless load", first_line(cp.stderr) or f"exit {cp.returncode}",
                  "Chromium's sandbox needs unprivileged user namespaces (kernel.unprivileged_userns_clone=1)")


def server_log() -> Path:
    """The lab's HTTP server's log (its requests), in the doctor's run folder."""
    return runstate.current().dir / "doctor-www.log"


def check_firefox_load(topo) -> Row:
    """Firefox (headless, `--screenshot`: it loads the page, writes the picture and exits)
    as the testbed user in the client's namespace, sandbox on, in a fresh profile with
    the campaign's quiet preferences; the page's image reaching the server says it
    loaded and parsed the page."""
    from testbed.host import firefox

    if not os.access(firefox.FIREFOX, os.X_OK):
        return failed("Firefox headless load", f"{firefox.FIREFOX} missing",
                      "make setup (apt: firefox-esr)")
    profile = chromium.make_profile(prefix="doctor-firefox-")
    tmp = chromium.make_profile(prefix="doctor-firefox-tmp-")
    try:
        fd = safefs.open_dir(profile)  # the testbed user's: never written through a link
        try:
            safefs.write_at(fd, "user.js", firefox.user_js(firefox.QUIET_PREFS))
        finally:
            os.close(fd)
        env = {"TMPDIR": str(tmp), "HOME": str(tmp), "XDG_CACHE_HOME": str(tmp),
               "XDG_CONFIG_HOME": str(tmp), "XDG_DATA_HOME": str(tmp)}
        argv = as_user([str(firefox.FIREFOX), "--headless", "--no-remote", "--profile",
                        str(profile), "--screenshot", str(tmp / "doctor.png"),
                        f"http://{PROBE_IP}/firefox.html"], netns=topo.client.name, env=env)
        cp = proc.run(argv, check=False, timeout=90)
    finally:
        safefs.rmtree(tmp)  # the testbed user's trees
        safefs.rmtree(profile)
    seen = server_log().read_text(errors="replace") if server_log().exists() else ""
    if f"GET /{FIREFOX_SEEN} " in seen:
        return passed("Firefox headless load",
                      f"loaded a local page as {runstate.USER}, sandbox on (level 4)")
    return failed("Firefox headless load", first_line(cp.stderr) or f"exit {cp.returncode}; "
                  "the page's image never reached the server",
                  "see `testbed doctor --json`; Firefox's content sandbox needs unprivileged "
                  "user namespaces (kernel.unprivileged_userns_clone=1)")


CHECKS: list[Callable[[], Row]] = [
    check_root, check_user, check_tun, check_ip_forward, check_congestion_control,
    check_chromium, check_firefox, check_geckodriver, check_browsertime, check_visual_metrics, check_xvfb, check_nginx,
    check_uwsgi, check_h3server, check_h3quinn, check_mitmproxy, check_iperf3,
]
LAB_CHECKS: list[Callable[[Any], Row | list[Row]]] = [
    check_netns_iptables, check_qdiscs, check_mahimahi, check_chromium_load, check_firefox_load]


def run_checks() -> list[Row]:
    rows = []
    for check in CHECKS:
        try:
            rows.append(check())
        except Exception as e:  # noqa: BLE001 -- a broken check is a failed row, never a crash
            rows.append(failed(check.__name__.removeprefix("check_"), str(e), "see the message"))
    if os.geteuid() != 0:
        rows.append(failed("namespace checks", "skipped: need root", "run as root"))
        return rows
    try:
        with lab() as topo:
            for lab_check in LAB_CHECKS:
                try:
                    result = lab_check(topo)
                except Exception as e:  # noqa: BLE001 -- as above
                    result = failed(lab_check.__name__.removeprefix("check_"), str(e),
                                    "see the message")
                rows.extend(result if isinstance(result, list) else [result])
    except Exception as e:  # noqa: BLE001 -- the lab itself could not be built
        rows.append(failed("network namespaces", str(e), "needs root and CONFIG_NET_NS; in Docker --privileged"))
    finally:
        runstate.release()
    return rows


COLUMNS = (verdict.column("capability", "name"), verdict.verdict("status", "left"),
           verdict.column("detail", "observed"), verdict.column("hint", "hint"))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def doctor(as_json: bool) -> None:
    """Check every capability the testbed needs on this machine (exit 1 if a required one fails)."""
    rows = run_checks()
    if as_json:
        click.echo(json.dumps([json_row(r) for r in rows], indent=1))
    else:
        from rich.console import Console

        verdict.render(Console(width=160), rows, COLUMNS, "testbed doctor",
                       words=verdict.PASS_FAIL, fold=True)
    if verdict.failed(rows):
        sys.exit(1)
