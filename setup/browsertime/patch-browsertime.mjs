// Run by `npm ci` (postinstall): two changes to the pinned Browsertime, each
// applied once and failing loudly if Browsertime's code is not what it expects.
//
// 1. Its fixed 2 s pause after it stops the browser in every iteration becomes
//    configurable (--browserStopDelay MS, default 2000 as before). The testbed
//    shortens it: its trials verify before each load that nothing else runs.
// 2. The x11grab screen recording is written at the frame rate asked for
//    (--videoParams.framerate), given to ffmpeg as an output rate (`-r`).
//    Without it ffmpeg writes the mp4 at a constant rate it guesses from the
//    first captured frames' wall-clock stamps; on a busy machine that guess can
//    be 60000/1001 where 20 was asked, and every frame is then written about
//    three times (bench/results/2026-11-27-video-rate.md).
import { readFileSync, writeFileSync } from 'node:fs';

const patches = [
  {
    file: 'node_modules/browsertime/lib/core/engine/iteration.js',
    before: '    // Give the browsers some time to stop\n    await delay(2000);\n',
    after:
      '    // Give the browsers some time to stop (testbed: --browserStopDelay)\n' +
      '    await delay(options.browserStopDelay ?? 2000);\n'
  },
  {
    file: 'node_modules/browsertime/lib/video/screenRecording/desktop/ffmpegRecorder.js',
    before:
      "        : `:${display}.${screen}+${origin}`,\n" +
      "      '-codec:v',\n",
    after:
      "        : `:${display}.${screen}+${origin}`,\n" +
      "      // testbed: write the rate asked for, not ffmpeg's guess of the input's\n" +
      "      '-r',\n" +
      "      framerate,\n" +
      "      '-codec:v',\n"
  }
];

for (const { file, before, after } of patches) {
  const text = readFileSync(file, 'utf8');
  if (text.includes(after)) {
    continue;
  }
  if (!text.includes(before)) {
    console.error(`patch-browsertime: ${file} does not contain the expected code`);
    process.exit(1);
  }
  writeFileSync(file, text.replace(before, after));
}
