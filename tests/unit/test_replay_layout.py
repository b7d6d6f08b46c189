"""A replay's layout (testbed.replay.layout): which hosts share an address and a
certificate, as recorded or split; what the browsers are told (Chromium's resolver
rules, Firefox's /etc/hosts), the servers' certificates and configuration, the
campaign key and the manifest's record of it."""

from __future__ import annotations

import json

import pytest
from cryptography import x509
from support.paths import ROOT, TESTBED

from results_contract import manifest
from testbed.campaign.plan import config
from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.host import firefox
from testbed.replay import certs, layout, nginx, server_summary
from testbed.replay.env import host_ips, https_origins, resolver_rules
from testbed.validate.site import exchange, write


@pytest.fixture
def recording(tmp_path):
    # three names and an IP literal share 192.0.2.11; 192.0.2.1 (the pool's first
    # address) is recorded, so split must not hand it out
    return rec.load(write(tmp_path, "site", "https://www.a.test/", [
        exchange("https://www.a.test/", "192.0.2.10", b"x" * 2000),
        exchange("https://cdn.b.test/x.js", "192.0.2.11", b"js", "text/javascript"),
        exchange("https://alt.b.test:8443/y", "192.0.2.11", b"y"),
        exchange("http://plain.b.test/z", "192.0.2.11", b"z"),
        exchange("https://192.0.2.11/ip", "192.0.2.11", b"ip"),
        exchange("https://third.c.test/t", "192.0.2.1", b"t"),
    ]))


def test_recorded_groups_hosts_by_their_recorded_address(recording):
    got = {g.ip: g.hosts for g in layout.addresses(recording)}
    assert got == {"192.0.2.1": ("third.c.test",), "192.0.2.10": ("www.a.test",),
                   "192.0.2.11": ("192.0.2.11", "alt.b.test", "cdn.b.test", "plain.b.test")}
    assert layout.apply(recording, "recorded") is recording
    assert layout.name(recording) == "recorded"


def test_recorded_serves_one_certificate_naming_everything(recording):
    [(names, ips)] = layout.certificates(recording)
    assert set(names) == {*recording.hosts, *recording.ips}
    assert ips == tuple(recording.ips)


def test_split_puts_every_named_host_on_its_own_fresh_address(recording):
    split = layout.apply(recording, "split")
    ips = host_ips(split)
    assert len(set(ips.values())) == len(ips) == 5
    # alone on its address: kept; sharing one: a fresh pool address, never a recorded one
    assert ips["www.a.test"] == "192.0.2.10" and ips["third.c.test"] == "192.0.2.1"
    moved = {h: ips[h] for h in ("alt.b.test", "cdn.b.test", "plain.b.test")}
    assert moved == {"alt.b.test": "192.0.2.2", "cdn.b.test": "192.0.2.3",
                     "plain.b.test": "192.0.2.4"}
    assert not set(moved.values()) & set(recording.ips)
    # the IP literal keeps its address; every exchange follows its origin
    assert {(o.host, o.ip) for o in split.origins if o.host == "192.0.2.11"} == {
        ("192.0.2.11", "192.0.2.11")}
    origin_ip = {(o.scheme, o.host, o.port): o.ip for o in split.origins}
    assert all(origin_ip[(x.scheme, x.host, x.port)] == x.ip for x in split.exchanges)
    # the content served is the same: requests are matched by host
    assert split.content_sha256 == recording.content_sha256
    assert [x.target for x in split.exchanges] == [x.target for x in recording.exchanges]
    assert layout.name(split) == "split"
    assert layout.apply(recording, "split") == split  # deterministic


