// Browsertime preScript for testbed trials: runs in every iteration after the
// browser started and before the page is loaded. It tells the runner this
// iteration's browser is up (ready-N.json) and waits until the runner has the
// servers of this trial ready and no other work running (go-N.json).
//
// A warm visit (go-N.json names `warm`: the page's URL) first loads the page
// once, unmeasured, until Browsertime's page-complete check (`check`, the
// file the session wrote) says it is done; then it leaves the page for a
// blank one, clears the HTTP cache and closes every connection. Chromium:
// through --enable-net-benchmarking (chrome.benchmarking.clearCache,
// closeConnections). Firefox: a privileged script in its chrome context
// (Browsertime's own means, the one its runPrivilegedScript uses; Browsertime
// starts geckodriver with --allow-system-access), which clears the HTTP cache
// and the in-memory image, style sheet and script caches (the
// nsIClearDataService flags of "cached web content") and asks the connection
// manager to close every connection (net:prune-all-connections: idle ones at
// once, the others when their last transaction ends: none is left on a blank
// page). In both the TLS session cache and QUIC's session tickets stay: the
// measured load resumes. It reports warmed-N.json (with the warm-up's
// error, if any) and waits for measure-N.json before Browsertime loads the
// page again, measured.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ctl = process.env.TESTBED_TRIAL_CTL;
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const BLANK = 'data:text/html;charset=utf-8,<html><body></body></html>';

function put(name, data) {
  const tmp = join(ctl, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify(data));
  renameSync(tmp, join(ctl, name));
}

async function waitFor(name) {
  const path = join(ctl, name);
  while (!existsSync(path)) {
    await sleep(5);
  }
  return JSON.parse(readFileSync(path, 'utf8'));
}

// Firefox's "clear the cache, close the connections" (chrome context). The
// observer notification reaches the connection manager's socket thread before
// any transaction of the measured load.
const FIREFOX_CLEAR = `
  const done = arguments[arguments.length - 1];
  const F = Ci.nsIClearDataService;
  Services.clearData.deleteData(
    F.CLEAR_NETWORK_CACHE | F.CLEAR_IMAGE_CACHE | F.CLEAR_CSS_CACHE | F.CLEAR_JS_CACHE,
    failed => {
      Services.obs.notifyObservers(null, "net:prune-all-connections");
      done(failed ? "clearing the caches failed: " + failed : null);
    });`;

async function clearFirefox(driver) {
  const before = await driver.getContext();
  await driver.setContext('chrome');
  try {
    return await driver.executeAsyncScript(FIREFOX_CLEAR);
  } finally {
    await driver.setContext(before);
  }
}

async function clearChromium(driver) {
  const left = await driver.executeScript(
    'if (!window.chrome || !chrome.benchmarking) return "no chrome.benchmarking";' +
    'chrome.benchmarking.clearCache(); chrome.benchmarking.closeConnections(); return null;');
  return left && `${left} (Chromium needs --enable-net-benchmarking)`;
}

async function warmUp(driver, message) {
  const check = readFileSync(message.check, 'utf8');
  await driver.get(message.warm);
  const deadline = Date.now() + message.timeout_ms;
  while (!(await driver.executeScript(check))) {
    if (Date.now() > deadline) {
      throw new Error(`warm-up load not complete after ${message.timeout_ms} ms`);
    }
    await sleep(50);
  }
  await driver.get(BLANK);
  const left = message.client === 'firefox' ? await clearFirefox(driver)
    : await clearChromium(driver);
  if (left) {
    throw new Error(`warm-up: ${left}`);
  }
}

export default async function (context) {
  const index = context.index;
  put(`ready-${index}.json`, { index, t: Date.now() });
  let message = await waitFor(`go-${index}.json`);
  if (message.abort) {
    throw new Error(`testbed: iteration ${index} not measured: ${message.abort}`);
  }
  if (message.warm) {
    let error = null;
    try {
      await warmUp(context.selenium.driver, message);
    } catch (e) {
      error = String(e && e.message ? e.message : e).split('\n')[0];
    }
    put(`warmed-${index}.json`, { index, t: Date.now(), error });
    if (error) {
      throw new Error(`testbed: iteration ${index} warm-up failed: ${error}`);
    }
    message = await waitFor(`measure-${index}.json`);
    if (message.abort) {
      throw new Error(`testbed: iteration ${index} not measured: ${message.abort}`);
    }
  }
}
