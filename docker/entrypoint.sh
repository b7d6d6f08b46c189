#!/usr/bin/env bash
# Container start: what a build cannot do (sysctls need a running, privileged container).
set -e
sysctl -q -w net.ipv4.ip_forward=1 || { echo "testbed: run the container with --privileged" >&2; exit 1; }
exec "$@"
