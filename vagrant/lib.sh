# Shared by vagrant/build-box.sh and vagrant/test-vm.sh (sourced, not run).
# Logging goes to stderr so a script's stdout can carry a result (a path).

VM_CACHE="${RINGTOOL_VM_CACHE:-/var/cache/ringtool-vm}"

say() { printf '%s: %s\n' "${SCRIPT_NAME:-vagrant}" "$*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
    [[ $(id -u) -eq 0 ]] || die "needs root (apt-get, loop devices, libvirt): run with sudo"
}

# apt_install PKG...: installs the packages not installed yet (apt-get update first).
apt_install() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# Phase timing: `phase NAME` starts a phase (ending the previous one); `phase_end`
# ends the last. PHASE_TIMES collects "name seconds" lines for the summary.
PHASE_NAME=""
PHASE_START=0
PHASE_TIMES=()
phase() {
    phase_end
    PHASE_NAME="$1"
    PHASE_START=$SECONDS
    say "== $PHASE_NAME"
}
phase_end() {
    [[ -n "$PHASE_NAME" ]] || return 0
    PHASE_TIMES+=("$(printf '%-15s %4ds' "$PHASE_NAME" $((SECONDS - PHASE_START)))")
    PHASE_NAME=""
}