def test_split_keeps_a_private_address_private(tmp_path):
    """Chromium blocks a public page's requests to a private address (Local Network
    Access): a host moved off a private address gets a private one."""
    local = rec.load(write(tmp_path, "local", "https://www.a.test/", [
        exchange("https://www.a.test/", "10.78.0.1", b"x"),
        exchange("https://static.a.test/s.css", "10.78.0.1", b"s", "text/css"),
        exchange("https://img.b.test/i.png", "198.51.100.7", b"i", "image/png"),
        exchange("https://api.b.test/j", "198.51.100.7", b"j"),
    ]))
    ips = host_ips(layout.apply(local, "split"))
    assert ips == {"static.a.test": "10.254.0.1", "www.a.test": "10.254.0.2",
                   "api.b.test": "192.0.2.1", "img.b.test": "192.0.2.2"}
    assert [layout.space(ip) for ip in ("10.1.2.3", "172.20.0.1", "192.168.1.1")] == [
        "private"] * 3
    assert layout.space("192.0.2.1") == layout.space("8.8.8.8") == "public"


def test_split_gives_each_address_a_certificate_of_its_own(recording):
    split = layout.apply(recording, "split")
    got = layout.certificates(split)
    assert len(got) == len(split.ips) == 6
    for names, ips in got:
        assert len(ips) == 1 and names[-1] == ips[0]
    assert (("cdn.b.test", "192.0.2.3"), ("192.0.2.3",)) in got
    described = layout.describe(split)
    assert described["pooled"] == [] and len(described["certificates"]) == 6
    assert layout.describe(recording)["pooled"] == [
        ["192.0.2.11", "alt.b.test", "cdn.b.test", "plain.b.test"]]


def test_both_browsers_resolve_each_host_to_its_split_address(recording):
    split = layout.apply(recording, "split")
    rules = resolver_rules(split)  # Chromium: --host-resolver-rules
    for host, ip in host_ips(split).items():
        assert f"MAP {host} {ip}" in rules
    hosts = firefox.hosts_file(host_ips(split))  # Firefox: the trial's /etc/hosts
    assert "192.0.2.3\tcdn.b.test" in hosts and "192.0.2.4\tplain.b.test" in hosts
    assert https_origins(split) == https_origins(recording)  # Firefox's h3 mapping


def test_split_listeners_cover_the_new_addresses(recording):
    split = layout.apply(recording, "split")
    got = {(x.ip, x.port, x.tls) for x in nginx.listeners(split, "tcp")}
    assert ("192.0.2.2", 8443, True) in got and ("192.0.2.4", 80, False) in got
    assert not any(x[0] == "192.0.2.11" and x[1] == 8443 for x in got)


def test_a_layout_that_is_none_of_them_is_an_input_error(recording):
    with pytest.raises(InputError, match="expected one of recorded, split"):
        layout.apply(recording, "spread")


def test_the_pool_running_out_is_an_input_error(recording, monkeypatch):
    import ipaddress
    monkeypatch.setitem(layout.SPLIT_POOLS, "public", (ipaddress.IPv4Network("203.0.113.0/30"),))
    with pytest.raises(InputError, match="layout split: more hosts on public addresses than "
                                         "the 2 fresh"):
        layout.apply(recording, "split")


