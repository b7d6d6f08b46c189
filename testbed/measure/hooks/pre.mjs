// Browsertime preScript for testbed trials: runs in every iteration after the
// browser started and before the page is loaded. It tells the runner this
// iteration's browser is up (ready-N.json) and waits until the runner has the
// servers of this trial ready and no other work running (go-N.json).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ctl = process.env.TESTBED_TRIAL_CTL;
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function put(name, data) {
  const tmp = join(ctl, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify(data));
  renameSync(tmp, join(ctl, name));
}

export default async function (context) {
  const index = context.index;
  put(`ready-${index}.json`, { index, t: Date.now() });
  const go = join(ctl, `go-${index}.json`);
  while (!existsSync(go)) {
    await sleep(5);
  }
  const message = JSON.parse(readFileSync(go, 'utf8'));
  if (message.abort) {
    throw new Error(`testbed: iteration ${index} not measured: ${message.abort}`);
  }
}
