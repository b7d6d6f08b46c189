"""The corpus's named sets: `paper` (pages like Wolsing et al.'s 2019 selection) and
`today` (today's web, as HTTP Archive's Web Almanac shapes it).

    sets.plan("paper")           # the set's 38 SitePlans (corpus/paper_shape.py)
    sets.plan("today")           # corpus/shape.py's 38, the sites the reference measured

`make corpus` records each set into recordings/corpus/SET/NAME; a campaign names
a set's sites as `paper/*` or `today/*`, and the older `corpus/NAME` names the
`today` set's NAME (testbed.formats.recording_search reads both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from corpus import paper_shape, shape


@dataclass(frozen=True)
class CorpusSet:
    name: str
    planner: Callable[[int, int], list[shape.SitePlan]]
    seed: int
    """The default seed of its plan."""
    requests: tuple[tuple[int, int], ...]
    """(percentile, requests) aimed at, for `python -m corpus table`."""
    kbytes: tuple[tuple[int, int], ...]
    """(percentile, KB) aimed at."""


SETS = {
    "paper": CorpusSet("paper", paper_shape.plan, paper_shape.SEED, paper_shape.REQUESTS,
                       paper_shape.KBYTES),
    "today": CorpusSet("today", shape.plan, 2024, shape.REQUESTS, shape.KBYTES),
}
NAMES = tuple(SETS)


def plan(name: str, n: int = 38, seed: int | None = None) -> list[shape.SitePlan]:
    s = SETS[name]
    return s.planner(n, s.seed if seed is None else seed)
