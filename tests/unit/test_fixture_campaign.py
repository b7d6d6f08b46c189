"""The bundled fixture campaign (tests/fixtures/results) is what its generator makes, in
the project's one trial-id form, and each HAR it keeps is its trial's own: the
waterfall a reader sees has the row's requests and HTTP versions, the row's
connections (one per row of table `connections`, with that row's requests, bytes
and host), its TTFB, and ends just before the row's PLT, the page's load event."""

from __future__ import annotations

import gzip
import json
import runpy
import shutil

import numpy as np
import pytest
from support.paths import FIXTURES

from analysis import synthetic
from analysis.report.trial_page import PHASES, trial_view, waterfall
from analysis.statistics.connections import connections_of
from results_contract.load import load
from testbed.measure import completeness, trial_har

FIXTURE = FIXTURES / "results"
KEPT = sorted(p.name for p in (FIXTURE / "trials").iterdir())


@pytest.fixture(scope="module")
def trials():
    return load(FIXTURE).set_index("trial_id")


@pytest.fixture(scope="module")
def conns():
    return connections_of(FIXTURE)


def har_of(trial_id: str) -> dict:
    return json.loads(gzip.decompress((FIXTURE / "trials" / trial_id /
                                       "browsertime.har.gz").read_bytes()))


def test_ids_are_site_network_setting_run(trials):
    assert len(KEPT) == 4
    assert not trials.index.str.contains("|", regex=False).any()
    for trial_id, r in trials.iterrows():
        assert trial_id == "+".join([r["site"], r["network"], r["setting"], str(r["run"])])


@pytest.mark.parametrize("trial_id", KEPT)
def test_each_kept_har_is_its_trials_own(trial_id, trials, conns):
    r, har = trials.loc[trial_id], har_of(trial_id)
    mine = conns[conns["trial_id"] == trial_id]
    rows = waterfall(har)
    # requests and HTTP versions as the measuring code counts them from a HAR
    assert trial_har.protocols(har) == json.loads(r["http_versions"])
    assert trial_har.requests(har) == len(rows) == r["requests"]
    # one HAR connection per row of table connections, each with that row's requests
    by_conn = {c: [w for w in rows if w["connection"] == c] for c in {w["connection"]
                                                                      for w in rows}}
    assert sorted(by_conn) == sorted(str(int(p)) for p in mine["client_port"])
    for c in mine.itertuples(index=False):
        served = by_conn[str(int(c.client_port))]
        assert len(served) == c.requests
        assert {w["host"] for w in served} == {c.origin}
        assert sum(w["bytes"] for w in served) == c.bytes_acked
    assert sum(w["bytes"] for w in rows) == r["bytes"]
    # a single-origin site's QUIC trial: h3 over one connection
    if r["origins"] == 1:
        assert len(by_conn) == 1 and set(json.loads(r["http_versions"])) == {"h3"}
    # times: the document's first byte at the TTFB, the last response before the PLT
    doc = rows[0]
    first_byte = doc["start"] + sum(doc[p] for p in PHASES if p != "receive")
    assert first_byte == pytest.approx(r["ttfb_ms"], abs=1.0)
    ends = [w["start"] + sum(w[p] for p in PHASES) for w in rows]
    assert r["plt_ms"] - 50 <= max(ends) <= r["plt_ms"]
    assert completeness.onload_ms(har) == r["plt_ms"]
    # and the trial's own text says the same
    text = trial_view(FIXTURE, trial_id, filmstrip=False).text()
    assert (f"HAR: {len(rows)} requests to {len(mine)} hosts over {len(mine)} connections"
            in text)


def test_the_fixture_is_what_its_generator_makes(tmp_path):
    """make_fixture.py run again gives the committed files, byte for byte."""
    out = tmp_path / "results"
    out.mkdir()
    shutil.copy(FIXTURE / "trials.csv", out / "trials.csv")
    runpy.run_path(str(FIXTURE / "make_fixture.py"))["main"](out=out)
    made = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    kept = sorted(p.relative_to(FIXTURE) for p in FIXTURE.rglob("*")
                  if p.is_file() and p.name != "make_fixture.py" and "__pycache__" not in p.parts)
    assert made == kept
    for name in made:
        assert (out / name).read_bytes() == (FIXTURE / name).read_bytes(), name


def test_apportion_adds_up_in_whole_numbers():
    rng = np.random.default_rng(1)
    for total, n, least in ((123, 1, 1), (54, 6, 1), (6, 6, 1), (2891910, 6, 0), (7, 3, 0)):
        parts = synthetic.apportion(total, rng.lognormal(0, 1.2, n), least=least)
        assert parts.sum() == total and (parts >= least).all() and parts.dtype.kind == "i"
