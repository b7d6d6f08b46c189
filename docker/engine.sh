# Sourced by docker/make-base.sh and docker/image.sh: which container engine
# to use and which options this machine needs, found by trying them.
#
#   CONTAINER_ENGINE=podman|docker   choose (default: podman if installed, else docker)
#
# After engine_pick:  ENGINE   the engine's command (array)
# After engine_probe: ENGINE   plus the global options that work here
#                     LIMITS   --ulimit options for build and run (array, may be empty)
#
# Why probe: a VM with hybrid cgroups and a fixed hard rlimit makes podman's
# defaults fail ("crun: cgroups in hybrid mode not supported", "setrlimit
# RLIMIT_NOFILE: Operation not permitted"); Debian's runc with the cgroupfs
# manager and limits no higher than the host's hard ones work there. Where
# the defaults work, they are kept.

BASE_IMAGE=docker.io/library/debian:bookworm

die() { printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }
log() { printf '\033[1m%s:\033[0m %s\n' "$(basename "$0" .sh)" "$*" >&2; }

engine_pick() {
    local name=${CONTAINER_ENGINE:-}
    if [ -z "$name" ]; then
        if command -v podman >/dev/null; then name=podman
        elif command -v docker >/dev/null; then name=docker
        else die "no container engine: apt-get install podman (or install Docker)"
        fi
    fi
    case "$name" in podman|docker) ;; *) die "CONTAINER_ENGINE: expected podman or docker, got '$name'" ;; esac
    command -v "$name" >/dev/null || die "CONTAINER_ENGINE=$name: not installed"
    ENGINE=("$name")
    LIMITS=()
}

image_exists() { "${ENGINE[@]}" image inspect "$1" >/dev/null 2>&1; }

# Candidate --ulimit sets, one per line, the first empty (the engine's
# defaults): open files at the host's hard limit (Podman's default 1048576 is
# above it where the hard limit is fixed), processes at Podman's default
# 32768, then at 4096 (where the engine's process cannot set more).
limit_sets() {
    local n; n=$(ulimit -Hn)
    echo ""
    [ "$n" = unlimited ] && return
    echo "--ulimit nofile=$n:$n --ulimit nproc=32768:32768"
    echo "--ulimit nofile=$n:$n --ulimit nproc=4096:4096"
}

# engine_probe IMAGE: run `true` in IMAGE with each candidate set of options,
# keep the first that works.
engine_probe() {
    local image=$1 err runtimes=("") sets opts lim
    err=$(mktemp)
    if [ "${ENGINE[0]}" = podman ] && command -v runc >/dev/null; then
        runtimes+=("--runtime $(command -v runc) --cgroup-manager=cgroupfs")
    fi
    mapfile -t sets < <(limit_sets)
    for opts in "${runtimes[@]}"; do
        for lim in "${sets[@]}"; do
            local try l
            # shellcheck disable=SC2206  # the options are words
            try=("${ENGINE[0]}" $opts) l=($lim)
            if "${try[@]}" run --rm --network=none --entrypoint true "${l[@]}" "$image" >/dev/null 2>"$err"; then
                ENGINE=("${try[@]}"); LIMITS=("${l[@]}"); rm -f "$err"
                log "engine: ${ENGINE[*]} ${LIMITS[*]}"
                return
            fi
        done
    done
    local why; why=$(grep -v '^\s*$' "$err" | tail -1); rm -f "$err"
    die "${ENGINE[0]} cannot run a container here (last try: $why)"
}
