#!/usr/bin/env bash
# The files ringtool's setup puts outside the checkout, and their removal, in one place
# (so that `make uninstall` removes exactly what scripts/setup.sh installs):
#   host-files.sh headers         where /lib/modules/$(uname -r)/build is missing, link
#                                 Debian's generic headers there (+ a marker for doctor)
#   host-files.sh install VENV    /usr/local/bin/ringtool -> VENV/bin/ringtool, the
#                                 command ringtool-python (VENV's Python: ringtool, BCC
#                                 and numpy for the library; `python3` has no ringtool),
#                                 the bash completion, the man page ringtool(1), a marked
#                                 block in /etc/bash.bashrc that loads bash-completion in
#                                 interactive shells (where nothing loads it yet)
#   host-files.sh uninstall VENV  remove all of the above: the header links only where
#                                 the marker says setup made them, the command link only
#                                 when it points into VENV (ringtool-python: when it
#                                 runs VENV's Python)
# Every step is idempotent and says what it changed. RINGTOOL_PREFIX (default: none, /)
# is put before every path, so that the tests can run it in a temporary directory;
# RINGTOOL_BASHRC names the bash.bashrc to edit (default: $RINGTOOL_PREFIX/etc/bash.bashrc).
set -euo pipefail

PREFIX="${RINGTOOL_PREFIX:-}"
KREL="$(uname -r)"
MODULES="$PREFIX/lib/modules"
MARKER_NAME=".ringtool-linked-headers"
BIN_LINK="$PREFIX/usr/local/bin/ringtool"
PYTHON_CMD="$PREFIX/usr/local/bin/ringtool-python"
PYTHON_CMD_TAG="# ringtool-python: the Python ringtool is installed in (scripts/host-files.sh)"
COMPLETION="$PREFIX/etc/bash_completion.d/ringtool"
MANPAGE="$PREFIX/usr/local/share/man/man1/ringtool.1"
BASHRC="${RINGTOOL_BASHRC:-$PREFIX/etc/bash.bashrc}"
BLOCK_BEGIN="# >>> ringtool: bash completion in interactive shells (scripts/host-files.sh) >>>"
BLOCK_BEGIN_NL="$BLOCK_BEGIN (and the newline before this line)"
BLOCK_END="# <<< ringtool <<<"
WHO="$([[ "${1:-}" == uninstall ]] && echo uninstall || echo setup)"
say() { printf '%s: %s\n' "$WHO" "$*"; }

if [[ -z "$PREFIX" && $(id -u) -ne 0 ]]; then
    echo "$WHO: needs root (writes /usr/local, /etc, /lib/modules): run with sudo" >&2
    exit 1
fi

link_headers() {
    [[ -e "$MODULES/$KREL/build/include" ]] && return 0
    local hdr common
    hdr="$(ls -d "$PREFIX"/usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)"
    if [[ -z "$hdr" ]]; then
        echo "setup: no kernel headers for $KREL and no linux-headers-*-amd64 to link" >&2
        exit 1
    fi
    common="${hdr%-amd64}-common"
    mkdir -p "$MODULES/$KREL"
    ln -sfn "$hdr" "$MODULES/$KREL/build"
    [[ -d "$common" ]] && ln -sfn "$common" "$MODULES/$KREL/source"
    echo "$hdr" > "$MODULES/$KREL/$MARKER_NAME"
    say "linked fallback headers $hdr for kernel $KREL"
}

