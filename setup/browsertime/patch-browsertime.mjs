// Run by `npm ci` (postinstall): makes Browsertime's fixed 2 s pause after it
// stops the browser in every iteration configurable (--browserStopDelay MS,
// default 2000 as before). The testbed shortens it: its trials verify before
// each load that nothing else runs. Fails loudly if the pinned Browsertime's
// code is not what this patch expects.
import { readFileSync, writeFileSync } from 'node:fs';

const file = 'node_modules/browsertime/lib/core/engine/iteration.js';
const before = '    // Give the browsers some time to stop\n    await delay(2000);\n';
const after =
  '    // Give the browsers some time to stop (testbed: --browserStopDelay)\n' +
  '    await delay(options.browserStopDelay ?? 2000);\n';

const text = readFileSync(file, 'utf8');
if (text.includes(after)) {
  process.exit(0);
}
if (!text.includes(before)) {
  console.error(`patch-browsertime: ${file} does not contain the expected code`);
  process.exit(1);
}
writeFileSync(file, text.replace(before, after));
