// Browsertime's page-complete check for testbed trials (a template: the
// session fills in SETTLE_MS, SETTLE_MAX_MS and IN_PAGE). True once the page
// fired its load event and then the network stayed quiet for SETTLE_MS (no
// resource finished), or SETTLE_MAX_MS after the load event at the latest;
// true on a Chromium or Firefox error page too (the trial then fails on its
// missing load time). False while the start page (data:/about:) is still shown.
// With IN_PAGE, a check that finds the page loading does not answer false
// (to be asked again by Browsertime, a WebDriver call into the loading page
// every poll) but a promise the page itself settles, checking every 20 ms,
// which WebDriver awaits: one call per load.
return (function (settle, settleMax, inPage) {
  function state() {
    try {
      var protocol = location.protocol;
      if (protocol === 'chrome-error:') return 'done';
      // Firefox's error pages (a failed connection, a refused certificate)
      if (/^about:(neterror|certerror)/.test(location.href)) return 'done';
      if (protocol !== 'https:' && protocol !== 'http:') return 'start';
      var t = window.performance.timing;
      if (!(t.loadEventEnd > 0)) return 'busy';
      var load = t.loadEventEnd - t.navigationStart;
      var now = performance.now();
      if (now > load + settleMax) return 'done';
      var last = load;
      var resources = performance.getEntriesByType('resource');
      for (var i = 0; i < resources.length; i++) {
        last = Math.max(last, resources[i].responseEnd || resources[i].startTime);
      }
      return now > last + settle ? 'done' : 'busy';
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
})(SETTLE_MS, SETTLE_MAX_MS, IN_PAGE);
