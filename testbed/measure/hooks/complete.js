// Browsertime's page-complete check for testbed trials (a template: the
// session fills in SETTLE_MS and SETTLE_MAX_MS). True once the page fired its
// load event and then the network stayed quiet for SETTLE_MS (no resource
// finished), or SETTLE_MAX_MS after the load event at the latest; true on a
// Chromium error page too (the trial then fails on its missing load time).
// False while the start page (data:/about:) is still shown.
return (function (settle, settleMax) {
  try {
    var protocol = location.protocol;
    if (protocol === 'chrome-error:') return true;
    if (protocol !== 'https:' && protocol !== 'http:') return false;
    var t = window.performance.timing;
    if (!(t.loadEventEnd > 0)) return false;
    var load = t.loadEventEnd - t.navigationStart;
    var now = performance.now();
    if (now > load + settleMax) return true;
    var last = load;
    var resources = performance.getEntriesByType('resource');
    for (var i = 0; i < resources.length; i++) {
      last = Math.max(last, resources[i].responseEnd || resources[i].startTime);
    }
    return now > last + settle;
  } catch (e) {
    return false;
  }
})(SETTLE_MS, SETTLE_MAX_MS);
