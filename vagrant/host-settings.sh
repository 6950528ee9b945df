#!/usr/bin/env bash
# Prints, on stdout, a shell script for the guest that makes it reach package
# registries the way this host does: the host's locally added CA certificates
# (a TLS-intercepting proxy's CA), its apt proxy settings, its pip index/proxy
# settings and its http(s)_proxy variables. vagrant/Vagrantfile runs this on the host
# at `vagrant up`/`provision` time and gives the output to a shell provisioner, so
# nothing host-specific is committed or baked into a box. With nothing to carry, the
# printed script does nothing.
#
# Carried: *.crt under $RINGTOOL_HOST_CA_DIR (default /usr/local/share/ca-certificates);
# `apt-config dump`'s Acquire::{http,https,ftp}::Proxy*; from pip's config files and
# PIP_* variables, index-url, extra-index-url, trusted-host, proxy, timeout and retries
# (only http(s) index URLs: file:// and local paths do not exist in the guest); the
# (HTTP|HTTPS|NO)_PROXY variables in either case. pip in the guest is pointed at the
# system CA bundle (pip's own bundle does not know the host's CAs).
set -euo pipefail

CA_DIR="${RINGTOOL_HOST_CA_DIR:-/usr/local/share/ca-certificates}"
EOF_MARK="RINGTOOL_HOST_SETTINGS_EOF"

# file_block DEST CONTENT: a guest command writing CONTENT to DEST.
file_block() {
    printf 'mkdir -p %q\ncat >%q <<'\''%s'\''\n%s\n%s\n' \
        "$(dirname "$1")" "$1" "$EOF_MARK" "$2" "$EOF_MARK"
}

# pip_settings: "key=value" lines from pip's config files (later files win, as in
# pip), then PIP_* variables; index URLs filtered to http(s).
pip_settings() {
    local files=(/etc/pip.conf /etc/xdg/pip/pip.conf "$HOME/.pip/pip.conf"
        "${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf" "${PIP_CONFIG_FILE:-}")
    local f existing=()
    for f in "${files[@]}"; do [[ -n "$f" && -r "$f" ]] && existing+=("$f"); done
    {
        ((${#existing[@]} == 0)) || awk '
            /^[[:space:]]*\[/ { sec = $0; gsub(/[][[:space:]]/, "", sec); key = ""; next }
            sec != "global" && sec != "install" { next }
            /^[[:space:]]*[#;]/ || /^[[:space:]]*$/ { next }
            /^[[:space:]]/ && key != "" { v = $0; gsub(/^[[:space:]]+|[[:space:]]+$/, "", v)
                                          val[key] = val[key] " " v; next }
            /=/ { key = $0; sub(/[[:space:]]*=.*/, "", key); v = $0; sub(/^[^=]*=[[:space:]]*/, "", v)
                  sub(/[[:space:]]+$/, "", v); val[key] = v }
            END { for (k in val) print k "=" val[k] }' "${existing[@]}"
        local k
        for k in INDEX_URL EXTRA_INDEX_URL TRUSTED_HOST PROXY TIMEOUT DEFAULT_TIMEOUT RETRIES; do
            local var="PIP_$k"
            if [[ -n "${!var:-}" ]]; then
                printf '%s=%s\n' "$(tr 'A-Z_' 'a-z-' <<<"$k")" "${!var}"
            fi
        done
    } | awk -F= '
        { k = $1; sub(/^[^=]*=/, ""); v = $0 }
        k == "default-timeout" { k = "timeout" }
        k == "index-url" || k == "extra-index-url" {
            out = ""; n = split(v, parts, /[[:space:]]+/)
            for (i = 1; i <= n; i++) if (parts[i] ~ /^https?:\/\//) out = out (out ? " " : "") parts[i]
            v = out
        }
        k ~ /^(index-url|extra-index-url|trusted-host|proxy|timeout|retries)$/ && v != "" { val[k] = v }
        END { for (k in val) print k " = " val[k] }' | sort
}

echo "set -e"
echo "# Written by ringtool's vagrant/host-settings.sh from the host's settings."

# 1. CA certificates.
have_cas=0
if [[ -d "$CA_DIR" ]]; then
    while IFS= read -r -d '' crt; do
        have_cas=1
        file_block "/usr/local/share/ca-certificates/ringtool-host/$(basename "$crt")" \
            "$(cat "$crt")"
    done < <(find "$CA_DIR" -name '*.crt' -type f -print0 | sort -z)
fi
((have_cas)) && echo "update-ca-certificates >/dev/null"

# 2. Proxy variables (either case), for apt, pip and login shells.
http_p="${http_proxy:-${HTTP_PROXY:-}}"
https_p="${https_proxy:-${HTTPS_PROXY:-}}"
no_p="${no_proxy:-${NO_PROXY:-}}"
envs=""
[[ -n "$http_p" ]] && envs+="http_proxy=$http_p"$'\n'"HTTP_PROXY=$http_p"$'\n'
[[ -n "$https_p" ]] && envs+="https_proxy=$https_p"$'\n'"HTTPS_PROXY=$https_p"$'\n'
[[ -n "$no_p" ]] && envs+="no_proxy=$no_p"$'\n'"NO_PROXY=$no_p"$'\n'
if [[ -n "$envs" ]]; then
    file_block /etc/profile.d/ringtool-host-proxy.sh "$(sed 's/^/export /' <<<"${envs%$'\n'}")"
    echo "grep -v -i '_proxy=' /etc/environment >/etc/environment.new || true"
    printf 'cat >>/etc/environment.new <<'\''%s'\''\n%s%s\n' "$EOF_MARK" "$envs" "$EOF_MARK"
    echo "mv /etc/environment.new /etc/environment"
fi

# 3. apt: the host's own proxy configuration, else the proxy variables.
apt_conf="$(apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https|ftp)::Proxy' || true)"
if [[ -z "$apt_conf" ]]; then
    [[ -n "$http_p" ]] && apt_conf+="Acquire::http::Proxy \"$http_p\";"$'\n'
    [[ -n "$https_p" ]] && apt_conf+="Acquire::https::Proxy \"$https_p\";"$'\n'
    apt_conf="${apt_conf%$'\n'}"
fi
[[ -n "$apt_conf" ]] && file_block /etc/apt/apt.conf.d/90ringtool-host-proxy "$apt_conf"

# 4. pip: the host's index/proxy settings; the system CA bundle when CAs were added.
pip_conf="$(pip_settings)"
if [[ -n "$https_p" ]] && ! grep -q '^proxy ' <<<"$pip_conf"; then
    pip_conf+=$'\n'"proxy = $https_p"
fi
((have_cas)) && pip_conf+=$'\n'"cert = /etc/ssl/certs/ca-certificates.crt"
pip_conf="$(sed '/^$/d' <<<"$pip_conf")"
[[ -n "$pip_conf" ]] && file_block /etc/pip.conf "[global]"$'\n'"$pip_conf"
exit 0