unlink_headers() {  # every kernel's links that a marker says setup made
    local marker dir hdr
    for marker in "$MODULES"/*/"$MARKER_NAME"; do
        [[ -f "$marker" ]] || continue
        dir="$(dirname "$marker")"
        hdr="$(<"$marker")"
        [[ -L "$dir/build" && "$(readlink "$dir/build")" == "$hdr" ]] && rm -f "$dir/build"
        [[ -L "$dir/source" && "$(readlink "$dir/source")" == "${hdr%-amd64}-common" ]] \
            && rm -f "$dir/source"
        rm -f "$marker"
        rmdir "$dir" 2>/dev/null || true
        say "removed the header links in $dir"
    done
}

install_generated() {  # TARGET COMMAND...: COMMAND's output as TARGET (mode 0644)
    local target="$1" tmp
    shift
    tmp="$(mktemp)"
    if "$@" > "$tmp" && [[ -s "$tmp" ]]; then
        if ! cmp -s "$tmp" "$target"; then
            mkdir -p "$(dirname "$target")"
            install -m 0644 "$tmp" "$target"
            say "installed $target"
        fi
    else
        say "could not generate $target"
    fi
    rm -f "$tmp"
}

# Why a block in /etc/bash.bashrc: /etc/bash_completion.d/ringtool is read by the
# bash-completion package's loader, and on Debian 12 only login shells
# (/etc/profile.d/bash_completion.sh) and users whose ~/.bashrc came from /etc/skel load
# it; root's ~/.bashrc does not, and /etc/bash.bashrc (read by every interactive bash)
# has the lines commented out. The block is Debian's commented one, guarded so that it
# never loads bash-completion twice; users' files are not touched. It is added only
# where no uncommented line of bash.bashrc loads bash-completion's own loader already.
#
# The edit keeps any bash.bashrc valid and reversible: a file without a final newline
# gets one before the block (the begin marker then says so, and uninstall takes it
# away again: install + uninstall give back the original bytes); a second setup adds
# nothing; a begin marker without its end is left alone (nothing after it is removed);
# a symlink is followed and its target edited, never replaced by a file; the new
# content is written to a temporary file in the same directory, checked with `bash -n`
# when the original passed it, given the original's mode and owner, and renamed over
# it. A block glued to the last line by an older setup is taken out the same way.
# A bash.bashrc that cannot be edited (a dangling symlink or a symlink loop, a
# directory it cannot write a file in, an immutable file) is one line saying so, the
# temporary file is removed (also by the EXIT trap, whatever stops the script), and
# the rest of the step goes on: `ringtool` is linked all the same.
BASHRC_LOADER='^[[:space:]]*(\.|source)[[:space:]]+["'"'"']?(/usr/share/bash-completion/bash_completion|/etc/bash_completion)["'"'"']?[[:space:]]*(;|#|$)'

exec 3>&1  # what bashrc_target says, past the $(...) that reads its answer
TMP_FILES=()
trap 'rm -f "${TMP_FILES[@]}"' EXIT

new_temp() {  # FILE > stdout: a new temporary file beside FILE (removed at exit)
    mktemp "$(dirname "$1")/.bash.bashrc.XXXXXX" 2>/dev/null
}

block_at() {  # FILE: "BEGIN END KIND" of its first ringtool block (END 0: no end); a
    # begin marker followed by another before any end has no end: the block starts at
    # the later one (the lines between are the user's, never removed)
    awk -v b="$BLOCK_BEGIN" -v bn="$BLOCK_BEGIN_NL" -v e="$BLOCK_END" '
        $0 == b { start = NR; kind = "plain"; next }
        $0 == bn { start = NR; kind = "newline"; next }
        length($0) > length(b) && substr($0, length($0) - length(b) + 1) == b {
            start = NR; kind = "glued"; next }
        start && $0 == e { print start, NR, kind; found = 1; exit }
        END { if (start && !found) print start, 0, kind }' "$1"
}

replace_file() {  # TARGET NEW WHAT: NEW's content as TARGET (mode, owner kept; bash -n)
    local target="$1" new="$2" what="$3" err
    if bash -n "$target" 2>/dev/null && ! bash -n "$new" 2>/dev/null; then
        rm -f "$new"
        say "left $target alone: the edit would not be valid bash"
        return 1
    fi
    chmod --reference="$target" "$new" 2>/dev/null || true
    chown --reference="$target" "$new" 2>/dev/null || true
    if ! err="$(mv -f "$new" "$target" 2>&1)"; then
        rm -f "$new"
        say "cannot edit $target: ${err##*: } (immutable?); $what"
        return 1
    fi
}

bashrc_target() {  # WHAT: the file to edit, BASHRC or where its symlink points; when
    # the symlink dangles or loops, one line saying so (with WHAT) and status 1
    [[ -L "$BASHRC" ]] || { echo "$BASHRC"; return 0; }
    readlink -e "$BASHRC" && return 0
    say "cannot edit $BASHRC: a dangling symlink or a symlink loop; $1" >&3
    return 1
}

without_block() {  # FILE BEGIN END KIND > stdout: FILE without that block, byte-exact
    local file="$1" b="$2" e="$3" kind="$4" line
    if [[ "$kind" == newline ]]; then
        head -n "$((b - 1))" "$file" | head -c -1  # the newline setup added
    else
        head -n "$((b - 1))" "$file"
    fi
    if [[ "$kind" == glued ]]; then
        line="$(sed -n "${b}p" "$file")"
        printf '%s' "${line%"$BLOCK_BEGIN"}"
    fi
    tail -n "+$((e + 1))" "$file"
}

remove_block() {  # FILE: take out its first complete block; 1 when there is none
    local file="$1" at tmp
    at="$(block_at "$file")"
    [[ -n "$at" ]] || return 1
    set -- $at
    if [[ "$2" == 0 ]]; then
        say "left $file alone: a ringtool begin marker (line $1) has no end marker"
        return 2
    fi
    if ! tmp="$(new_temp "$file")"; then
        say "cannot edit $file: no file can be made in its directory; block not removed"
        return 2
    fi
    TMP_FILES+=("$tmp")
    without_block "$file" "$1" "$2" "$3" > "$tmp"
    replace_file "$file" "$tmp" "block not removed" || return 2
}

enable_completion() {
    local file at tmp begin="$BLOCK_BEGIN"
    file="$(bashrc_target "bash completion not enabled")" || return 0
    [[ -f "$file" ]] || return 0
    at="$(block_at "$file")"
    if [[ -n "$at" ]]; then
        set -- $at
        [[ "$2" == 0 ]] && { say "left $file alone: a ringtool begin marker (line $1) has no end marker"; return 0; }
        [[ "$3" != glued ]] && return 0
        remove_block "$file" || return 0  # an older setup's glued block: redone below
    fi
    grep -Eq "$BASHRC_LOADER" "$file" && return 0
    if ! tmp="$(new_temp "$file")"; then
        say "cannot edit $file: no file can be made in its directory; bash completion not enabled"
        return 0
    fi
    TMP_FILES+=("$tmp")
    cat "$file" > "$tmp"
    if [[ -s "$file" && -n "$(tail -c 1 "$file")" ]]; then
        echo >> "$tmp"
        begin="$BLOCK_BEGIN_NL"
    fi
    {
        echo "$begin"
        echo 'if ! shopt -oq posix && [ -z "${BASH_COMPLETION_VERSINFO-}" ]; then'
        echo '  if [ -f /usr/share/bash-completion/bash_completion ]; then'
        echo '    . /usr/share/bash-completion/bash_completion'
        echo '  elif [ -f /etc/bash_completion ]; then'
        echo '    . /etc/bash_completion'
        echo '  fi'
        echo 'fi'
        echo "$BLOCK_END"
    } >> "$tmp"
    if replace_file "$file" "$tmp" "bash completion not enabled"; then
        say "enabled bash completion in $file"
    fi
}

disable_completion() {  # exactly the block(s) enable_completion added
    local file
    file="$(bashrc_target "bash completion block not removed")" || return 0
    [[ -f "$file" ]] || return 0
    while remove_block "$file"; do
        say "removed the bash completion block from $file"
    done
}

link_command() {  # VENV: `ringtool` on root's PATH (and sudo's secure_path)
    local entry="$1/bin/ringtool"
    if [[ -e "$BIN_LINK" && ! -L "$BIN_LINK" ]]; then
        say "left $BIN_LINK alone: it is not a link (another ringtool installation?)"
        return 0
    fi
    [[ -L "$BIN_LINK" && "$(readlink "$BIN_LINK")" == "$entry" ]] && return 0
    mkdir -p "$(dirname "$BIN_LINK")"
    ln -sfn "$entry" "$BIN_LINK"
    say "linked $BIN_LINK -> $entry"
}

python_script() {  # VENV > stdout: ringtool-python's text. A script, not a link: a
    # link to VENV/bin/python (itself a link to /usr/bin/python3) would start Python
    # outside the venv (it finds pyvenv.cfg beside the path it was started as).
    printf '#!/bin/sh\n%s\nexec %q "$@"\n' "$PYTHON_CMD_TAG" "$1/bin/python"
}

python_command() {  # VENV: `ringtool-python` on root's PATH, for the library's examples
    local tmp
    if [[ -e "$PYTHON_CMD" || -L "$PYTHON_CMD" ]] && ! grep -qxF "$PYTHON_CMD_TAG" "$PYTHON_CMD" 2>/dev/null; then
        say "left $PYTHON_CMD alone: setup did not make it"
        return 0
    fi
    tmp="$(mktemp)"
    TMP_FILES+=("$tmp")
    python_script "$1" > "$tmp"
    cmp -s "$tmp" "$PYTHON_CMD" && return 0
    mkdir -p "$(dirname "$PYTHON_CMD")"
    install -m 0755 "$tmp" "$PYTHON_CMD"
    say "installed $PYTHON_CMD (runs $1/bin/python)"
}

install_files() {  # VENV
    local venv="$1"
    # Shell completion and the man page ringtool(1), generated from the CLI's own parser
    # (ringtool --print-completion / --print-manpage); written when changed.
    install_generated "$COMPLETION" "$venv/bin/python" -m ringtool --print-completion bash
    install_generated "$MANPAGE" "$venv/bin/python" -m ringtool --print-manpage
    enable_completion
    link_command "$venv"
    python_command "$venv"
}

uninstall_files() {  # VENV
    local entry="$1/bin/ringtool" path
    if [[ -L "$BIN_LINK" ]]; then
        if [[ "$(readlink "$BIN_LINK")" == "$entry" ]]; then
            rm -f "$BIN_LINK"
            say "removed $BIN_LINK"
        else
            say "left $BIN_LINK alone: it points at $(readlink "$BIN_LINK"), not $entry"
        fi
    fi
    if [[ -f "$PYTHON_CMD" && ! -L "$PYTHON_CMD" ]]; then
        if cmp -s "$PYTHON_CMD" <(python_script "$1"); then
            rm -f "$PYTHON_CMD"
            say "removed $PYTHON_CMD"
        else
            say "left $PYTHON_CMD alone: it does not run $1/bin/python"
        fi
    fi
    for path in "$COMPLETION" "$MANPAGE"; do
        [[ -e "$path" ]] && rm -f "$path" && say "removed $path"
    done
    disable_completion
    unlink_headers
}

case "${1:-}" in
    headers) link_headers ;;
    install) install_files "${2:?usage: host-files.sh install VENV}" ;;
    uninstall) uninstall_files "${2:?usage: host-files.sh uninstall VENV}" ;;
    *)
        echo "usage: host-files.sh {headers | install VENV | uninstall VENV}" >&2
        exit 2
        ;;
esac
