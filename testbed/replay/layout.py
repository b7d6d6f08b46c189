"""A replay's layout: which of a recording's hosts share an address and a certificate.

A browser pools two hosts onto one HTTP/2 or HTTP/3 connection only when both
resolve to one address and the connection's certificate names both (Chromium's
SpdySessionPool and QuicSessionPool, Firefox's coalescing). So how a site's hosts are
laid out over addresses and certificates decides how many connections its page
opens. Two layouts:

- `recorded` (the default): every host on the address the recording gives it
  (hosts recorded on one address share it, as corpus sites' `static.` and `img.`
  do), and one certificate naming every host and address of the recording, as
  replays have always served. Hosts on one address pool; hosts on different
  addresses cannot, whatever their certificate names.
- `split`: every host on an address of its own and with a certificate of its own
  naming only it (and its address), as a site whose hosts are separate servers would
  be: nothing pools. A host alone on its recorded address keeps it; each host of a
  shared address gets a fresh one (`fresh_addresses`) in the same address space
  (private stays private, public stays public: Chromium's Local Network Access
  blocks a public page's requests to a private address, so moving a host across
  would block its requests), and a host literal (an IP) keeps its own.

`apply(recording, layout)` is the recording the replay serves (its origins' and
exchanges' IPs rewritten; content unchanged: requests are matched by host, never by
address), marked with its layout in `extra[MARK]`; the topology, the servers'
listeners, Chromium's resolver rules and Firefox's /etc/hosts all read the
addresses from it. `certificates(recording)` is what testbed.replay.env issues.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.replay.matching import normalise_host

LAYOUTS = ("recorded", "split")
DEFAULT = "recorded"
MARK = "testbed_layout"
"""The key of Recording.extra that names a laid-out recording's layout (a recording's
manifest cannot hold it: the schema allows no other key)."""
PRIVATE = (ipaddress.IPv4Network("10.0.0.0/8"), ipaddress.IPv4Network("172.16.0.0/12"),
           ipaddress.IPv4Network("192.168.0.0/16"))
"""RFC 1918: what Chromium's Local Network Access takes as a private (local) address."""
SPLIT_POOLS = {
    "private": (ipaddress.IPv4Network("10.254.0.0/16"),),
    "public": (ipaddress.IPv4Network("192.0.2.0/24"), ipaddress.IPv4Network("198.51.100.0/24"),
               ipaddress.IPv4Network("203.0.113.0/24")),
}
"""Where `split` takes fresh addresses from, by the address space of the host's recorded
one: for a private address, 10.254.0.0/16; for a public one, the three documentation
ranges of RFC 5737 (no real server answers there), which Chromium takes as public.
A recorded IP in a pool is skipped; all are servable in the replay's namespaces."""


@dataclass(frozen=True)
class Group:
    """Hosts served at one address."""

    ip: str
    hosts: tuple[str, ...]
    """Host names (lower case), sorted; an IP literal origin is listed as its IP."""


def is_ip(host: str) -> bool:
    """The host is an IP address (an IPv6 literal in brackets too), not a name."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def addresses(recording: rec.Recording) -> list[Group]:
    """The recording's hosts by the address they are served at, in address order."""
    by_ip: dict[str, set[str]] = {}
    for o in recording.origins:
        by_ip.setdefault(o.ip, set()).add(normalise_host(o.host))
    return [Group(ip, tuple(sorted(by_ip[ip]))) for ip in recording.ips]


def name(recording: rec.Recording) -> str:
    """The layout the recording was laid out in (`recorded` if never)."""
    return str(recording.extra.get(MARK, DEFAULT))


def certificates(recording: rec.Recording) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each certificate the replay serves as (names it holds, addresses it is served
    on): `recorded`, one naming every host and address; `split`, one per address,
    naming its hosts and the address."""
    if name(recording) == "split":
        return [((*g.hosts, g.ip), (g.ip,)) for g in addresses(recording)]
    return [((*recording.hosts, *recording.ips), tuple(recording.ips))]


def check(layout: str, what: str = "layout") -> str:
    """`layout` if it is one of LAYOUTS; InputError naming `what` otherwise."""
    if layout not in LAYOUTS:
        raise InputError(f"{what}: expected one of {', '.join(LAYOUTS)}, got {layout!r}")
    return layout


def space(ip: str) -> str:
    """"private" (RFC 1918) or "public": the address space Chromium's Local Network
    Access puts `ip` in (loopback and link-local are not servable)."""
    return "private" if any(ipaddress.IPv4Address(ip) in n for n in PRIVATE) else "public"


def fresh_addresses(taken: set[str], kind: str) -> Iterator[str]:
    """The addresses of SPLIT_POOLS[kind] not in `taken`, in order (no network or
    broadcast address)."""
    for net in SPLIT_POOLS[kind]:
        for ip in net.hosts():
            if str(ip) not in taken:
                yield str(ip)


def split_map(recording: rec.Recording) -> dict[tuple[str, str], str]:
    """(host, recorded IP) -> the address `split` serves the host at, for every named
    host of the recording: deterministic (hosts in name order, fresh addresses in pool
    order), in the recorded address's space, never a recorded IP."""
    fresh = {kind: fresh_addresses(set(recording.ips), kind) for kind in SPLIT_POOLS}
    out: dict[tuple[str, str], str] = {}
    for g in addresses(recording):
        named = [h for h in g.hosts if not is_ip(h)]
        alone = len(g.hosts) == 1
        for host in named:
            if alone:
                out[(host, g.ip)] = g.ip
                continue
            kind = space(g.ip)
            try:
                out[(host, g.ip)] = next(fresh[kind])
            except StopIteration:
                pool = SPLIT_POOLS[kind]
                raise InputError(
                    f"{recording.path / 'manifest.json'}: layout split: more hosts on {kind} "
                    f"addresses than the {sum(n.num_addresses - 2 for n in pool)} fresh "
                    f"addresses of {', '.join(map(str, pool))}") from None
    return out


def apply(recording: rec.Recording, layout: str) -> rec.Recording:
    """The recording as a replay in `layout` serves it (see the module)."""
    check(layout)
    if layout == DEFAULT:
        return recording
    moved = split_map(recording)

    def ip(host: str, old: str) -> str:
        return moved.get((normalise_host(host), old), old)

    return dataclasses.replace(
        recording,
        origins=tuple(dataclasses.replace(o, ip=ip(o.host, o.ip)) for o in recording.origins),
        exchanges=tuple(dataclasses.replace(x, ip=ip(x.host, x.ip))
                        for x in recording.exchanges),
        extra={**recording.extra, MARK: layout})


def describe(recording: rec.Recording) -> dict:
    """The layout as `testbed recording show` prints it: each address with its hosts and
    the certificate (a number from 1) it is served with, each certificate's names, and
    the groups of hosts a browser may pool onto one connection (those sharing an
    address, whose certificate names them all)."""
    certs = certificates(recording)
    of_ip = {ip: i for i, (_, ips) in enumerate(certs, 1) for ip in ips}
    groups = addresses(recording)
    return {
        "layout": name(recording),
        "addresses": [{"ip": g.ip, "hosts": list(g.hosts), "certificate": of_ip[g.ip]}
                      for g in groups],
        "certificates": [{"number": i, "names": list(names), "addresses": list(ips)}
                         for i, (names, ips) in enumerate(certs, 1)],
        "pooled": [list(g.hosts) for g in groups if len(g.hosts) > 1],
    }
