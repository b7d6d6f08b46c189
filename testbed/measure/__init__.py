"""Measure: page loads by Browsertime inside the replay and emulated network.

- browsertime: Browsertime's command line (pinned install in .tools/)
- browser_process: one Browsertime process stepping through a block of trials (BrowsertimeProcess)
- launcher, hooks/: Chromium's stand-in and Browsertime's pre/post scripts
- xvfb: an X display of its own for each Browsertime process
- visual: visual metrics from the screen recording
- ffmpeg_wrapper (video_bin/ffmpeg): the lean screen recording's ffmpeg
- framerate: a recording holds no more frames than the rate asked
- load: how busy the machine was during each load; the wait for a quiet machine
- har, metrics, trial: what a load proves (protocols, metrics, verdict)

May import: testbed.host, testbed.formats and every stage before it; not
validate, campaign or a command.
"""
