#!/usr/bin/env bash
# `make test-vm`: runs the whole suite (`make test`) in a Debian 12 VM on Debian's own
# kernel and exits with the suite's status. Run as root on a Debian 12 host.
#
# Phases: host packages (from Debian) -> box (vagrant/build-box.sh, cached) -> libvirt
# daemons (started here when not running, stopped by PID afterwards) -> accelerator
# (KVM only if a short boot under KVM reaches a login prompt, else TCG) -> up ->
# provision (vagrant/Vagrantfile's provisioners: host CAs/proxies, scripts/setup.sh)
# -> tests -> destroy. The JUnit XML and the logs land in $RINGTOOL_VM_OUT (default
# vagrant/out/). Environment:
#   RINGTOOL_BOX            box to use instead of the locally built one
#   RINGTOOL_VM_ACCEL       kvm|tcg: skip the probe
#   RINGTOOL_VM_KEEP=1      leave the VM (and daemons) running for `vagrant ssh`
#   RINGTOOL_VM_PREPARE_ONLY=1  stop after the host packages and the box (CI prepares
#                           them beside the host's `make test`)
#   RINGTOOL_VM_TEST_TIMEOUT seconds for the test phase (default 5400)
#   RINGTOOL_VM_PYTEST_ARGS more pytest arguments (`make test-vm ARGS='-m kernel'`:
#                           only the tests that load BPF programs; CI's choice)
#   RINGTOOL_VM_CACHE       box cache (default /var/cache/ringtool-vm)
#   RINGTOOL_VM_TCG_THREADS multi: QEMU's default thread per vCPU under TCG (the
#                           default here is single, see qemu-tcg-single.sh)
set -euo pipefail
SCRIPT_NAME=test-vm
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=vagrant/lib.sh
. "$HERE/lib.sh"
need_root

OUT="${RINGTOOL_VM_OUT:-$HERE/out}"
HOST_PKGS=(qemu-system-x86 qemu-utils debootstrap fdisk vagrant vagrant-libvirt
    libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients dnsmasq-base
    iptables rsync openssh-client ca-certificates)
export VAGRANT_CWD="$HERE"
export LIBVIRT_DEFAULT_URI=qemu:///system
export RINGTOOL_VM_CONSOLE_LOG="$OUT/console.log"
DOMAIN="$(basename "$HERE")_default" # the libvirt domain vagrant-libvirt names the VM
PROBE_SECONDS=60
STARTED_PIDS=()
STARTED_LIBVIRTD=0
PROBE_PID=""
VM_CREATED=0
TEST_STATUS=1

mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/junit.xml

start_daemon() { # NAME SOCKET: starts NAME unless running, as a child of this script
    local name="$1" sock="$2" pid # (a child, so it is reaped; -d would leave a zombie
    if pidof "$name" >/dev/null; then #  on hosts whose PID 1 does not reap)
        say "$name already running (pid $(pidof "$name")), left as is"
        return 0
    fi
    rm -f "$sock"
    "/usr/sbin/$name" >"$OUT/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        [[ -S "$sock" ]] && break
        kill -0 "$pid" 2>/dev/null || die "$name exited: $(tail -1 "$OUT/$name.log")"
        sleep 0.1
    done
    [[ -S "$sock" ]] || die "$name did not open $sock in 10 s"
    STARTED_PIDS+=("$pid")
    if [[ "$name" == libvirtd ]]; then STARTED_LIBVIRTD=1; fi
    say "started $name (pid $pid)"
}

