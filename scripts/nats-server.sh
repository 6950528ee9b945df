#!/usr/bin/env bash
# scripts/nats-server.sh VENV: puts Debian 13's (trixie's) nats-server, 2.10.27 or
# later, at VENV/libexec/nats-server (scripts/setup.sh's step 5): the tests of the fleet
# guide's permissions run it beside Debian 12's (ringtool.bench.local_server's
# fixed_nats_binary); every other test and `ringtool bench` run Debian 12's. Debian 12's 2.9.10 runs
# an account purge asked from any account (CVE-2025-30215, fixed in 2.10.27: docs/fleet.md).
#
# apt downloads the package with a configuration of its own (scripts/debian-apt.sh:
# trixie's signed Release, its Packages index, the .deb's hash; the host's sources, lists
# and installed packages stay as they are); dpkg-deb -x unpacks it in a temporary
# directory, removed afterwards. Its dependencies (libc6 >= 2.34, adduser: the
# service's user, unused here) are met by Debian 12; the binary links libc only.
# Idempotent: when VENV/libexec/nats-server is 2.10.27 or later already, nothing is fetched.
# Environment: RINGTOOL_DEBIAN_MIRROR, the host's apt proxies (scripts/debian-apt.sh).
set -euo pipefail

VENV="${1:?usage: nats-server.sh VENV}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$VENV/libexec/nats-server"
MIN=2.10.27
say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: %s\n' "$*" >&2; exit 1; }

# nats_version BINARY: 2.10.27 for a binary that says "nats-server: v2.10.27"
nats_version() { "$1" --version 2>/dev/null | sed -n 's/^nats-server: v//p'; }
new_enough() { [[ -n "$1" ]] && dpkg --compare-versions "$1" ge "$MIN"; }

have="$(nats_version "$BIN" || true)"
new_enough "$have" && exit 0

# A failed fetch is not tried again for an hour (every `make` target runs setup: offline,
# each would wait on apt again): one line says so; RINGTOOL_NATS_FETCH=1 tries at once.
STAMP="$VENV/nats-server-fetch.failed"
if [[ "${RINGTOOL_NATS_FETCH:-0}" != 1 && -n "$(find "$STAMP" -mmin -60 2>/dev/null)" ]]; then
    fail "Debian 13's nats-server: its fetch failed less than an hour ago (see $VENV/nats-server-fetch.log); RINGTOOL_NATS_FETCH=1 tries again now"
fi
ok=0 WORK=""
trap '[[ -z "$WORK" ]] || rm -rf "$WORK"; [[ $ok == 1 ]] || touch "$STAMP"' EXIT

say "fetching nats-server from Debian 13 (trixie) into $VENV/libexec"
# shellcheck source=scripts/debian-apt.sh
. "$REPO/scripts/debian-apt.sh"
LOG="$VENV/nats-server-fetch.log"  # apt's output, kept when a step fails
WORK="$(mktemp -d /tmp/ringtool-nats.XXXXXX)"
chmod 755 "$WORK"  # apt downloads as its user _apt
debian_apt_setup "$WORK" "$LOG" trixie \
    || fail "could not read trixie's index (the network? RINGTOOL_DEBIAN_MIRROR, apt's proxy)"
chown _apt "$WORK/debs" 2>/dev/null || true  # else apt warns it downloads as root
(cd "$WORK/debs" && debian_apt "$WORK" apt-get -q download nats-server/trixie) >"$LOG" 2>&1 \
    || { tail -5 "$LOG" >&2; fail "apt-get download nats-server/trixie failed: see $LOG"; }
deb="$(ls "$WORK"/debs/nats-server_*.deb)"
dpkg-deb -x "$deb" "$WORK/tree"
mkdir -p "$(dirname "$BIN")"
install -m 755 "$WORK/tree/usr/sbin/nats-server" "$BIN.new"
have="$(nats_version "$BIN.new" || true)"
new_enough "$have" || { rm -f "$BIN.new"; fail "trixie's nats-server is '${have:-unknown}', not $MIN or later"; }
mv "$BIN.new" "$BIN"
ok=1
rm -f "$LOG" "$STAMP"
say "nats-server $have ($(basename "$deb")) in $VENV/libexec"
