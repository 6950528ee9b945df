#!/bin/bash
# PID 1 of a `make test-kernels` guest: vagrant/test-kernels.sh writes it onto the
# guest's data disk (label rtdata), and the kernel command line's `init=/bin/bash -- -c
# "..."` mounts proc, devtmpfs and that disk on /mnt and execs it from there. No systemd: it
# mounts what scripts/setup.sh would (proc, sysfs, tracefs, debugfs, bpffs, cgroup2),
# puts Debian's kernel package (modules and headers, from the kernel disk) where BCC
# looks for them, copies the shared paths (the checkout, its venv) to their host paths,
# runs pytest, and powers the guest off.
#
# Contract: reads /mnt/guest.env (WORKDIR, PYTHON, PYTEST_ARGS as a bash
# array, SHARED as a bash array of absolute paths). The test log goes to /dev/ttyS1,
# then one line `ringtool-guest-exit: STATUS`; the JUnit XML goes to /dev/ttyS2. The
# host reads the status from that line: a guest that dies without it fails the phase.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
LOG=/dev/ttyS1
fail() {
    echo "guest init: $*" >"$LOG"
    echo "ringtool-guest-exit: 99" >"$LOG"
    sleep 2
    echo o >/proc/sysrq-trigger
    sleep 60
}

mountpoint -q /proc || mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ln -sf /proc/self/fd /dev/fd
ip link set lo up
hostname "rt-$(uname -r | cut -d. -f1-2)"

# Disks by label: rtdata on /mnt (this script, guest.env, the shared tree), rtkernel
# (the kernel package's files: usr/lib/modules/<release>, usr/src/linux-headers-*).
mkdir -p /run/rt/kernel
# (By probing: without udev, `mount -L` finds no label here.)
for d in /dev/nvme0n?; do
    [[ "$(blkid -p -s LABEL -o value "$d")" == rtkernel ]] && mount -o ro "$d" /run/rt/kernel
done
mountpoint -q /run/rt/kernel || fail "cannot mount the kernel disk"
for d in /run/rt/kernel/usr/lib/modules/* /run/rt/kernel/lib/modules/* /run/rt/kernel/usr/src/*; do
    [[ -e "$d" ]] || continue
    t="${d#/run/rt/kernel}"
    mkdir -p "$t" && mount --bind "$d" "$t"
done
# shellcheck disable=SC1091
. /mnt/guest.env
# The shared paths live on the data disk under tree/ and are bound at their host paths
# (the venv's scripts and its editable install name absolute paths).
for p in "${SHARED[@]}"; do
    mkdir -p "$p" && mount --bind "/mnt/tree$p" "$p" || fail "cannot bind $p"
done
# The venv was made on the host from the host's python3 with system site packages;
# modules pip found there (installed by other Debian packages) may be missing in this
# userland: the host's dist-packages (copied to /mnt/hostdist) go last on sys.path.
if [[ -d /mnt/hostdist ]]; then
    echo /mnt/hostdist >"$(python3 -c 'import site; print(site.getsitepackages()[0])')/zz-ringtool-host.pth"
fi

{
    echo "guest kernel: $(uname -r)"
    echo "guest userland: Debian $(cat /etc/debian_version), $(nproc) CPUs, $(free -m | awk '/^Mem/ {print $2}') MiB"
} >"$LOG"
cd "$WORKDIR" || fail "no $WORKDIR"
start=$(date +%s)
RINGTOOL_VM=1 "$PYTHON" -m pytest -p no:cacheprovider \
    --junitxml=/tmp/junit.xml "${PYTEST_ARGS[@]}" </dev/null >"$LOG" 2>&1
status=$?
echo "guest pytest: $(($(date +%s) - start)) s (guest clock)" >"$LOG"
cat /tmp/junit.xml >/dev/ttyS2 2>/dev/null
echo "ringtool-guest-exit: $status" >"$LOG"
# the ttys' buffers drain before the power goes
sync
sleep 2
echo o >/proc/sysrq-trigger
sleep 60
