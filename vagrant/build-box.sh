#!/usr/bin/env bash
# Builds the Debian 12 libvirt box that `make test-vm` runs the suite in, from Debian's
# own packages (debootstrap), and prints the .box path on stdout.
#
# Contract: the box is cached in $RINGTOOL_VM_CACHE (default /var/cache/ringtool-vm)
# under the first 16 hex digits of the sha256 of this script and scripts/setup.sh
# (whose Debian packages are preinstalled), so a second run only prints the path; any
# edit to either builds a new box. Nothing host-specific goes into
# the box (CA certificates and proxies are carried in by the Vagrantfile's provisioner
# at `vagrant up` time). Needs root and debootstrap, qemu-utils, fdisk, vagrant
# (for Vagrant's well-known insecure public key); vagrant/test-vm.sh installs them.
set -euo pipefail
SCRIPT_NAME=build-box
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=vagrant/lib.sh
. "$HERE/lib.sh"

REPO="$(cd "$HERE/.." && pwd)"
KEY="$(cat "${BASH_SOURCE[0]}" "$REPO/scripts/setup.sh" | sha256sum | cut -c1-16)"
OUT="$VM_CACHE/$KEY"
BOX="$OUT/ringtool-debian12.box"
MIRROR="${RINGTOOL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SIZE_GB=20
# Kernel + its exact headers (BCC compiles against them), boot, ssh, and what Vagrant
# needs in a guest (sudo, rsync for the synced folder); DHCP on eth0 via ifupdown.
PKGS=(linux-image-amd64 linux-headers-amd64 grub-pc-bin grub2-common initramfs-tools
    systemd-sysv udev kmod ifupdown isc-dhcp-client iproute2 netbase openssh-server
    sudo rsync ca-certificates procps)

if [[ -f "$BOX" ]]; then
    echo "$BOX"
    exit 0
fi
need_root
for tool in debootstrap qemu-img sfdisk losetup mkfs.ext4 blkid; do
    command -v "$tool" >/dev/null || die "missing $tool (run vagrant/test-vm.sh, or apt-get install debootstrap qemu-utils fdisk)"
done
INSECURE_KEY="$(ls /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub \
    2>/dev/null | sort -V | tail -1)"
[[ -n "$INSECURE_KEY" ]] || die "Vagrant's insecure public key not found (apt-get install vagrant)"

mkdir -p "$VM_CACHE"
WORK="$(mktemp -d "$VM_CACHE/build.XXXXXX")"
ROOT="$WORK/root"
LOOP=""
cleanup() {
    umount -R "$ROOT" 2>/dev/null || true
    [[ -z "$LOOP" ]] || losetup -d "$LOOP" || true
    # Never rm -rf through a bind mount of the host's /dev.
    if grep -q " $WORK/" /proc/mounts; then
        say "left $WORK in place: still mounted"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

say "building the Debian 12 box in $WORK (cache key $KEY)"
mkdir -p "$ROOT"
qemu-img create -q -f raw "$WORK/disk.raw" "${SIZE_GB}G"
# One bootable Linux partition from 1 MiB (grub's core image goes before it).
printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$WORK/disk.raw"
LOOP="$(losetup --find --show --partscan "$WORK/disk.raw")"
PART="${LOOP}p1"
# Some kernels scan only on request (partscan=1 yet no p1 node): ask with partx.
[[ -b "$PART" ]] || partx -a "$LOOP" 2>/dev/null || true
for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -b "$PART" ]] && break; sleep 0.5; done
[[ -b "$PART" ]] || die "no partition device $PART after losetup --partscan"
mkfs.ext4 -q -L root "$PART"
UUID="$(blkid -s UUID -o value "$PART")"
mount "$PART" "$ROOT"

say "debootstrap bookworm from $MIRROR"
debootstrap --variant=minbase --include="$(IFS=,; echo "${PKGS[*]}")" \
    bookworm "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }

mount -t proc proc "$ROOT/proc"
mount -t sysfs sysfs "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --make-rslave "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
in_root() {
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        ${http_proxy:+http_proxy="$http_proxy"} ${https_proxy:+https_proxy="$https_proxy"} \
        ${no_proxy:+no_proxy="$no_proxy"} "$@"
}

say "configuring the guest"
cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
EOF
echo "UUID=$UUID / ext4 errors=remount-ro 0 1" >"$ROOT/etc/fstab"
echo debian12 >"$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 debian12\n' >"$ROOT/etc/hosts"
cat >"$ROOT/etc/network/interfaces" <<'EOF'
auto lo
iface lo inet loopback

auto eth0
iface eth0 inet dhcp
EOF
# Unique per VM: an empty machine-id is filled at first boot; host keys likewise.
: >"$ROOT/etc/machine-id"
rm -f "$ROOT"/etc/ssh/ssh_host_*
mkdir -p "$ROOT/etc/systemd/system/ssh.service.d"
# (ExecStartPre= first: the unit's own `sshd -t` fails without host keys.)
printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' \
    >"$ROOT/etc/systemd/system/ssh.service.d/host-keys.conf"