def test_leaves_of_one_key_share_their_spki_and_name_only_their_host(tmp_path):
    ca = certs.ensure_ca(tmp_path / "ca")
    key = certs.new_key()
    a = certs.issue_leaf(["a.test", "192.0.2.2"], tmp_path, ca=ca, key=key)
    b = certs.issue_leaf(["b.test", "192.0.2.3"], tmp_path, ca=ca, key=key, stem="leaf-1")
    assert a.spki == b.spki and a.chain_path != b.chain_path
    cert = x509.load_pem_x509_certificate(b.chain_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["b.test"]


def test_nginx_serves_each_certificate_on_its_addresses_only(tmp_path):
    one = nginx.Listen("192.0.2.2", 443, True)
    two = nginx.Listen("192.0.2.3", 443, True)
    base = {"prefix": tmp_path, "cert": tmp_path / "leaf.pem", "key": tmp_path / "leaf.key",
            "socket": tmp_path / "s", "listens": (one, two)}
    single = nginx.render(nginx.NginxConfig(**base))  # type: ignore[arg-type]
    assert single.count("server {") == 1 and single.count("ssl_certificate ") == 1
    text = nginx.render(nginx.NginxConfig(**base, servers=(  # type: ignore[arg-type]
        nginx.Server(tmp_path / "leaf.pem", tmp_path / "leaf.key", (one,)),
        nginx.Server(tmp_path / "leaf-1.pem", tmp_path / "leaf-1.key", (two,)))))
    blocks = text.split("server {")[1:]
    assert len(blocks) == 2
    assert "listen 192.0.2.2:443" in blocks[0] and "192.0.2.3" not in blocks[0]
    assert f"ssl_certificate {tmp_path}/leaf-1.pem;" in blocks[1]
    assert "listen 192.0.2.3:443" in blocks[1]


def test_summaries_of_several_servers_merge_and_diff():
    a0 = {"server": "h3server", "requests": 1, "misses": 0, "miss_urls": [], "bytes": 10,
          "connections": 1, "resumed": 0, "early_data": 0, "conns": [{"id": "a"}]}
    b0 = {**a0, "requests": 2, "misses": 1, "miss_urls": ["https://b/x"], "conns": [{"id": "b"}]}
    a1 = {**a0, "requests": 3, "misses": 1, "miss_urls": ["https://a/y"],
          "conns": [{"id": "a"}, {"id": "c"}]}
    before = server_summary.merge([a0, b0])
    after = server_summary.merge([a1, b0])
    assert before["requests"] == 3 and [c["id"] for c in before["conns"]] == ["a", "b"]
    d = server_summary.diff(before, after)
    assert d["requests"] == 2 and d["misses"] == 1 and d["miss_urls"] == ["https://a/y"]
    assert server_summary.merge([a0]) is a0


def test_the_campaign_key_is_checked_on_load(tmp_path):
    camp = tmp_path / "c.toml"
    body = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["quic"]\n'
    camp.write_text(body)
    assert config.load(camp, check_names=False).layout == "recorded"
    camp.write_text(body + 'layout = "split"\n')
    assert config.load(camp, check_names=False).layout == "split"
    camp.write_text(body + 'layout = "spread"\n')
    with pytest.raises(InputError, match=r"c\.toml: key layout: expected one of 'recorded' "
                                         r"or 'split'"):
        config.load(camp, check_names=False)


def test_the_manifest_records_the_layout_and_older_ones_read_as_recorded():
    doc = {"schema_version": 2, "campaign": {"settings": {"sites": ["x"]}}}
    assert manifest.Manifest.model_validate(doc).campaign.settings.layout == "recorded"
    doc["campaign"]["settings"]["layout"] = "split"
    assert manifest.Manifest.model_validate(doc).campaign.settings.layout == "split"
    schema = json.loads(manifest.SCHEMA_FILE.read_text())
    assert schema["$defs"]["CampaignSettings"]["properties"]["layout"]["enum"] == [
        "recorded", "split"]


def test_recording_show_prints_the_layout():
    import subprocess
    cp = subprocess.run([TESTBED, "recording", "show", "local-news", "--json"], cwd=ROOT,
                        capture_output=True, text=True, check=True, timeout=60)
    laid = json.loads(cp.stdout)["layout"]
    assert laid["layout"] == "recorded"
    assert laid["pooled"] == [["static.local-news.test", "www.local-news.test"]]
    cp = subprocess.run([TESTBED, "recording", "show", "local-news", "--layout", "split"],
                        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert "Layout (split): 4 addresses, 4 certificate(s)" in cp.stdout
    assert "pooled (one address, one certificate naming them): none" in cp.stdout


def test_a_results_folder_keeps_one_layout_and_the_manifest_says_which(tmp_path):
    import subprocess
    import sys

    from support.scripted_results import SCRIPTED, write_campaign

    campaign, out = write_campaign(tmp_path, runs=1), tmp_path / "out"
    campaign.write_text(campaign.read_text() + 'layout = "split"\n')
    first = subprocess.run([sys.executable, SCRIPTED, str(campaign), str(out)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["campaign"]["settings"]["layout"] == "split"
    assert doc["recordings"]["local-news"]["addresses"] == 4  # 3 recorded, one shared by 2
    campaign.write_text(campaign.read_text().replace('layout = "split"', ""))
    second = subprocess.run([sys.executable, SCRIPTED, str(campaign), str(out)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 2
    assert (f"key layout: recorded, but 2 trials in {out} were measured with layout split"
            in second.stderr), second.stderr
