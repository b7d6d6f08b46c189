"""`testbed record --list`: the list file, what is skipped, the progress estimate;
`testbed recording list`: its figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.console import Eta, duration
from testbed.errors import InputError
from testbed.formats import recording
from testbed.record import bulk, listing, sitelist
from testbed.record.sitelist import Bad, Site


def _parse(text: str) -> list:
    return sitelist.parse(text, "l.txt")


def test_urls_names_comments_and_blank_lines():
    got = _parse("# news\n\nhttps://www.example.org/\n  https://a.test:8443/x shop  # mine\n"
                 "http://b.test/#top\n")
    assert got == [Site(3, "https://www.example.org/", "example.org"),
                   Site(4, "https://a.test:8443/x", "shop"),
                   Site(5, "http://b.test/#top", "b.test")]  # '#' inside a URL is kept


def test_bad_lines_name_their_number_and_the_others_stay():
    got = _parse("https://a.test/\nhtp:/broken\nhttps://b.test/ a.test\nftp://c.test/\n"
                 "https://d.test/ x y\nhttps://e.test/ -bad\nhttps://f.test:99999/\n"
                 "https://g.test/\n")
    assert [e.line for e in got if isinstance(e, Site)] == [1, 8]
    bad = {e.line: e.problem for e in got if isinstance(e, Bad)}
    assert set(bad) == {2, 3, 4, 5, 6, 7}
    assert "http:// or https:// URL" in bad[2] and "htp:/broken" in bad[2]
    assert "already used on line 1" in bad[3]
    assert "URL [NAME], got 3 words" in bad[5]
    assert "-bad" in bad[6]
    assert "port" in bad[7]


def test_a_control_character_is_shown_escaped():
    [_, bad] = _parse("https://a.test/\nhttps://\x1b[31mx\n")
    assert "\x1b" not in bad.problem and "\\x1b" in bad.problem


@pytest.mark.parametrize("text", ["", "# only a comment\n\n", "not a url\n", "secret-words\n"])
def test_no_url_at_all_is_not_a_list_file(text):
    with pytest.raises(InputError, match=r"^l.txt: no URLs"):
        _parse(text)


def test_the_file_must_be_small_utf8_and_regular(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"#" * (sitelist.MAX_BYTES + 1))
    with pytest.raises(InputError, match="bytes, expected at most"):
        sitelist.read(big)
    latin = tmp_path / "latin"
    latin.write_bytes(b"https://caf\xe9.test/\n")
    with pytest.raises(InputError, match="not UTF-8"):
        sitelist.read(latin)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        sitelist.read(fifo)  # never waited on
    with pytest.raises(InputError, match="cannot read the list file"):
        sitelist.read(tmp_path / "missing")


def _rec(out: Path, name: str, hosts=("www.a.test",), size: int = 10) -> Path:
    rows = [({"scheme": "https", "host": h, "port": 443, "ip": f"10.0.0.{i + 1}",
              "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
              "status": 200, "response_headers": [["content-type", "text/html"]]},
             b"x" * size) for i, h in enumerate(hosts)]
    return recording.write(out, {"name": name, "url": f"https://{hosts[0]}/",
                                 "recorded_at": "2026-01-02T03:04:05Z", "loads": 1}, rows)


def test_what_is_recorded_already_is_skipped_unless_forced(tmp_path):
    _rec(tmp_path, "a")
    (tmp_path / "broken").mkdir()
    entries = _parse("https://a.test/ a\nhttps://b.test/ b\nhttps://c.test/ broken\nnope\n")
    todo, done = bulk.plan(entries, tmp_path, force=False)
    assert [s.name for s in todo] == ["b"]
    by_line = {o.line: o for o in done}
    assert by_line[1].status == bulk.SKIPPED and by_line[1].requests == 1
    assert by_line[3].status == bulk.FAILED and "--force" in by_line[3].cause
    assert by_line[4].status == bulk.BAD and not by_line[4].ok
    todo, done = bulk.plan(entries, tmp_path, force=True)
    assert [s.name for s in todo] == ["a", "b", "broken"] and [o.line for o in done] == [4]


def test_eta_is_the_mean_time_per_step_times_the_steps_left():
    now = [100.0]
    eta = Eta(4, clock=lambda: now[0])
    now[0] += 30
    assert eta.step() == "1 min 30 s"
    now[0] += 90
    assert eta.step() == "2 min 00 s"
    assert duration(3725) == "1 h 02 min"


def test_deciles_and_the_origin_counts(tmp_path):
    for i in range(10):
        hosts = [f"h{j}.test" for j in range(1 if i < 3 else (5 if i >= 8 else 2))]
        _rec(tmp_path / "corpus", f"s{i}", tuple(hosts), size=100 * (i + 1))
    (tmp_path / "corpus" / "bad").mkdir()
    (tmp_path / "corpus" / "bad" / "manifest.json").write_text("{")
    rows = listing.found([tmp_path])
    assert [r.name for r in rows][:2] == ["corpus/bad", "corpus/s0"]
    f = listing.figures(rows)
    assert (f.recordings, f.invalid, f.single_origin, f.many_origins) == (10, 1, 3, 2)
    # bytes per page: 100*(i+1) per host; requests: one per host
    assert f.requests == (1.0, 2.0, 5.0)
    assert listing.deciles([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]) == (2.0, 6.0, 10.0)
    assert listing.deciles([7]) == (7.0, 7.0, 7.0)
    pairs = dict(listing.summary_pairs(f))
    assert pairs["requests p10/p50/p90"] == "1/2/5" and pairs[">=5 origins"] == "2"
    assert rows[0].kind == "invalid" and rows[1].kind == "single-origin"


def test_a_manifest_nested_thousands_deep_is_listed_invalid_and_the_list_goes_on(tmp_path):
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "manifest.json").write_text('{"format": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text("{}")
    rows = listing.found([tmp_path])
    assert [r.name for r in rows] == ["deep", "other"]
    assert "nested too deep" in rows[0].problem and rows[0].kind == "invalid"
    assert rows[1].problem  # the next one was looked at too