echo 'UseDNS no' >"$ROOT/etc/ssh/sshd_config.d/vagrant.conf"

# The vagrant user with Vagrant's well-known insecure key (replaced at first `up`).
in_root useradd -m -s /bin/bash vagrant
echo vagrant:vagrant | in_root chpasswd
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' >"$ROOT/etc/sudoers.d/vagrant"
chmod 440 "$ROOT/etc/sudoers.d/vagrant"
install -d -m 700 "$ROOT/home/vagrant/.ssh"
install -m 600 "$INSECURE_KEY" "$ROOT/home/vagrant/.ssh/authorized_keys"
in_root chown -R vagrant:vagrant /home/vagrant/.ssh

# The Debian packages scripts/setup.sh installs (its step 1 only), here where dpkg runs
# natively instead of under the VM's emulation at provisioning; setup.sh in the guest
# then finds them installed. Meanwhile no service starts (policy-rc.d), apt uses the
# host's proxy, and afterwards services these packages enabled at boot are disabled
# again (setup.sh stops the servers it installs; the box must not run them either).
links_before="$(find "$ROOT/etc/systemd/system" -path '*.wants/*' -type l | sort)"
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 755 "$ROOT/usr/sbin/policy-rc.d"
apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https|ftp)::Proxy' \
    >"$ROOT/etc/apt/apt.conf.d/99ringtool-build-proxy" || true
install -D -m 755 "$REPO/scripts/setup.sh" "$ROOT/tmp/ringtool/scripts/setup.sh"
say "installing scripts/setup.sh's packages"
in_root RINGTOOL_SETUP_PACKAGES_ONLY=1 bash /tmp/ringtool/scripts/setup.sh \
    >"$WORK/setup.log" 2>&1 || { tail -30 "$WORK/setup.log" >&2; die "setup.sh (packages) failed"; }
comm -13 <(echo "$links_before") \
    <(find "$ROOT/etc/systemd/system" -path '*.wants/*' -type l | sort) | xargs -r rm -v >&2
rm -f "$ROOT/usr/sbin/policy-rc.d" "$ROOT/etc/apt/apt.conf.d/99ringtool-build-proxy"

# Boot: grub in the MBR, and a grub.cfg written here with root=UUID= (grub-mkconfig
# in a chroot would name the build host's loop device). /vmlinuz and /initrd.img are
# the kernel package's symlinks, so a kernel upgrade in the guest still boots.
# tsc=reliable: under QEMU's emulation (TCG) the vCPUs' TSCs fail the kernel's sync
# check, the guest falls back to the HPET, and every clock_gettime becomes a syscall
# plus an emulated MMIO read (the vDSO cannot read the HPET). With syscalls traced that
# starved the guest: Go's nats-server spun in clock_gettime on both vCPUs, soft lockups
# for minutes, no answer to ARP. TCG derives every vCPU's TSC from one virtual clock, so
# it is consistent. mitigations=off: a throwaway test VM; the SRSO/retbleed return
# thunks cost a lot under emulation.
CMDLINE="net.ifnames=0 console=tty0 console=ttyS0,115200 tsc=reliable mitigations=off"
cat >"$ROOT/etc/default/grub" <<EOF
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="$CMDLINE"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
EOF
in_root grub-install --target=i386-pc --boot-directory=/boot \
    --modules="part_msdos ext2" "$LOOP" >"$WORK/grub.log" 2>&1 \
    || { cat "$WORK/grub.log" >&2; die "grub-install failed"; }
cat >"$ROOT/boot/grub/grub.cfg" <<EOF
serial --unit=0 --speed=115200
terminal_input console serial
terminal_output console serial
set timeout=1
insmod part_msdos
insmod ext2
search --no-floppy --fs-uuid --set=root $UUID
menuentry "Debian 12" {
    linux /vmlinuz root=UUID=$UUID ro $CMDLINE
    initrd /initrd.img
}
EOF
[[ -e "$ROOT/vmlinuz" && -e "$ROOT/initrd.img" ]] || die "no /vmlinuz or /initrd.img in the guest"
in_root apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/tmp/*
# Deleted files (debootstrap's .debs) become holes, so the qcow2 holds only data.
fstrim "$ROOT"
umount -R "$ROOT"
losetup -d "$LOOP"
LOOP=""

say "packaging the libvirt box"
mkdir -p "$WORK/box"
qemu-img convert -O qcow2 "$WORK/disk.raw" "$WORK/box/box.img"
printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %d}\n' "$SIZE_GB" \
    >"$WORK/box/metadata.json"
cat >"$WORK/box/Vagrantfile" <<'EOF'
# Built by ringtool's vagrant/build-box.sh. QEMU's emulation (TCG) by default: the
# project's Vagrantfile switches to KVM when RINGTOOL_VM_DRIVER=kvm.
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.driver = "qemu"
  end
end
EOF
mkdir -p "$OUT"
tar -C "$WORK/box" -cf "$WORK/box.tar" metadata.json Vagrantfile box.img
mv "$WORK/box.tar" "$BOX"
say "box ready: $BOX ($(du -h "$BOX" | cut -f1))"
echo "$BOX"
