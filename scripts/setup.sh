#!/usr/bin/env bash
# ringtool setup: one idempotent script used by `make`, `.ci/run` and vagrant/.
# Run as root on Debian 12. A second run only checks and does nothing slow.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
KREL="$(uname -r)"
say() { printf 'setup: %s\n' "$*"; }

if [[ $(id -u) -ne 0 ]]; then
    echo "setup: needs root (apt-get, mounts, /lib/modules): run with sudo" >&2
    exit 1
fi

# 1. Debian packages. BCC comes from Debian, not PyPI (it must match the system libbcc).
# nats-server and prometheus: the export tests start their own on 127.0.0.1 (the tests
# of the fleet guide's permissions also Debian 13's nats-server: step 5).
# gcc + libbpf-dev: `ringtool bench trace`/`ringbuf` compile their C helpers.
# man-db + groff-base: `man ringtool` (step 6 installs the page; the tests render it).
# sudo: the README's examples say `sudo ringtool ...` (step 6 puts ringtool on the PATH).
# jq, curl: the README's examples pipe `--json` into jq and make loopback traffic with curl.
# bpftrace: the peer check's reference tracer (tests/kernel/trace/test_peer_bpftrace.py).
# libbpf-tools: tcplife, the tcp source's reference (tests/kernel/trace/test_tcp_source.py).
# bpftool: `bpftool prog show`, the reference for the cost panel's run times; with
# clang-14 it builds and loads bpf/*.bpf.c (USER_RINGBUF drains, which BCC cannot load:
# `ringtool mark`, ringtool.programs.clang_loader).
# python3-jsonschema: the tests check every `trace --json` line against
# docs/trace-events.schema.json (tests/helpers/json_schema.py).
# bash-completion: loads /etc/bash_completion.d/ringtool (step 6 enables it for
# interactive shells in /etc/bash.bashrc: scripts/host-files.sh).
PKGS=(python3-bpfcc bpfcc-tools python3-venv python3-dev iproute2 tmux tshark make
      nats-server prometheus gcc libbpf-dev man-db groff-base sudo bpftrace jq curl
      bpftool bash-completion clang-14 libbpf-tools python3-jsonschema)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Kernel headers: BCC compiles against /lib/modules/$KREL/build. When the running
# kernel has no matching package (custom kernels), Debian's generic headers are linked.
if [[ ! -e /lib/modules/$KREL/build/include ]]; then
    if ! ls -d /usr/src/linux-headers-*-amd64 >/dev/null 2>&1 \
        && ! apt-cache policy "linux-headers-$KREL" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        missing+=(linux-headers-amd64)
    fi
    apt-cache policy "linux-headers-$KREL" 2>/dev/null | grep -q 'Candidate: [0-9]' \
        && missing+=("linux-headers-$KREL")
fi
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian starts the servers it installs (listening on all addresses); ringtool only
    # needs the binaries: stop the services this run installed.
    if [[ -d /run/systemd/system ]]; then
        for svc in nats-server prometheus; do
            [[ " ${missing[*]} " == *" $svc "* ]] && systemctl disable --now "$svc" >/dev/null 2>&1 || true
        done
    fi
fi

# vagrant/build-box.sh preinstalls these packages in the VM's box with step 1 only.
[[ "${RINGTOOL_SETUP_PACKAGES_ONLY:-0}" == 1 ]] && exit 0

# 2. Link generic headers where the exact ones are missing (build + source: Debian
#    splits them into -amd64 and -common; BCC needs both). A marker tells `doctor`
#    (and `make uninstall` which links setup made).
bash "$REPO/scripts/host-files.sh" headers

# 3. Filesystems BPF tooling expects.
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null \
    || say "could not mount tracefs (tracepoint sources will be disabled)"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
# bpffs with mode=700: the kernel's default (1777) lets any user create entries, such as
# /sys/fs/bpf/ringtool before ringtool does (ringtool then refuses to use it).
mountpoint -q /sys/fs/bpf || mount -t bpf -o mode=700 bpf /sys/fs/bpf 2>/dev/null \
    || say "could not mount bpffs"

# 4. The venv: from Debian's python3 (BCC is importable only there), with system site
#    packages, the project installed editable with its test extras.
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import bcc' 2>/dev/null; then
    rm -rf "$VENV"
    say "creating $VENV from /usr/bin/python3"
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
stamp="$VENV/.ringtool-installed"
if [[ ! -f "$stamp" || "$REPO/pyproject.toml" -nt "$stamp" ]]; then
    say "installing ringtool (editable) with test extras"
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q --config-settings editable_mode=compat -e "$REPO[test]"
    touch "$stamp"
fi
# The modules' bytecode (__pycache__) written now: where Python may not write it when
# ringtool runs (PYTHONDONTWRITEBYTECODE=1, a read-only checkout) each start would
# compile every module again (~0.1 s of it: `bench trace`'s stale_bytecode). Quick
# when they are current (only stale ones are written).
"$VENV/bin/python" -m compileall -q "$REPO/ringtool" \
    || { say "compiling ringtool's modules failed (the errors above)"; exit 1; }

# 5. Debian 13's nats-server (trixie, 2.10.27 or later), unpacked into the venv as
#    $VENV/libexec/nats-server: the tests of the fleet guide's permissions run it beside
#    Debian 12's 2.9.10 (step 1), which runs an account purge asked from any account
#    (CVE-2025-30215: docs/fleet.md), to show the guide holds on a fixed server. apt fetches
#    and verifies it with a configuration of its own (scripts/debian-apt.sh: the host's
#    sources and packages stay as they are). A venv that has it already is left alone:
#    scripts/nats-server.sh. Only those tests need it: where it cannot be fetched (no
#    route to Debian's archive), setup says so in its one line and goes on, and they
#    fail naming `make setup`.
bash "$REPO/scripts/nats-server.sh" "$VENV" \
    || say "went on without Debian 13's nats-server (only the fleet permission tests use it)"

# 6. `ringtool` on the PATH (/usr/local/bin/ringtool -> the venv's entry point), shell
#    completion and the man page ringtool(1), generated from the CLI's own parser.
#    `make uninstall` removes them (and step 2's links): scripts/host-files.sh.
bash "$REPO/scripts/host-files.sh" install "$VENV"
