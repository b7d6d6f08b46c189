#!/usr/bin/env bash
# Makes the image docker/Dockerfile starts FROM, debian:bookworm, from Debian's
# package archive instead of a container registry:
#   debootstrap --variant=minbase bookworm  ->  tar  ->  podman|docker import
# For machines that reach Debian's archive but no container registry. With
# registry access, `podman pull debian:bookworm` gives Docker's official
# image instead; either serves as the base.
#
#   bash docker/make-base.sh [--force]       (root; about 1-2 minutes)
#
#   MIRROR=URL          Debian archive (default http://deb.debian.org/debian)
#   SECURITY=URL        its security archive (default http://deb.debian.org/debian-security)
#   CONTAINER_ENGINE=   podman or docker (see docker/engine.sh)
#
# Without --force an existing debian:bookworm image is kept. Nothing is left
# behind but the image: the root file system is made in a temporary folder
# that is removed on exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=docker/engine.sh
. "$HERE/engine.sh"

MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY=${SECURITY:-http://deb.debian.org/debian-security}
force=no
case "${1:-}" in
    "") ;;
    --force) force=yes ;;
    *) die "usage: make-base.sh [--force]" ;;
esac

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap makes device nodes and owners"
command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
engine_pick

if [ $force = no ] && image_exists "$BASE_IMAGE"; then
    log "base: $BASE_IMAGE present (--force to make it again)"; exit 0
fi

work=$(mktemp -d /var/tmp/testbed-base.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
root="$work/rootfs"

log "base: debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -5 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

# The same sources as Docker's official image: bookworm, its updates and security.
rm -f "$root/etc/apt/sources.list"
cat > "$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# What an image should not carry: package lists and downloaded packages
# (apt-get update first, as with the official image), logs, and the
# build machine's name and resolver (the engine provides both at run time).
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/cache/apt/*.bin "$root"/var/log/* "$root"/tmp/* "$root"/root/.bash_history
: > "$root/etc/hostname"
: > "$root/etc/resolv.conf"
: > "$root/etc/machine-id"

log "base: importing as $BASE_IMAGE"
tar --numeric-owner --xattrs -C "$root" -c . \
    | "${ENGINE[@]}" import --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
log "base: $BASE_IMAGE $("${ENGINE[@]}" image inspect --format '{{.Size}}' "$BASE_IMAGE" | numfmt --to=si)B"
