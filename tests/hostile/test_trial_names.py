"""Hostile labels: a site, network or protocol name becomes part of every trial's id
and folder name (`trials/<site>+<network>+<protocol>+<run>/`), so a name that could
split ambiguously, need quoting in a shell, be refused by Windows or fold onto
another on a case-insensitive file system is refused when the campaign loads.

Every case: exit 2, one line naming the campaign file and the key, nothing written.
"""

from __future__ import annotations

import pytest
from support.hostile_harness import ROOT, Case, run_case

DSL = (ROOT / "profiles/networks/dsl.toml").read_text()
LTE = (ROOT / "profiles/networks/lte.toml").read_text()
TCP = (ROOT / "profiles/protocols/tcp.toml").read_text()


def campaign(networks='["dsl"]', protocols='["tcp"]') -> str:
    return f'sites = ["local-news"]\nnetworks = {networks}\nprotocols = {protocols}\nruns = 1\n'


def named_network(file: str) -> Case:
    return Case(f"network named {file}", ["run", "c.toml", "--dry-run"],
                ["c.toml: key networks.0:", "as the name of trials", "expected"],
                files={file: DSL, "c.toml": campaign(networks=f'["{{dir}}/{file}"]')})


CASES = [
    named_network("a+b.toml"),    # the separator of a trial id
    named_network("a|b.toml"),    # the old separator; a pipe in a shell
    named_network("a b.toml"),    # needs quoting in a shell
    named_network("-dsl.toml"),   # an option to most commands
    named_network("..toml"),      # the name `.`
    named_network("nul.toml"),    # Windows reserves it
    named_network("com1.x.toml"),  # also with an extension
    named_network("n" * 65 + ".toml"),  # with the others, a folder name too long
    Case("protocol named with a colon", ["run", "c.toml", "--dry-run"],
         ["c.toml: key protocols.0:", "as the name of trials"],
         files={"t:1.toml": TCP, "c.toml": campaign(protocols='["{dir}/t:1.toml"]')}),
    Case("two networks differing only in case", ["run", "c.toml", "--dry-run"],
         ["c.toml: key networks.1: DSL differs from networks.0 (dsl) only in case"],
         files={"dsl.toml": DSL, "DSL.toml": LTE,
                "c.toml": campaign(networks='["{dir}/dsl.toml", "{dir}/DSL.toml"]')}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_trial_names(case, tmp_path):
    run_case(case, tmp_path)
