// Browsertime postScript for testbed trials: runs in every iteration whose
// page load was measured (not after a failed navigation). It hands the
// runner this iteration's result as Browsertime collected it (done-N.json).
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ctl = process.env.TESTBED_TRIAL_CTL;

// Why the page-complete check ended the window (hooks/complete.js leaves it in
// the page): 'quiet' after every needed URL, or 'limit' with those still pending.
async function windowEnd(driver) {
  try {
    return await driver.executeScript('return window.__testbedWindow || null;');
  } catch (e) {
    return null;
  }
}

export default async function (context) {
  const index = context.index;
  const name = `done-${index}.json`;
  const tmp = join(ctl, `.${name}.tmp`);
  const ended = await windowEnd(context.selenium.driver);
  writeFileSync(tmp, JSON.stringify({ index, t: Date.now(), result: context.result, window: ended }));
  renameSync(tmp, join(ctl, name));
}
