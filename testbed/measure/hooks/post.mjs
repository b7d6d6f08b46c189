// Browsertime postScript for testbed trials: runs in every iteration whose
// page load was measured (not after a failed navigation). It hands the
// runner this iteration's result as Browsertime collected it (done-N.json).
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ctl = process.env.TESTBED_TRIAL_CTL;

export default async function (context) {
  const index = context.index;
  const name = `done-${index}.json`;
  const tmp = join(ctl, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify({ index, t: Date.now(), result: context.result }));
  renameSync(tmp, join(ctl, name));
}
