#!/usr/bin/env bash
# Prints what a container run could change on the host, to compare before
# and after (root):
#   bash docker/host-state.sh > before; make image-test; bash docker/host-state.sh > after; diff before after
# Network namespaces, links, routes, iptables and nftables rules (counters
# dropped), every sysctl but the counters that change by themselves, and
# processes running from a testbed checkout or as the testbed user.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "host-state.sh: error: run as root (iptables and some sysctls need it)" >&2; exit 1; }

section() { printf '== %s\n' "$1"; }

section "ip netns list"; ip netns list
section "ip -brief link"; ip -brief link | awk '{print $1, $2}'
section "ip route"; ip route; ip -6 route
section "iptables-save"
for t in iptables-save ip6tables-save; do
    command -v $t >/dev/null && $t | sed -E -e '/^#/d' -e 's/\[[0-9]+:[0-9]+\]//'
done
section "nft list ruleset"
command -v nft >/dev/null && nft list ruleset | sed -E 's/packets [0-9]+ bytes [0-9]+//'
section "sysctl -a (without counters)"
sysctl -a 2>/dev/null | { grep -vE '^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr)|kernel\.(ns_last_pid|random\.(uuid|entropy_avail))|net\.netfilter\.nf_conntrack_count) ' || true; }
section "processes (testbed user or a testbed command line)"
ps -eo user:20,args --no-headers | grep -E '^testbed |testbed|mm-(delay|link|loss)|h3server|uwsgi|nginx|Xvfb|chromium' | grep -vE 'grep|host-state.sh' || true
