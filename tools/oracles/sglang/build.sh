#!/usr/bin/env bash
# Build the venv of the SGLang 0.5.10 argument oracle (tools/oracles/sglang/worker.py).
#
#   tools/oracles/sglang/build.sh [VENV_DIR]      # default: <repo>/.oracles/sglang
#
# A Python 3.11 venv with sglang==0.5.10 and exactly the packages in requirements.txt beside
# this script, all installed with --no-deps (no resolver, nothing floats). Idempotent: a
# venv whose stamp matches the hash of requirements.txt is left alone. A stale or half-built
# venv is rebuilt from scratch. Ends with a smoke test of the worker on one CUDA and one ROCm
# platform. About 6 GB, most of it the CUDA runtime wheels that torch's Linux build links.
#
# Environment: SGLANG_ORACLE_BASE_PYTHON (default python3.11) is the interpreter the venv is
# made from; PIP_CACHE_DIR defaults to <repo>/.oracles/cache/pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${1:-$repo/.oracles/sglang}"
requirements="$here/requirements.txt"
base_python="${SGLANG_ORACLE_BASE_PYTHON:-python3.11}"
stamp_file=".sglang-oracle-stamp"

say() { printf '[sglang-oracle build] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

command -v "$base_python" >/dev/null 2>&1 || die "$base_python not found (set SGLANG_ORACLE_BASE_PYTHON)"
base_version="$("$base_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
    || die "cannot run $base_python (set SGLANG_ORACLE_BASE_PYTHON to a Python 3.11)"
[[ "$base_version" == "3.11" ]] || die "$base_python is Python $base_version; the oracle needs 3.11"
[[ -f "$requirements" ]] || die "missing $requirements"

# One build of a given venv at a time (parallel CI jobs, two shells).
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9 || die "cannot lock $venv.lock"
fi

# The stamp: what the venv was built from. Any change to the pins or the base Python rebuilds.
want_stamp="$(cat "$requirements" <("$base_python" -VV) | sha256sum | cut -d' ' -f1)"
if [[ -f "$venv/$stamp_file" && "$(cat "$venv/$stamp_file")" == "$want_stamp" ]]; then
    say "up to date: $venv (stamp ${want_stamp:0:12})"
    exit 0
fi

if [[ -e "$venv" ]]; then
    # Remove only what looks like a venv (this script's, stale or half-built), never an
    # arbitrary directory that happens to be at that path.
    [[ -f "$venv/pyvenv.cfg" ]] || die "$venv exists and is not a venv; refusing to replace it"
    say "stale or incomplete venv at $venv: removing it"
    rm -rf -- "$venv"
fi

started=$SECONDS
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$repo/.oracles/cache/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
say "creating venv $venv from $("$base_python" -c 'import sys; print(sys.executable)') (Python $base_version)"
"$base_python" -m venv "$venv"

say "installing $(grep -cE '^[A-Za-z0-9]' "$requirements") pinned packages with --no-deps (about 3 GB of CUDA runtime wheels; pip cache $PIP_CACHE_DIR)"
"$venv/bin/python" -m pip install --no-deps --only-binary=:all: --progress-bar off \
    -r "$requirements"

say "smoke test: import sglang.srt.server_args"
"$venv/bin/python" -c 'import sglang.srt.server_args' 2>/dev/null \
    || { "$venv/bin/python" -c 'import sglang.srt.server_args'; die "sglang.srt.server_args does not import"; }

for platform in h200 mi355x; do
    say "smoke test: worker.py --platform $platform"
    reply="$(echo '{"id": "smoke", "args": {"tp_size": 2, "dp_size": 2, "ep_size": 2, "enable_dp_attention": true}}' \
        | "$venv/bin/python" "$here/worker.py" --platform "$platform" 2>"$venv/smoke-$platform.log")" \
        || { cat "$venv/smoke-$platform.log" >&2; die "the worker failed on $platform"; }
    [[ "$reply" == *'"accepted": true'* ]] \
        || { cat "$venv/smoke-$platform.log" >&2; die "unexpected smoke reply on $platform: $reply"; }
    rm -f "$venv/smoke-$platform.log"
done

echo "$want_stamp" >"$venv/$stamp_file"
say "built $venv in $((SECONDS - started)) s, $(du -sh "$venv" | cut -f1)"
