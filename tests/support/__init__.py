"""What the tests share (importable as `support`: pyproject.toml puts tests/ on the path).
No test module imports another; what two of them need lives here.

- paths: the checkout's folders, the installed CLI (TESTBED), run_testbed
- needs: what a test needs from `make setup` (need, need_root, need_firefox,
  needs_parts) and CI's rule that a skip is a failure
- campaigns: real campaigns (`testbed run`) and their stored rows
- cluster: a campaign on a local Dask cluster, its processes and store
- kill_resume: SIGKILL a campaign runner and resume it (the fault suite)
- host_state: the host's net.* sysctls and qdiscs, which the testbed must not change
- scripted_campaign: the real runner with made-up page loads (also a script)
- scripted_results: a small campaign for it and what its results folder must hold
- replay_site: a small multi-origin recording (also used by bench/replay_startup.py)
- http3: recording, certificate and aioquic client for h3server and h3quinn
- har: HAR 1.2's schema as a validator
- quic_knobs: a QUIC setting with every sender knob, the alt-svc verdict row
- docs_commands: the `testbed ...` commands shown in README.md and docs/
- hostile_harness: the hostile-input cases' shape and checks (tests/hostile/)
- hostile_recordings: a good recording for hostile cases to break
- corpus_fake: fake npm packages and a registry on loopback
- fake_browsertime: a stand-in Browsertime (a script)
- fake_kernel: the protocol settings' sysctls applied to a fake kernel
- notebook_run: executes notebooks/campaign.ipynb (a script: `make notebook`)
- server_sources: the HTTP/3 servers' sources digests (a script, named in
  h3server/VERSIONS)
"""
