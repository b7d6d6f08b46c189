#!/usr/bin/env bash
# Container start: what a build cannot do (sysctls need a running, privileged
# container), then the command: `make test`, `testbed doctor`,
# `testbed worker ADDR`, ... (.venv/bin is on PATH).
# ip_forward is set in the container's own network namespace; do not run the
# image with --network=host, or it is the host's.
set -e
sysctl -q -w net.ipv4.ip_forward=1 || { echo "testbed: run the container with --privileged" >&2; exit 1; }
exec "$@"
