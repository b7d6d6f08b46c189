"""The order of a campaign's trials (pure: no I/O).

Every run index visits every (site, network, protocol) combination once, in
an order shuffled with the campaign's seed, so that drift over the hours of a
campaign (a warming machine, a busy neighbour) cannot favour one setting:
each setting is as likely as any other to come early or late, and the runs
completed so far always cover the whole matrix, so an interrupted campaign
leaves complete runs behind.

The shuffle is nested, so that trials sharing what is expensive to set up
stay together: within a run the sites come in a random order, within a site
the networks, within a network the protocols. The trials of one (run, site,
network) form a block, measured by one Browsertime process inside one
Mahimahi shell chain on one replay topology; its protocols, in their random
order, differ only in the servers and settings switched between page loads.
Comparisons between protocols (the experiment's question) are thus made
between loads seconds apart, in random order, in every run.

Within a block, protocols that run on the same servers (`groups`: e.g. TCP
settings that differ only in sysctls) are kept next to each other: the
groups come in a random order and the protocols within each group too. A
replay environment then starts once per group, not once per protocol, and
every protocol's expected place in its block is still the middle.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from results_contract.schema import DEFAULT_CLIENT, trial_id


@dataclass(frozen=True, order=True)
class Trial:
    site: str
    network: str
    setting: str
    run: int
    client: str = DEFAULT_CLIENT

    @property
    def id(self) -> str:
        """The store's trial_id and the trial's folder name: `<site>+<network>+<setting>+<run>`,
        `+<client>` after it for a client other than Chromium (results_contract.schema.trial_id)."""
        return trial_id(self.site, self.network, self.setting, self.run, self.client)


@dataclass(frozen=True)
class Block:
    """Consecutive trials of one run, site, network and client (one Browsertime process)."""

    run: int
    site: str
    network: str
    trials: tuple[Trial, ...]
    client: str = DEFAULT_CLIENT

    def without(self, done: set[str]) -> Block:
        return Block(self.run, self.site, self.network,
                     tuple(t for t in self.trials if t.id not in done), self.client)


def _shuffled(items: Sequence[str], rng: random.Random) -> list[str]:
    out = list(items)
    rng.shuffle(out)
    return out


def _grouped(protocols: Sequence[str], groups: Mapping[str, object],
             rng: random.Random) -> list[str]:
    """Protocols shuffled, those of one group kept together (groups in random order)."""
    by_group: dict[object, list[str]] = {}
    for p in protocols:
        by_group.setdefault(groups.get(p, p), []).append(p)
    keys = list(by_group)
    rng.shuffle(keys)
    return [p for k in keys for p in _shuffled(by_group[k], rng)]


def blocks(sites: Sequence[str], networks: Sequence[str], protocols: Sequence[str],
           runs: int, seed: int, groups: Mapping[str, object] | None = None,
           clients: Sequence[str] = (DEFAULT_CLIENT,)) -> list[Block]:
    """All blocks of the campaign in the order they run. groups: protocol -> what
    its servers are (protocols with equal values share servers); default none.
    clients: the browsers; each (run, site, network) has a block per client, in a
    random order drawn after the protocols' (so a Chromium-only campaign keeps the
    order it always had)."""
    out = []
    for run in range(runs):
        # A string seed is hashed with SHA-512: the same order on every Python.
        rng = random.Random(f"testbed-campaign:{seed}:{run}")
        for site in _shuffled(sites, rng):
            for network in _shuffled(networks, rng):
                order = _grouped(protocols, groups or {}, rng)
                each = list(clients) if len(clients) == 1 else _shuffled(clients, rng)
                for client in each:
                    out.append(Block(run, site, network,
                                     tuple(Trial(site, network, p, run, client) for p in order),
                                     client))
    return out


def trials(plan: Iterable[Block]) -> list[Trial]:
    return [t for b in plan for t in b.trials]


def pending(plan: Iterable[Block], done: set[str]) -> list[Block]:
    """The plan without the trials already done (resume; `done`: their ids in today's
    form, Store.finished); empty blocks dropped."""
    out = []
    for b in plan:
        left = b.without(done)
        if left.trials:
            out.append(left)
    return out
