"""Measure: what a trial's files prove (HAR protocols, metrics, verdicts), no browser."""

import itertools
import json

import pytest
from support.paths import FIXTURES

from testbed.measure import browsertime, metrics, trial_har, visual
from testbed.measure.trial import Evidence, judge

FIX = FIXTURES / "measure"


def load(name):
    return json.loads((FIX / name).read_text())


# --- HAR -------------------------------------------------------------------------------
def test_block_har_splits_by_iteration_and_proves_each_protocol():
    block = load("block.har")
    assert trial_har.page_ids(block) == {1: "page_1", 2: "page_1-1"}
    first, second = trial_har.iteration(block, 1), trial_har.iteration(block, 2)
    assert trial_har.protocols(first) == {"h2": 30}
    assert trial_har.protocols(second) == {"h3": 30}
    assert trial_har.requests(first) == 30
    assert trial_har.iteration(block, 3) is None


@pytest.mark.parametrize("version, name", [
    ("h2", "h2"), ("HTTP/2.0", "h2"), ("h3", "h3"), ("http/2+quic/43", "h3"),
    ("h3-29", "h3"), ("http/1.1", "http/1.1"), ("", "unknown")])
def test_protocol_names_are_normalised(version, name):
    assert trial_har.normalise(version) == name


def test_mixed_protocols_are_counted_and_data_urls_ignored():
    h = {"log": {"entries": [
        {"request": {"url": "https://a.test/"}, "response": {"httpVersion": "h3"}},
        {"request": {"url": "https://b.test/x"}, "response": {"httpVersion": "h2"}},
        {"request": {"url": "data:image/png;base64,AA"}, "response": {"httpVersion": ""}},
    ]}}
    assert trial_har.protocols(h) == {"h2": 1, "h3": 1}


# --- metrics -----------------------------------------------------------------------------
def test_metrics_from_a_saved_browsertime_result_and_visual_metrics():
    m = metrics.extract(load("browsertime-iteration.json"), load("visualmetrics.json"))
    assert m == metrics.Metrics(plt_ms=562.0, fvc_ms=200.0, lvc_ms=366.0, vc85_ms=366.0,
                                si_ms=292.0, ttfb_ms=92.0, fp_ms=204.0, fcp_ms=204.0,
                                lcp_ms=364.0, dcl_ms=202.0)
    assert m.missing() == []


def test_paint_timings_the_browser_did_not_report_are_none_and_do_not_fail_a_trial():
    result = load("browsertime-iteration.json")
    t = result[0]["browserScripts"]["timings"]
    del t["largestContentfulPaint"]  # a page without a contentful element
    t["paintTiming"] = {"first-paint": 150}
    m = metrics.extract(result, load("visualmetrics.json"))
    assert (m.fp_ms, m.fcp_ms, m.lcp_ms, m.dcl_ms) == (150.0, None, None, 202.0)
    assert m.missing() == []
    assert judge(Evidence(stack="tcp", measured=True, metrics=m, protocols={"h2": 3})).ok


@pytest.mark.parametrize("value", [0, -5, "204", True, None, float("nan"), float("inf"),
                                   [204], {"x": 1}])
def test_paint_timings_that_are_not_positive_finite_numbers_are_none(value):
    result = load("browsertime-iteration.json")
    t = result[0]["browserScripts"]["timings"]
    t["paintTiming"] = {"first-paint": value, "first-contentful-paint": value}
    t["largestContentfulPaint"] = {"startTime": value}
    t["pageTimings"]["domContentLoadedTime"] = value
    m = metrics.extract(result, None)
    assert (m.fp_ms, m.fcp_ms, m.lcp_ms, m.dcl_ms) == (None, None, None, None)
    assert m.plt_ms == 562.0


@pytest.mark.parametrize("timings", [[], "x", {"paintTiming": [1], "pageTimings": 3,
                                               "largestContentfulPaint": "big"}])
def test_timings_of_the_wrong_shape_give_no_metric(timings):
    m = metrics.extract([{"browserScripts": {"timings": timings}}], None)
    assert (m.plt_ms, m.fp_ms, m.fcp_ms, m.lcp_ms, m.dcl_ms) == (None,) * 5


def test_no_load_event_means_no_plt():
    result = load("browsertime-iteration.json")
    result[0]["browserScripts"]["timings"]["loadEventEnd"] = 0
    assert metrics.extract(result, None).plt_ms is None
    assert metrics.extract(None, None).missing() == ["plt_ms", "ttfb_ms", "fvc_ms", "lvc_ms",
                                                     "vc85_ms", "si_ms"]


def test_visual_complete_levels_as_browsertime_computes_them():
    out = visual.with_visual_complete({"VisualProgress": "0=0, 100=50, 200=86, 300=96, 400=100",
                                       "FirstVisualChange": 100, "LastVisualChange": 400})
    assert (out["VisualComplete85"], out["VisualComplete95"], out["VisualComplete99"]) == (
        200, 300, 400)
    assert out["VisualReadiness"] == 300


def test_visual_complete_drops_when_the_page_paints_backwards():
    out = visual.with_visual_complete({"VisualProgress": "0=0, 100=90, 200=40, 300=88, 400=100"})
    assert out["VisualComplete85"] == 300
    assert out["VisualComplete99"] == 400


# --- verdicts ----------------------------------------------------------------------------
GOOD = metrics.Metrics(plt_ms=500, fvc_ms=200, lvc_ms=400, vc85_ms=300, si_ms=250, ttfb_ms=50)


