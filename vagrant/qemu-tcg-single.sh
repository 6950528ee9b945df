#!/bin/bash
# The QEMU that libvirt starts for ringtool's TCG test VM (test-vm.sh installs it in
# the box cache and the Vagrantfile names it as the domain's emulator): QEMU itself,
# with libvirt's `-accel tcg` made `-accel tcg,thread=single`, which libvirt cannot say.
#
# Why: with one host thread per vCPU (MTTCG, QEMU 7.2's default), a Debian 6.1 guest
# wedged in two runs: both vCPUs looping for minutes on a stale `int3` at the
# sys_enter tracepoint's jump label (soft lockups at syscall_trace_enter+0xd8, with
# asm_exc_int3 between). The guest patches that site (text_poke_bp: int3, then the
# new bytes) each time a tracepoint is attached or detached; one vCPU kept running a
# translation of the int3 the other vCPU had already replaced, and the kernel's int3
# handler, finding no int3 in memory, sent it back to the same address for ever.
# One thread for all vCPUs takes the cross-thread race out of QEMU's code invalidation.
# RINGTOOL_VM_QEMU: the QEMU binary (tests/unit/test_vm_qemu_wrapper.py sets a fake).
QEMU="${RINGTOOL_VM_QEMU:-/usr/bin/qemu-system-x86_64}"
args=()
prev=""
for arg in "$@"; do
    if [[ "$prev" == -accel && "$arg" == tcg* && "$arg" != *thread=* ]]; then
        arg="$arg,thread=single"
    fi
    args+=("$arg")
    prev="$arg"
done
exec "$QEMU" "${args[@]}"
