#!/usr/bin/env bash
# The peers of `ringtool bench peers`: the tracers ringtool is compared with.
# Not part of scripts/setup.sh or `make test`: only the peer bench needs them.
# Run as root on Debian 12; a second run installs nothing.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    echo "setup-peers: needs root (apt-get): run with sudo" >&2
    exit 1
fi
# bpftrace: its opensnoop one-liner; libbpf-tools: /usr/sbin/opensnoop (CO-RE);
# bpfcc-tools + python3-bpfcc: BCC (the tracepoint opensnoop: ringtool/bench/peer_opensnoop.py)
PKGS=(bpftrace libbpf-tools bpfcc-tools python3-bpfcc gcc)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup-peers: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
echo "setup-peers: ok (${PKGS[*]})"
