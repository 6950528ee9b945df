#!/usr/bin/env bash
# `make test-kernels`: runs a pytest selection on Debian's own kernel packages other
# than the box's 6.1 (by default trixie's 6.12 and sid's newest, `cloud-amd64`
# flavour), each booted directly by QEMU (`-kernel`, no boot loader, no systemd, no
# provisioning) against a throwaway qcow2 overlay of the Debian 12 box that
# vagrant/build-box.sh builds for `make test-vm` (setup.sh's packages preinstalled).
# Exits non-zero when any kernel's phase fails. Run as root on a Debian 12 host.
#
# Per kernel: apt downloads linux-image-<release> (or the linux-binary/linux-modules
# packages it depends on) and linux-headers-<release> with its -common package from
# Debian's archive; their files go into an ext4 image (mkfs.ext4 -d) cached under
# $RINGTOOL_VM_CACHE/kernels/<key>/<release>/ (<key>: a sha256 prefix of this script;
# the apt lists are reused for a day). A data disk per guest carries
# vagrant/kernel-guest-init.sh (the guest's PID 1), the checkout and its venv at their
# host paths, and the host's Python dist-packages (see that script). All three disks
# are namespaces of one NVMe controller: the cloud kernels have NVMe and ext4 built in,
# so no initramfs is needed.
#
# Environment:
#   RINGTOOL_KERNELS        the suites whose newest cloud-amd64 kernel runs, in order
#                           (default "trixie sid": 6.12 and the newest); each runs
#                           `-m all_kernels tests/kernel`, the last `-m "all_kernels or
#                           newest_kernel" tests/kernel`
#   RINGTOOL_KERNELS_PYTEST_ARGS  pytest arguments instead (paths, -k, -x ...), for all
#   RINGTOOL_KERNELS_WORKDIR the checkout to test (default: this one)
#   RINGTOOL_KERNELS_VENV   its venv (default WORKDIR/.venv)
#   RINGTOOL_KERNELS_PREPARE_ONLY=1  stop after the host packages, box and kernels
#                           (CI builds the box this way before both VM phases start)
#   RINGTOOL_KERNELS_TIMEOUT seconds per guest (default 2400); a guest killed by it
#                           fails its phase, its console log kept in the out dir
#   RINGTOOL_VM_CACHE, RINGTOOL_VM_OUT, RINGTOOL_DEBIAN_MIRROR as for test-vm.sh
set -euo pipefail
SCRIPT_NAME=test-kernels
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=vagrant/lib.sh
. "$HERE/lib.sh"
# shellcheck source=scripts/debian-apt.sh
. "$HERE/../scripts/debian-apt.sh"
need_root

REPO="$(cd "$HERE/.." && pwd)"
OUT="${RINGTOOL_VM_OUT:-$HERE/out}/kernels"
# Trixie's 6.12 runs the tests whose behaviour depends on the kernel; sid's newest
# those and the ones only it can run (features newer than 6.12).
KERNELS="${RINGTOOL_KERNELS:-trixie sid}"
WORKDIR="$(cd "${RINGTOOL_KERNELS_WORKDIR:-$REPO}" && pwd)"
VENV="${RINGTOOL_KERNELS_VENV:-}"
if [[ -z "$VENV" ]]; then
    VENV="$WORKDIR/.venv"