stop_daemons() {
    local net i pid
    if ((STARTED_LIBVIRTD)); then # its networks' dnsmasq and NAT rules go with it
        for net in $(virsh net-list --name 2>/dev/null); do
            virsh net-destroy "$net" >/dev/null 2>&1 || true
        done
    fi
    for ((i = ${#STARTED_PIDS[@]} - 1; i >= 0; i--)); do
        pid="${STARTED_PIDS[i]}"
        kill "$pid" 2>/dev/null || continue
        wait "$pid" 2>/dev/null || true
        say "stopped pid $pid"
    done
    STARTED_PIDS=()
}

finish() {
    local rc=$?
    if [[ -n "$PROBE_PID" && -s "$OUT/kvm-probe.pid" ]]; then
        kill "$(cat "$OUT/kvm-probe.pid")" 2>/dev/null || true
    fi
    if [[ "${RINGTOOL_VM_KEEP:-0}" == 1 ]]; then
        phase_end
        say "RINGTOOL_VM_KEEP=1: VM left running (VAGRANT_CWD=$HERE vagrant ssh); daemons too"
    else
        phase destroy
        if ((VM_CREATED)); then
            vagrant destroy -f >"$OUT/destroy.log" 2>&1 || {
                say "vagrant destroy failed: see $OUT/destroy.log"
                # never leave the guest running: its QEMU, by the domain name
                pkill -TERM -f "guest=$DOMAIN," 2>/dev/null \
                    && say "stopped the guest's QEMU"
            }
        fi
        stop_daemons
        phase_end
    fi
    say "phase times:"
    printf '  %s\n' "${PHASE_TIMES[@]}" >&2
    say "total ${SECONDS}s; JUnit XML and logs in $OUT"
    exit "$rc"
}
trap finish EXIT
# SIGTERM/SIGINT (CI's time limit, Ctrl-C): stop this script's children (at once in the
# test phase; other phases when their command returns), then the EXIT trap destroys
# the VM and stops the daemons.
trap 'stop_children; exit 143' TERM INT

# Every child of this script but the libvirt daemons (the EXIT trap still needs them
# to destroy the VM; before, they were stopped first and the guest was left running).
stop_children() {
    local pid
    for pid in $(pgrep -P $$); do
        [[ " ${STARTED_PIDS[*]} " == *" $pid "* ]] || kill -TERM "$pid" 2>/dev/null || true
    done
}

# A guest of this Vagrantfile that an interrupted run left defined in libvirt (its
# disk too): `vagrant up` would refuse to create it again.
remove_stale_domain() {
    virsh dominfo "$DOMAIN" >/dev/null 2>&1 || return 0
    virsh destroy "$DOMAIN" >/dev/null 2>&1 || true
    virsh undefine "$DOMAIN" --remove-all-storage --nvram >/dev/null 2>&1 \
        || virsh undefine "$DOMAIN" --remove-all-storage >/dev/null 2>&1 || true
    rm -rf "$HERE/.vagrant/machines/default/libvirt"
    say "removed the VM $DOMAIN an interrupted run had left"
}

# box_image NAME: the qcow2 `vagrant box add` unpacked for box NAME.
box_image() {
    find "${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/$1" -path '*/libvirt/box.img' 2>/dev/null | head -1
}

# probe_kvm IMAGE: true when the box boots to a login prompt under KVM in time.
probe_kvm() {
    [[ -c /dev/kvm && -w /dev/kvm ]] || { say "no usable /dev/kvm"; return 1; }
    local log="$OUT/kvm-probe.log" pidfile="$OUT/kvm-probe.pid" t
    : >"$log"
    rm -f "$pidfile"
    # In a subshell whose stderr is dropped (bash's "Aborted" notice when QEMU
    # aborts); QEMU's own pidfile names the process to stop.
    (qemu-system-x86_64 -accel kvm -cpu host -smp 2 -m 1024 -display none -monitor none \
        -no-reboot -nic none -serial "file:$log" -pidfile "$pidfile" \
        -drive "file=$1,if=virtio,format=qcow2,snapshot=on" 2>"$OUT/kvm-probe.err"
        exit $?) 2>/dev/null &
    PROBE_PID=$!
    for ((t = 0; t < PROBE_SECONDS; t++)); do
        grep -q 'login:' "$log" && break
        kill -0 "$PROBE_PID" 2>/dev/null || break
        sleep 1
    done
    [[ ! -s "$pidfile" ]] || kill "$(cat "$pidfile")" 2>/dev/null || true
    wait "$PROBE_PID" 2>/dev/null || true
    PROBE_PID=""
    grep -q 'login:' "$log" && return 0
    if ((t < PROBE_SECONDS)); then
        say "KVM probe: QEMU exited: $(tail -1 "$OUT/kvm-probe.err")"
    else
        say "KVM probe: no login prompt after ${PROBE_SECONDS}s (last console line: $(tr -d '\r' <"$log" | grep -v '^$' | tail -1 | cut -c1-100))"
    fi
    return 1
}

# Under TCG, libvirt runs QEMU through qemu-tcg-single.sh (all vCPUs in one host
# thread: with a thread per vCPU the guest wedged on a stale int3, see that file).
# It is copied into the box cache: the qemu user may not reach a clone under /root.
use_single_thread_tcg() {
    if [[ "${RINGTOOL_VM_TCG_THREADS:-single}" == multi ]]; then
        say "TCG: one thread per vCPU (RINGTOOL_VM_TCG_THREADS=multi)"
        return 0
    fi
    install -D -m 755 "$HERE/qemu-tcg-single.sh" "$VM_CACHE/qemu-tcg-single"
    export RINGTOOL_VM_EMULATOR="$VM_CACHE/qemu-tcg-single"
    say "TCG: all vCPUs in one thread (thread=single, via $RINGTOOL_VM_EMULATOR)"
}

# tcg_threads: the guest QEMU's TCG thread names ("ALL CPUs/TCG" or "CPU 0/TCG ...").
tcg_threads() {
    local pid
    pid="$(pgrep -f "guest=$DOMAIN," | head -1)"
    [[ -n "$pid" ]] && grep -h 'TCG' /proc/"$pid"/task/*/comm 2>/dev/null | paste -sd, -
}

# The whole run is one function, parsed before it starts: the file can be edited
# (other work in progress) while a run reads it.
main() {
    phase "host packages"
    apt_install "${HOST_PKGS[@]}"

    phase "box build"
    box_file="$(bash "$HERE/build-box.sh")"
    key="$(basename "$(dirname "$box_file")")"
    local_box="ringtool-debian12-$key"
    export RINGTOOL_BOX="${RINGTOOL_BOX:-$local_box}"
    if [[ "$RINGTOOL_BOX" == "$local_box" ]] && ! vagrant box list | grep -q "^$local_box "; then
        say "vagrant box add $local_box"
        vagrant box add --name "$local_box" "$box_file" >"$OUT/box-add.log" 2>&1 \
            || die "vagrant box add failed: see $OUT/box-add.log"
        # Older local boxes (earlier build-box.sh versions) go: box, cache.
        for old in $(vagrant box list | awk '/^ringtool-debian12-/ {print $1}'); do
            [[ "$old" == "$local_box" ]] || vagrant box remove -f "$old" >/dev/null 2>&1 || true
        done
        for old in "$VM_CACHE"/*/; do
            [[ "$(basename "$old")" == "$key" || ! -f "$old/ringtool-debian12.box" ]] || rm -rf "$old"
        done
    fi

    if [[ "${RINGTOOL_VM_PREPARE_ONLY:-0}" == 1 ]]; then
        say "prepared (RINGTOOL_VM_PREPARE_ONLY=1): host packages and box $RINGTOOL_BOX"
        return 0
    fi

    phase "daemons"
    start_daemon virtlogd /run/libvirt/virtlogd-sock
    start_daemon libvirtd /run/libvirt/libvirt-sock
    # A VM left by an interrupted run would be reused by `vagrant up`: start clean.
    vagrant destroy -f >/dev/null 2>&1 || true

    phase "accelerator"
    accel="${RINGTOOL_VM_ACCEL:-}"
    if [[ -z "$accel" ]]; then
        image="$(box_image "$RINGTOOL_BOX")"
        if [[ -z "$image" ]]; then
            accel=tcg
            say "KVM probe skipped: no local image for box $RINGTOOL_BOX"
        elif probe_kvm "$image"; then
            accel=kvm
        else
            accel=tcg
        fi
    fi
    case "$accel" in
        kvm) export RINGTOOL_VM_DRIVER=kvm; say "accelerator: KVM (a test boot under KVM reached login)" ;;
        tcg) export RINGTOOL_VM_DRIVER=qemu; say "accelerator: TCG (QEMU emulation; KVM unusable here, see $OUT/kvm-probe.log)"
            use_single_thread_tcg ;;
        *) die "RINGTOOL_VM_ACCEL must be kvm or tcg, not $accel" ;;
    esac

    phase up
    remove_stale_domain
    VM_CREATED=1
    vagrant up --provider=libvirt --no-provision >"$OUT/up.log" 2>&1 \
        || { tail -20 "$OUT/up.log" >&2; die "vagrant up failed: see $OUT/up.log"; }

    [[ "$accel" != tcg ]] || say "guest QEMU's TCG threads: $(tcg_threads || echo unknown)"

    phase provision
    vagrant provision >"$OUT/provision.log" 2>&1 \
        || { tail -20 "$OUT/provision.log" >&2; die "provisioning failed: see $OUT/provision.log"; }

    phase tests
    local args="--junitxml=/tmp/ringtool-junit.xml ${RINGTOOL_VM_PYTEST_ARGS:-}"
    say "make test ARGS='$args' in the VM; log: $OUT/test.log"
    set +e
    timeout "${RINGTOOL_VM_TEST_TIMEOUT:-5400}" vagrant ssh -c \
        "cd /vagrant && sudo RINGTOOL_VM=1 make test PARALLEL= ARGS=$(printf %q "$args")" \
        >"$OUT/test.log" 2>&1 &
    wait $! # (in the background: a SIGTERM's trap runs now, not when the suite ends)
    TEST_STATUS=$?
    set -e
    vagrant ssh -c 'cat /tmp/ringtool-junit.xml' >"$OUT/junit.xml" 2>/dev/null \
        || say "no JUnit XML in the VM"
    vagrant ssh -c 'uname -r' 2>/dev/null | tr -d '\r' | sed 's/^/guest kernel: /' >>"$OUT/test.log" || true
    say "suite: $(grep -E '^=+ .*(passed|failed|error).* =+$' "$OUT/test.log" | tail -1 || echo "no summary (status $TEST_STATUS)")"
    if [[ "$TEST_STATUS" != 0 ]]; then # what failed, where CI shows it (the log stays in $OUT)
        sed -n '/short test summary info/,$p' "$OUT/test.log" | tail -40 >&2 || true
        [[ "$TEST_STATUS" == 124 ]] && say "the suite did not end within ${RINGTOOL_VM_TEST_TIMEOUT:-5400} s"
    fi
    exit "$TEST_STATUS"
}

main "$@"
