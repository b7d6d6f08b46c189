"""The names in a trial's folder, `results/<campaign>/trials/<trial_id>/`: the one
place they are spelled.

The campaign writes the folder (testbed.campaign.store.commit, testbed.campaign.run.rows,
testbed.measure.captures); the analysis reads it back (results_contract.trialfiles, and
through it analysis.report.trial_page, analysis.statistics.bbr; analysis.report.report links to its
files). Both use these names, and tests/unit/test_owners.py fails when one of them is
written as a string anywhere else in testbed/, analysis/ or corpus/. The folder
itself is named by the trial's id (results_contract.schema.trial_id).
"""

from __future__ import annotations

TRIALS_DIR = "trials"
"""The folder of a results folder that holds one folder per trial."""

BROWSERTIME = "browsertime.json"
"""Browsertime's result of the trial's iteration."""
HAR = "browsertime.har.gz"
"""Its HAR, gzipped (about 100 kB a trial as text)."""
VISUAL_METRICS = "visualmetrics.json"
"""The visual metrics computed from the video."""
VIDEO = "video.mp4"
"""The page load's video, when the campaign keeps videos (key keep_video)."""
TRIAL = "trial.json"
"""The trial's row and the evidence behind its verdict (testbed.campaign.run.rows)."""
CONNECTIONS = "connections.json"
"""With telemetry: the trial's rows of table `connections`."""
CAPTURES = {"netlog": "netlog.json.gz", "keylog": "keylog.txt.gz", "pcap": "pcap.pcap.gz",
            "qlog": "qlog.tar.gz", "mozlog": "mozlog.txt.gz"}
"""A capture of the campaign's `capture` list -> its file (testbed.measure.captures)."""

KEPT = (BROWSERTIME, HAR, VISUAL_METRICS, TRIAL, VIDEO, CONNECTIONS, *CAPTURES.values())
"""Every file a trial folder may hold."""
