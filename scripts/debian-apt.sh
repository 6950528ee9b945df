# apt for Debian suites other than the host's, with a configuration of its own: its own
# sources list, lists, cache and an empty dpkg status (/dev/null), so the host's sources,
# lists and installed packages stay as they are. Sourced (not run) by scripts/setup.sh
# (trixie's nats-server) and vagrant/test-kernels.sh (trixie's and sid's kernels).
#
# Only `apt-get download` and `apt-cache` go through it: apt checks the suite's Release
# against Debian's archive keyring (signed-by), the Packages index against the Release's
# hashes and each .deb against the index, as for the host's own packages.
#
# Environment: RINGTOOL_DEBIAN_MIRROR (default http://deb.debian.org/debian); the
# host's apt proxies (Acquire::http::Proxy & co.) are carried over.

# debian_apt DIR CMD...: runs CMD (apt-get, apt-cache) with DIR's configuration.
debian_apt() {
    local dir="$1"
    shift
    APT_CONFIG="$dir/apt.conf" "$@"
}

# debian_apt_setup DIR LOG SUITE...: DIR's configuration for SUITE... (main, amd64) and
# its lists, updated unless younger than a day and made for the same suites; apt-get
# update's output goes to LOG. Non-zero (the log's tail on stderr) when the update fails,
# any index not fetched included (--error-on=any: apt-get update says 0 otherwise).
# Check-Valid-Until off: a mirror or proxy may serve sid's Release past its date.
debian_apt_setup() {
    local dir="$1" log="$2" suite
    shift 2
    local mirror="${RINGTOOL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    mkdir -p "$dir/etc/apt/preferences.d" "$dir/etc/apt/apt.conf.d" \
        "$dir/state/lists/partial" "$dir/cache/archives/partial" "$dir/debs"
    : >"$dir/etc/apt/sources.list"
    for suite in "$@"; do
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
            >>"$dir/etc/apt/sources.list"
    done
    {
        echo "Dir::Etc \"$dir/etc/apt\";"
        echo "Dir::State \"$dir/state\";"
        echo 'Dir::State::status "/dev/null";'
        echo "Dir::Cache \"$dir/cache\";"
        echo 'APT::Architecture "amd64";'
        echo 'Acquire::Languages "none";'
        echo 'Acquire::Check-Valid-Until "false";'
        # the host's proxies (apt's own settings)
        apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https|ftp)::Proxy' || true
    } >"$dir/apt.conf"
    if [[ -n "$(find "$dir/state/lists" -name '*_Packages' -mmin -1440 2>/dev/null | head -1)" ]] \
        && cmp -s "$dir/etc/apt/sources.list" "$dir/sources.list.updated"; then
        return 0
    fi
    if ! debian_apt "$dir" apt-get -q --error-on=any update >"$log" 2>&1; then
        tail -5 "$log" >&2
        echo "apt-get update failed: see $log" >&2
        return 1
    fi
    cp "$dir/etc/apt/sources.list" "$dir/sources.list.updated"
}
