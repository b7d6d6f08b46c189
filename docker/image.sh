#!/usr/bin/env bash
# Builds and runs the testbed's image with podman or docker (docker/engine.sh
# picks one and the options this machine needs).
#
#   bash docker/image.sh build        the image from the working tree (make image)
#   bash docker/image.sh test         make test in a privileged container, its exit status (make image-test)
#   bash docker/image.sh run CMD...   CMD in a privileged container, ./results mounted at
#                                     /srv/testbed/results, no network (NETWORK=bridge for one)
#   bash docker/image.sh options      print the engine's command and options found here
#
#   IMAGE=testbed       the image's name
#   BUILD_CA=FILE       a CA bundle trusted during the build only (a TLS-intercepting
#                       proxy's); default $SSL_CERT_FILE when that is set
#   CONTAINER_ENGINE=   podman or docker
#   NETWORK=none        the network of `run` (the engine's --network); a bridge makes
#                       the engine add NAT rules on the host (podman's stay after the run)
#
# If debian:bookworm is not there, docker/make-base.sh makes it from Debian's
# archive first (`podman pull debian:bookworm` beforehand to use Docker's).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=docker/engine.sh
. "$HERE/engine.sh"

IMAGE=${IMAGE:-testbed}
NETWORK=${NETWORK:-none}
BUILD_CA=${BUILD_CA:-${SSL_CERT_FILE:-}}

elapsed() { local s=$((SECONDS - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

build() {
    local start=$SECONDS args=()
    image_exists "$BASE_IMAGE" || bash "$HERE/make-base.sh"
    engine_probe "$BASE_IMAGE"
    # The host's network, so the build reaches the package registries as the
    # host does and no bridge or NAT rule is made for it.
    args+=(--network=host -t "$IMAGE" -f "$HERE/Dockerfile")
    # docker format: OCI images have no HEALTHCHECK.
    [ "${ENGINE[0]}" = podman ] && args+=(--format docker --layers=false)
    if [ -n "$BUILD_CA" ]; then
        [ -f "$BUILD_CA" ] || die "BUILD_CA: expected a CA bundle file, got '$BUILD_CA'"
        args+=(--secret "id=ca,src=$BUILD_CA")
    fi
    log "build: ${ENGINE[*]} build ${LIMITS[*]} ${args[*]} $ROOT"
    "${ENGINE[@]}" build "${LIMITS[@]}" "${args[@]}" "$ROOT"
    log "build: $IMAGE built in $(elapsed "$start"), $(size) (uncompressed)"
}

size() { "${ENGINE[@]}" image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=si --suffix=B; }

# Privileged (namespaces, TUN, sysctls in the container), no health check
# (the doctor's topology would run beside the tests).
run_args() { printf '%s\n' run --rm --privileged --no-healthcheck "${LIMITS[@]}"; }

need_image() {
    image_exists "$IMAGE" || die "no image $IMAGE: make image first"
    engine_probe "$IMAGE"
}

cmd_test() {
    local start=$SECONDS status=0 args
    need_image
    mapfile -t args < <(run_args)
    # No network: the tests need none, and the host gets no bridge or NAT rule.
    # CI=true: an end-to-end test that lacks a part fails instead of skipping.
    # RUST_LINT=no: Debian's rustc-web, the image's toolchain, has no rustfmt or clippy;
    # the host's `make lint` checks the same sources.
    log "test: ${ENGINE[*]} ${args[*]} --network=none -e CI=true $IMAGE make test RUST_LINT=no"
    "${ENGINE[@]}" "${args[@]}" --network=none -e CI=true "$IMAGE" make test RUST_LINT=no \
        || status=$?
    log "test: make test exited $status after $(elapsed "$start")"
    return "$status"
}

cmd_run() {
    local args tty=()
    [ $# -gt 0 ] || die "usage: image.sh run CMD [ARG...]"
    need_image
    mapfile -t args < <(run_args)
    [ -t 0 ] && [ -t 1 ] && tty=(-it)
    mkdir -p "$PWD/results"
    exec "${ENGINE[@]}" "${args[@]}" "${tty[@]}" --network="$NETWORK" \
        -v "$PWD/results:/srv/testbed/results" "$IMAGE" "$@"
}

engine_pick
case "${1:-}" in
    build) build ;;
    test) cmd_test ;;
    run) shift; cmd_run "$@" ;;
    options) need_image; echo "${ENGINE[*]} ${LIMITS[*]}" ;;
    *) die "usage: image.sh build | test | run CMD... | options" ;;
esac
