"""Generated server configuration and client flags (pure functions)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from testbed.formats import recording as rec
from testbed.replay import nginx, readiness, server_summary
from testbed.replay.env import ReplayEnv, resolver_rules, stack_flags
from testbed.validate.site import exchange, write


@pytest.fixture
def recording(tmp_path):
    return rec.load(write(tmp_path, "site", "https://www.a.test/", [
        exchange("https://www.a.test/", "192.0.2.10", b"x" * 200_000),
        exchange("https://cdn.b.test/x.js", "192.0.2.11", b"js", "text/javascript"),
        exchange("https://alt.b.test:8443/y", "192.0.2.11", b"y"),
        exchange("http://plain.b.test/z", "192.0.2.11", b"z"),
        exchange("https://192.0.2.12/ip", "192.0.2.12", b"ip"),
    ]))


def test_tcp_listens_on_443_and_80_of_every_ip_plus_recorded_ports(recording):
    got = {(x.ip, x.port, x.tls) for x in nginx.listeners(recording, "tcp")}
    assert got == {("192.0.2.10", 443, True), ("192.0.2.10", 80, False),
                   ("192.0.2.11", 443, True), ("192.0.2.11", 80, False),
                   ("192.0.2.11", 8443, True),
                   ("192.0.2.12", 443, True), ("192.0.2.12", 80, False)}


def test_quic_listens_on_every_https_port(recording):
    got = {(x.ip, x.port) for x in nginx.listeners(recording, "quic")}
    assert got == {("192.0.2.10", 443), ("192.0.2.11", 443), ("192.0.2.11", 8443),
                   ("192.0.2.12", 443)}


def render(recording, tmp_path):
    return nginx.render(nginx.NginxConfig(
        prefix=tmp_path, cert=tmp_path / "leaf.pem", key=tmp_path / "leaf.key",
        socket=tmp_path / "uwsgi.sock", listens=tuple(nginx.listeners(recording, "tcp")),
        largest_body=max(x.body_size for x in recording.exchanges)))


def test_nginx_config(recording, tmp_path):
    conf = render(recording, tmp_path)
    assert "listen 192.0.2.10:443 ssl http2;" in conf
    assert "listen 192.0.2.11:8443 ssl http2;" in conf
    assert "listen 192.0.2.10:80;" in conf
    assert re.search(r"ssl_protocols\s+TLSv1\.3;", conf)
    assert f"uwsgi_pass unix:{tmp_path}/uwsgi.sock;" in conf
    assert "uwsgi_param UWSGI_SCHEME $scheme;" in conf
    assert "uwsgi_param TESTBED_HOST $host;" in conf
    assert f"pid {tmp_path}/nginx.pid;" in conf
    # every path nginx writes is in the run folder
    for key in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        assert f"{key}_temp_path {tmp_path}/tmp/{key};" in conf
    assert "/var/lib/nginx" not in conf and "/run/nginx.pid" not in conf
    assert "uwsgi_max_temp_file_size 0;" in conf
    assert not re.search(r"^\s*user\s", conf, re.MULTILINE)  # runs unprivileged as the testbed user


def test_nginx_buffers_hold_the_largest_body():
    assert nginx.buffers_for(0) == 8
    assert nginx.buffers_for(10 * 1024 * 1024) * nginx.BUFFER >= 10 * 1024 * 1024


def test_nginx_accepts_the_config(recording, tmp_path):
    """nginx -t parses it (it cannot bind here, so only syntax errors count)."""
    from testbed.replay import certs

    certs.issue_leaf(["www.a.test"], tmp_path, ca=certs.ensure_ca(tmp_path / "ca"))
    (tmp_path / "tmp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(recording, tmp_path))
    cp = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(conf), "-e",
                         str(tmp_path / "err.log")],
                        check=False, capture_output=True, text=True)
    assert "syntax is ok" in cp.stderr, cp.stderr


def test_uwsgi_argv_runs_one_process_from_the_venv(tmp_path):
    argv = nginx.uwsgi_argv(socket=tmp_path / "s", venv=Path("/v"))
    assert argv[argv.index("--processes") + 1] == "1"
    assert argv[argv.index("--home") + 1] == "/v"
    assert "testbed.replay.wsgi:application" in argv
    assert "--die-on-term" in argv and "--need-app" in argv
    with pytest.raises(ValueError, match="expand"):
        nginx.uwsgi_argv(socket=tmp_path / "$(HOME)" / "s")


def test_nginx_argv_keeps_nginx_in_the_run_folder(tmp_path):
    argv = nginx.nginx_argv(tmp_path, tmp_path / "nginx.conf")
    assert argv[argv.index("-p") + 1] == str(tmp_path)
    assert argv[-2:] == ["-g", "daemon off;"]


def test_resolver_rules_map_every_host_and_nothing_else(recording):
    rules = resolver_rules(recording)
    assert rules.split(", ") == ["MAP alt.b.test 192.0.2.11", "MAP cdn.b.test 192.0.2.11",
                                 "MAP plain.b.test 192.0.2.11", "MAP www.a.test 192.0.2.10",
                                 "MAP * ~NOTFOUND"]


def test_stack_flags():
    assert stack_flags("quic") == ["--enable-quic", "--origin-to-force-quic-on=*"]
    assert stack_flags("tcp") == ["--disable-quic"]


def test_unknown_stack_is_an_input_error(recording):
    from testbed.errors import InputError

    with pytest.raises(InputError, match="stack"):
        ReplayEnv(recording, "sctp")
    with pytest.raises(InputError, match="quic_server 'msquic': expected one of h3server, h3quinn"):
        ReplayEnv(recording, "quic", quic_server="msquic")


def test_probe_targets_parse():
    t = readiness.Target.parse("quic:192.0.2.1:443:a.test")
    assert (t.kind, t.ip, t.port, t.sni) == ("quic", "192.0.2.1", 443, "a.test")
    assert str(readiness.Target.parse("tcp:192.0.2.1:80")) == "tcp:192.0.2.1:80"
    with pytest.raises(ValueError):
        readiness.Target.parse("udp:1.2.3.4:1")


def test_probe_reports_what_never_answered():
    # 127.0.0.1:9 (discard) is closed here: refused at once, on loopback only
    failed = readiness.wait_all([readiness.Target("tcp", "127.0.0.1", 9)], deadline_s=0.2)
    assert len(failed) == 1 and failed[0].startswith("tcp:127.0.0.1:9: ")


def test_summary_diff_counts_one_load():
    before = {"requests": 3, "misses": 1, "miss_urls": ["a"], "bytes": 10, "connections": 1}
    after = {"requests": 8, "misses": 2, "miss_urls": ["a", "b"], "bytes": 50, "connections": 3,
             "resumed": 2, "early_data": 4}
    # a summary without resumed / early_data (written before they existed) counts 0
    assert server_summary.diff(before, after) == {"requests": 5, "misses": 1, "miss_urls": ["b"],
                                           "bytes": 40, "connections": 2, "resumed": 2,
                                           "early_data": 4}
    assert server_summary.read(Path("/nonexistent/summary.json"))["requests"] == 0


def test_a_killed_server_is_named_on_the_first_line_with_its_signal(recording, tmp_path):
    from testbed.errors import TestbedError
    from testbed.host import proc

    env = ReplayEnv(recording, "quic")
    log = tmp_path / "h3server.log"
    with proc.Background(["sh", "-c", "echo listening; kill -9 $$"], log=log) as bg:
        bg.proc.wait()
        env.servers["h3server"] = bg
        with pytest.raises(TestbedError) as e:
            env.check_alive()
    first, *rest = str(e.value).splitlines()
    assert first == "replay server h3server (quic stack) exited with status -9 (SIGKILL)"
    assert rest == ["its log ends:", "listening"]