fi
[[ -x "$VENV/bin/python" ]] || die "no venv at $VENV (run make setup first, or set RINGTOOL_KERNELS_VENV)"
TIMEOUT="${RINGTOOL_KERNELS_TIMEOUT:-2400}"
KEY="$(cat "${BASH_SOURCE[0]}" "$REPO/scripts/debian-apt.sh" | sha256sum | cut -c1-16)"
KCACHE="$VM_CACHE/kernels/$KEY"
APTDIR="$VM_CACHE/kernels/apt"
mkdir -p "$OUT" "$KCACHE"
WORK="$(mktemp -d "$VM_CACHE/kernels/run.XXXXXX")"
QEMU_PID=""
cleanup() {
    [[ -z "$QEMU_PID" ]] || kill "$QEMU_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# apt, with its own lists for the suites named (the host's sources stay as they are).
kapt() { debian_apt "$APTDIR" "$@"; }
apt_setup() { debian_apt_setup "$APTDIR" "$OUT/apt-update.log" "$@" || die "apt-get update failed"; }

# pkg_field PKG/SUITE FIELD: one field of the candidate in that suite.
pkg_field() { kapt apt-cache show "$1" 2>/dev/null | awk -v f="$2:" '$1 == f {sub(/^[^:]*: /, ""); print; exit}'; }

# kernel_image SUITE: prints the path of the cached kernel disk of SUITE's newest
# cloud-amd64 kernel (downloading and building it once); its vmlinuz sits beside it.
kernel_image() {
    local suite="$1" image release dir debs dep p
    # linux-image-cloud-amd64 depends on linux-image-<release>
    image="$(pkg_field "linux-image-cloud-amd64/$suite" Depends | tr ',' '\n' \
        | grep -o 'linux-image-[0-9][^ ]*-cloud-amd64' | head -1)"
    [[ -n "$image" ]] || die "no linux-image-cloud-amd64 in $suite"
    release="${image#linux-image-}"
    dir="$KCACHE/$release"
    if [[ -f "$dir/kernel.img" && -f "$dir/vmlinuz" ]]; then
        echo "$dir"
        return 0
    fi
    say "downloading $release from $suite"
    debs=("$image" "linux-headers-$release")
    # 7.x splits the image into linux-binary-* and linux-modules-*; headers need -common
    for p in "$image" "linux-headers-$release"; do
        for dep in $(pkg_field "$p/$suite" Depends | tr ',|' '\n\n' | awk '{print $1}' \
            | grep -E '^linux-(binary|modules|headers)-[0-9]'); do
            debs+=("$dep")
        done
    done
    rm -rf "$dir" && mkdir -p "$dir/tree"
    (cd "$APTDIR/debs" && kapt apt-get -q download "${debs[@]/%//$suite}") \
        >"$OUT/download-$release.log" 2>&1 \
        || { tail -5 "$OUT/download-$release.log" >&2; die "apt-get download failed"; }
    for p in "${debs[@]}"; do
        dpkg-deb -x "$(ls "$APTDIR"/debs/"${p}"_*.deb | head -1)" "$dir/tree"
    done
    local vmlinuz
    vmlinuz="$(find "$dir/tree" -name "vmlinuz*" -path "*$release*" | head -1)"
    [[ -n "$vmlinuz" ]] || die "no vmlinuz in $image"
    cp "$vmlinuz" "$dir/vmlinuz"
    # modules.dep & co. are made by the package's postinst, not shipped: without them
    # the guest's modprobe finds nothing (veth, sch_*). depmod -b reads <base>/lib/modules.
    local linked=0
    if [[ ! -e "$dir/tree/lib" ]]; then ln -s usr/lib "$dir/tree/lib"; linked=1; fi
    /usr/sbin/depmod -b "$dir/tree" "$release" 2>"$OUT/depmod-$release.log" \
        || die "depmod failed for $release: see $OUT/depmod-$release.log"
    if ((linked)); then rm "$dir/tree/lib"; fi
    # The kernel disk: modules and headers, at their paths (usr/lib or lib/modules).
    truncate -s "$(($(du -sm "$dir/tree" | cut -f1) * 2 + 256))M" "$dir/kernel.img"
    mkfs.ext4 -q -F -L rtkernel -d "$dir/tree" "$dir/kernel.img"
    rm -rf "$dir/tree" "$APTDIR"/debs/*.deb
    echo "$dir"
}

# The box's disk, once per box key, out of the .box tarball build-box.sh made.
box_disk() {
    local box="$1" disk
    disk="$(dirname "$box")/box.img"
    if [[ ! -f "$disk" ]]; then
        tar -C "$WORK" -xf "$box" box.img && mv "$WORK/box.img" "$disk"
    fi
    echo "$disk"
}

# stage_data: the data disk's files (shared by every guest; each gets its own image).
stage_data() {
    local stage="$WORK/stage" p
    mkdir -p "$stage/tree"
    install -m 755 "$HERE/kernel-guest-init.sh" "$stage/init.sh"
    SHARED=("$WORKDIR")
    [[ "$VENV" == "$WORKDIR"/* ]] || SHARED+=("$VENV")
    for p in "${SHARED[@]}"; do
        mkdir -p "$stage/tree$p"
        # the checkout without git metadata, caches and VM outputs
        tar -C "$p" -c --exclude=./.git --exclude=./vagrant/out --exclude=./vagrant/.vagrant \
            --exclude=./.mypy_cache --exclude=./.ruff_cache --exclude=./.pytest_cache \
            . | tar -C "$stage/tree$p" -x
    done
    cp -a /usr/lib/python3/dist-packages "$stage/hostdist"
}

# run_guest SUITE RELEASE_DIR MARKEXPR: one kernel's phase; returns pytest's status.
run_guest() {
    local suite="$1" kdir="$2" markexpr="$3" release name data overlay status rc
    release="$(basename "$kdir")"
    name="$release"
    data="$WORK/data-$name.img"
    overlay="$WORK/root-$name.qcow2"
    local args=()
    if [[ -n "${RINGTOOL_KERNELS_PYTEST_ARGS:-}" ]]; then
        read -r -a args <<<"$RINGTOOL_KERNELS_PYTEST_ARGS"
    else
        args=(-m "$markexpr" tests/kernel) # (collecting all of tests/ took 3 min here)
    fi
    {
        echo "WORKDIR=$(printf %q "$WORKDIR")"
        echo "PYTHON=$(printf %q "$VENV/bin/python")"
        echo "export PYTHONPATH=$(printf %q "$WORKDIR")"
        echo "PYTEST_ARGS=($(printf '%q ' "${args[@]}"))"
        echo "SHARED=($(printf '%q ' "${SHARED[@]}"))"
    } >"$WORK/stage/guest.env"
    truncate -s "$(($(du -sm "$WORK/stage" | cut -f1) + 1024))M" "$data"
    mkfs.ext4 -q -F -L rtdata -d "$WORK/stage" "$data"
    qemu-img create -q -f qcow2 -b "$BOX_DISK" -F qcow2 "$overlay"
    local console="$OUT/console-$name.log" log="$OUT/test-$name.log" junit="$OUT/junit-$name.xml"
    rm -f "$console" "$log" "$junit"
    say "$release ($suite): pytest ${args[*]}; log: $log"
    # init: bash mounts proc, devtmpfs and the data disk (found by its label), then
    # runs kernel-guest-init.sh from it. panic=-1 and -no-reboot: a dead init ends QEMU.
    # TCG's TSC is the host's: tell the guest its rate. Left to calibrate it against the
    # emulated PIT on a loaded host, a 7.2 guest took 260 MHz for 2596 and its clock ran
    # ten times fast (its timeouts too).
    local tsc=""
    if grep -qw constant_tsc /proc/cpuinfo; then
        tsc="tsc_early_khz=$(awk '/^cpu MHz/ {printf "%d", $4 * 1000; exit}' /proc/cpuinfo)"
    fi
    local init='mount -t proc proc /proc; mount -t devtmpfs dev /dev; for d in /dev/nvme0n?; do blkid -p -s LABEL -o value $d | grep -qx rtdata && mount $d /mnt; done; exec /mnt/init.sh'
    set +e
    timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=single -cpu max \
        -smp 2 -m 4096 -display none -monitor none -no-reboot -nic none \
        -kernel "$kdir/vmlinuz" \
        -append "root=PARTUUID=$BOX_PARTUUID rw console=ttyS0 tsc=reliable $tsc mitigations=off panic=-1 init=/bin/bash -- -c \"$init\"" \
        -drive "file=$overlay,if=none,id=root,format=qcow2" \
        -drive "file=$data,if=none,id=data,format=raw" \
        -drive "file=$kdir/kernel.img,if=none,id=kernel,format=raw,readonly=on" \
        -device nvme,id=nvme0,serial=ringtool \
        -device nvme-ns,drive=root,bus=nvme0,nsid=1 \
        -device nvme-ns,drive=data,bus=nvme0,nsid=2 \
        -device nvme-ns,drive=kernel,bus=nvme0,nsid=3 \
        -serial "file:$console" -serial "file:$log" -serial "file:$junit" \
        >"$OUT/qemu-$name.log" 2>&1 &
    QEMU_PID=$!
    wait "$QEMU_PID"
    rc=$?
    QEMU_PID=""
    set -e
    rm -f "$data" "$overlay"
    status="$(tr -d '\r' <"$log" | sed -n 's/^ringtool-guest-exit: \([0-9]*\)$/\1/p' | tail -1)"
    if ((rc == 124 || rc == 137)); then
        say "$release: killed after ${TIMEOUT}s; console: $console"
        status=124
    elif [[ -z "$status" ]]; then
        say "$release: the guest ended without a test status (QEMU $rc); console: $console"
        tail -20 "$console" >&2 || true
        status=98
    fi
    say "$release: $(tr -d '\r' <"$log" | grep -m1 '^guest kernel:' || echo 'guest kernel: unknown')"
    say "$release: $(tr -d '\r' <"$log" | grep -E '(passed|failed|errors?|skipped|deselected|no tests ran).* in [0-9.]+s' | tail -1 || echo "no summary") (pytest status $status)"
    if [[ "$status" != 0 ]]; then
        sed -n '/short test summary info/,$p' "$log" | tail -40 >&2 || true
    fi
    return "$status"
}

main() {
    local suites=() suite markexpr kdir rc=0
    read -r -a suites <<<"$KERNELS"
    ((${#suites[@]})) || die "RINGTOOL_KERNELS names no suite"

    phase "host packages"
    apt_install qemu-system-x86 qemu-utils debootstrap fdisk e2fsprogs kmod vagrant ca-certificates

    # One run at a time builds the box, updates the apt lists and fills the cache (CI,
    # people by hand); the guests then run side by side.
    exec 9>"$VM_CACHE/kernels/lock"
    flock 9
    phase "box"
    BOX_DISK="$(box_disk "$(bash "$HERE/build-box.sh")")"
    # root=PARTUUID=<MBR signature>-01: the box's one partition, without an initramfs
    BOX_PARTUUID="$(qemu-io -r -f qcow2 -c 'read -v 440 4' "$BOX_DISK" \
        | awk 'NR == 1 {printf "%s%s%s%s", $5, $4, $3, $2}')-01"
    say "box disk $BOX_DISK (root PARTUUID=$BOX_PARTUUID)"

    phase "kernels"
    apt_setup "${suites[@]}"
    local kdirs=()
    for suite in "${suites[@]}"; do
        kdirs+=("$(kernel_image "$suite")")
    done
    # Older keys' kernels go once unused for a day (a run of another version of this
    # script may still be booting them).
    touch "$KCACHE"
    for old in "$VM_CACHE"/kernels/*/; do
        case "$(basename "$old")" in "$KEY" | apt | run.*) ;; *)
            [[ -z "$(find "$old" -maxdepth 0 -mmin +1440)" ]] || rm -rf "$old" ;;
        esac
    done
    flock -u 9
    if [[ "${RINGTOOL_KERNELS_PREPARE_ONLY:-0}" == 1 ]]; then
        phase_end
        say "prepared (RINGTOOL_KERNELS_PREPARE_ONLY=1): $(printf '%s ' "${PHASE_TIMES[@]}")"
        return 0
    fi
    stage_data

    local i
    for i in "${!suites[@]}"; do
        markexpr=all_kernels
        ((i < ${#suites[@]} - 1)) || markexpr="all_kernels or newest_kernel"
        phase "tests $(basename "${kdirs[i]}")"
        run_guest "${suites[i]}" "${kdirs[i]}" "$markexpr" || rc=$?
    done
    phase_end
    say "phase times:"
    printf '  %s\n' "${PHASE_TIMES[@]}" >&2
    say "total ${SECONDS}s; logs in $OUT"
    return "$rc"
}

main "$@"
exit $?
