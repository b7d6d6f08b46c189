// Browsertime's page-complete check for testbed trials (a template: the
// session fills in the five values passed at the bottom).
// docs/completeness.md: the window ends at the same point of the page's own
// work under every setting. True once the page fired its load event, every
// needed URL (what the recording's top document asks for, before and after its
// load event) has a Resource Timing entry (its response ended), and then
// `settle` ms passed with no other response ending; or `limit` ms after the
// load event at the latest (the trial's judge then fails it, naming what is
// missing), and never later than 2 s before Browsertime's own timeout. True on
// a Chromium or Firefox error page too (the trial then fails on its missing
// load time). False while the start page (data:/about:) is still shown.
// Resource Timing keeps 250 entries by default; the check raises the buffer
// to hold every needed URL and more on its first look at the page.
// With `inPage`, a check that finds the page loading does not answer false
// (to be asked again by Browsertime, a WebDriver call into the loading page
// every poll) but a promise the page itself settles, checking every 20 ms,
// which WebDriver awaits: one call per load.
return (function (settle, limit, timeout, needed, inPage) {
  function bare(url) {
    var i = url.indexOf('#');
    return i < 0 ? url : url.slice(0, i);
  }
  function state() {
    try {
      var protocol = location.protocol;
      if (protocol === 'chrome-error:') return 'done';
      // Firefox's error pages (a failed connection, a refused certificate)
      if (/^about:(neterror|certerror)/.test(location.href)) return 'done';
      if (protocol !== 'https:' && protocol !== 'http:') return 'start';
      var perf = window.performance;
      // Why the window ended, for the trial's evidence (hooks/post.mjs reads it).
      var why = function (end, pending) {
        window.__testbedWindow = {end: end, at: Math.round(perf.now()),
                                  pending: pending.slice(0, 20), pendingCount: pending.length};
        return 'done';
      };
      if (perf.setResourceTimingBufferSize) {
        perf.setResourceTimingBufferSize(Math.max(1000, 4 * needed.length));
      }
      var t = perf.timing;
      if (!(t.loadEventEnd > 0)) return 'busy';
      var load = t.loadEventEnd - t.navigationStart;
      var now = perf.now();
      var late = now > Math.min(load + limit, timeout - 2000);
      var last = load;
      var seen = {};
      var resources = perf.getEntriesByType('resource');
      for (var i = 0; i < resources.length; i++) {
        var name = bare(resources[i].name);
        seen[name] = true;
        // A query string the page makes anew each visit (a timestamp) is answered by
        // the closest recorded one: the path up to '?' stands for it.
        if (name.indexOf('?') > 0) seen[name.slice(0, name.indexOf('?') + 1)] = true;
        last = Math.max(last, resources[i].responseEnd || resources[i].startTime);
      }
      var pending = [];
      for (var j = 0; j < needed.length; j++) {
        var u = needed[j], q = u.indexOf('?');
        if (!seen[u] && !(q > 0 && seen[u.slice(0, q + 1)])) pending.push(u);
      }
      if (late) return why('limit', pending);
      if (pending.length) return 'busy';
      return now > last + settle ? why('quiet', pending) : 'busy';
    } catch (e) {
      return 'start';
    }
  }
  var s = state();
  if (s !== 'busy' || !inPage) return s === 'done';
  return new Promise(function (resolve) {
    (function again() {
      var s = state();
      if (s === 'busy') setTimeout(again, 20);
      else resolve(s === 'done');
    })();
  });
})(SETTLE_MS, LIMIT_MS, TIMEOUT_MS, NEEDED, IN_PAGE);