def ev(**kw):
    base = {"stack": "quic", "measured": True, "metrics": GOOD, "protocols": {"h3": 30}, "misses": 0}
    return Evidence(**{**base, **kw})


def test_a_complete_load_over_the_right_protocol_is_ok():
    assert judge(ev()).status == "ok"
    assert judge(ev(stack="tcp", protocols={"h2": 3})).ok


@pytest.mark.parametrize("kw, reason", [
    ({"protocols": {"h3": 29, "h2": 1}}, 'wrong-protocol: {"h2": 1, "h3": 29}'),
    ({"stack": "tcp"}, 'wrong-protocol: {"h3": 30}'),
    ({"protocols": {}}, "wrong-protocol: no request in the HAR"),
    ({"server_error": "replay server h3server exited"}, "server-died: replay server h3server exited"),
    ({"timed_out": True, "measured": False}, "timeout"),
    ({"measured": False, "browser_error": "UrlLoadError"}, "browser-error: UrlLoadError"),
    ({"metrics": metrics.Metrics(ttfb_ms=3)}, "timeout: no load event"),
    ({"visual_error": "no video recorded"}, "visual-metrics: no video recorded"),
    ({"metrics": metrics.Metrics(plt_ms=5, ttfb_ms=3)},
     "visual-metrics: missing fvc_ms, lvc_ms, vc85_ms, si_ms"),
    ({"misses": 2, "max_misses": 0}, "replay-misses: 2"),
])
def test_failed_trials_name_their_reason(kw, reason):
    v = judge(ev(**kw))
    assert v.status == "failed" and v.reason == reason


def test_misses_are_data_unless_the_campaign_limits_them():
    assert judge(ev(misses=5)).ok


# --- Browsertime's command line ------------------------------------------------------------
def test_browsertime_argv_keeps_the_measurement_settings(tmp_path):
    opts = browsertime.BrowsertimeOptions(iterations=5, timeout_s=60)
    argv = browsertime.argv(opts, "https://a.test/", tmp_path / "out", tmp_path / "check.js")
    assert argv[-1] == "https://a.test/"
    pairs = dict(itertools.pairwise(argv))
    assert pairs["-n"] == "5"
    assert pairs["--chrome.binaryPath"] == str(browsertime.LAUNCHER)
    assert pairs["--chrome.chromedriverPath"] == "/usr/bin/chromedriver"
    assert pairs["--chrome.ignoreCertificateErrors"] == "false"
    assert pairs["--video"] == "true" and pairs["--videoParams.convert"] == "false"
    assert pairs["--videoParams.framerate"] == "60" == str(browsertime.VIDEO_FPS)
    assert pairs["--timeouts.pageCompleteCheck"] == "60000"
    assert "--no-sandbox" not in " ".join(argv)
    assert f"--chrome.args={browsertime.PLACEHOLDER_RULES}" in argv


def test_the_pause_before_the_prescript_is_an_option_and_never_browsertime_s_zero(tmp_path):
    def pairs(**kw):
        opts = browsertime.BrowsertimeOptions(iterations=1, **kw)
        return dict(itertools.pairwise(browsertime.argv(opts, "u", tmp_path, tmp_path)))

    assert pairs()["--timeToSettle"] == "100"  # Browsertime's own default
    assert pairs(start_settle_ms=1)["--timeToSettle"] == "1"
    assert pairs(start_settle_ms=0)["--timeToSettle"] == "1"  # 0 would mean 100 to it


def test_the_campaign_frame_rate_reaches_the_screen_recording(tmp_path):
    from testbed.campaign.plan import config

    (tmp_path / "c.toml").write_text('sites = ["local-news"]\nnetworks = ["dsl"]\n'
                                     'protocols = ["tcp"]\nvideo_fps = 30\n')
    assert config.load(tmp_path / "c.toml").video_fps == 30
    opts = browsertime.BrowsertimeOptions(iterations=1, video_fps=30)
    pairs = dict(itertools.pairwise(browsertime.argv(opts, "https://a.test/", tmp_path, tmp_path)))
    assert pairs["--videoParams.framerate"] == "30"
    novideo = browsertime.BrowsertimeOptions(iterations=1, video=False)
    assert "--videoParams.framerate" not in browsertime.argv(novideo, "u", tmp_path, tmp_path)


def test_complete_check_is_filled_in():
    text = browsertime.complete_check(browsertime.BrowsertimeOptions(
        iterations=1, settle_ms=700, settle_max_ms=4000, complete_in_page=False))
    # settle, limit (settle_max_ms without needed URLs' limit), timeout, needed, in page
    assert text.rstrip().endswith("})(700, 4000, 120000, [], false);")
    for name in ("SETTLE", "LIMIT_MS", "TIMEOUT_MS", "NEEDED", "IN_PAGE"):
        assert name not in text.split("return (function")[1]
    waits = browsertime.complete_check(browsertime.BrowsertimeOptions(
        iterations=1, settle_ms=700, settle_max_ms=4000))  # the default waits in the page
    assert waits.rstrip().endswith("})(700, 4000, 120000, [], true);")
    longer = browsertime.complete_check(browsertime.BrowsertimeOptions(
        iterations=1, settle_ms=700, settle_max_ms=4000, limit_ms=9000, needed=("https://a/",)))
    assert longer.rstrip().endswith('})(700, 9000, 120000, ["https://a/"], true);')
