#!/usr/bin/env bash
# Build the Megatron oracle venv: Python 3.12 + megatron-core 0.19.2 + torch 2.14.1.
#
#   tools/oracles/megatron/build.sh [VENV_DIR]     (default: <repo>/.oracles/megatron)
#
# Idempotent: a stamp file in the venv records the hash of requirements.txt and
# the interpreter; when it matches and megatron imports, nothing is done.
# Python 3.12 is found as $MEGATRON_ORACLE_PYTHON312, else via pyenv, else on PATH.
# pip's cache goes to <repo>/.oracles/pip-cache unless PIP_CACHE_DIR is set.
# A fresh build downloads a CUDA build of torch (several GB) and takes ~1-2 min.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
req="$here/requirements.txt"
venv="${1:-$repo/.oracles/megatron}"
case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac

log() { echo "[megatron-oracle build] $*" >&2; }
die() { echo "[megatron-oracle build] ERROR: $*" >&2; exit 1; }

is_py312() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

find_python312() {
    local c
    if [ -n "${MEGATRON_ORACLE_PYTHON312:-}" ]; then
        is_py312 "$MEGATRON_ORACLE_PYTHON312" || die "MEGATRON_ORACLE_PYTHON312=$MEGATRON_ORACLE_PYTHON312 is not a Python 3.12 with venv"
        echo "$MEGATRON_ORACLE_PYTHON312"; return
    fi
    local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    if command -v pyenv >/dev/null 2>&1; then
        pyenv_root="$(pyenv root 2>/dev/null || echo "$pyenv_root")"
    fi
    for c in $(ls -d "$pyenv_root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV); do
        is_py312 "$c" && { echo "$c"; return; }
    done
    for c in python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12; do
        c="$(command -v "$c" 2>/dev/null || true)"
        # skip pyenv shims that would fail for a version not selected
        is_py312 "$c" && { echo "$c"; return; }
    done
    die "Python 3.12 not found (megatron-core >= 0.17, which ships megatron/training, needs it).
  Looked at \$MEGATRON_ORACLE_PYTHON312, $pyenv_root/versions/3.12*/bin/python3.12 and python3.12 on PATH.
  Install one (e.g. 'pyenv install 3.12') or set MEGATRON_ORACLE_PYTHON312=/path/to/python3.12."
}

[ -f "$req" ] || die "missing $req"
py="$(find_python312)"
pyver="$("$py" -c 'import sys; print(sys.version.split()[0])')"
stamp_value="$( (cat "$req"; echo "python=$pyver") | sha256sum | cut -d' ' -f1)"
stamp="$venv/.megatron-oracle-stamp"

smoke() {
    "$venv/bin/python" -W ignore -c 'import megatron.training.arguments, megatron.core.parallel_state' >/dev/null 2>&1
}

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_value" ] && smoke; then
    log "up to date: $venv"
    exit 0
fi

start=$SECONDS
log "building $venv with $py ($pyver)"
rm -rf "$venv"
"$py" -m venv "$venv"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$repo/.oracles/pip-cache}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$venv/bin/python" -m pip install --no-input --only-binary=:all: -r "$req" >&2 \
    || die "pip install -r $req failed"
smoke || { "$venv/bin/python" -c 'import megatron.training.arguments' >&2 || true; die "megatron does not import in $venv"; }
echo "$stamp_value" > "$stamp"
log "done in $((SECONDS - start)) s: $venv ($(du -sh "$venv" | cut -f1))"
