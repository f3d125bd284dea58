#!/usr/bin/env bash
# Build the venv of the miles main argument oracle (run-matrix validate --miles-python), which is also
# miles main's SGLang 0.5.16 oracle (tools/oracles/sglang/worker.py --miles-version 31f1ca96).
#
#   tools/oracles/miles/build.sh [VENV_DIR]      # default: <repo>/.oracles/miles
#
# A Python 3.11 venv in which miles main's own parse_args() runs on CPU: exactly the packages of
# requirements.txt beside this script, installed with --no-deps (no resolver, nothing floats),
# radixark's Megatron-LM fork from ../shared/upstream/megatron-lm-2e64d788.tar.gz (beside the
# clone, as CI has it; MILES_ORACLE_MEGATRON_TAR overrides) on the path, and stubs.py for what
# must only import. Idempotent: a venv whose stamp matches is left alone; a stale one is rebuilt.
# About 2.5 GB and 5 minutes on 2 busy cores with a warm pip cache (most of it unpacking torch and triton).
#
# Why torch 2.13.0+cpu and not PyPI's torch: PyPI's Linux wheel is a CUDA build that links
# ~3 GB of nvidia-* wheels; the CPU wheel on this machine's wheel folder (/opt/wheels, pip's
# find-links) is 190 MB. torch is real, not stubbed: Megatron's validate_args calls it
# (dtypes, torch.cuda.get_device_capability, which the worker presents per hardware profile).
#
# Stubs (stubs.py, import-only; every attribute a do-nothing class):
#   torchvision  sglang and transformers import torchvision.io/transforms at import time; PyPI's
#                torchvision needs CUDA libraries and no CPU build matching torch 2.13.0+cpu is
#                reachable. Nothing on the argument path decodes an image.
# Not installed at all (miles logs a warning and goes on): deep_ep, megatron.bridge,
# transformer_engine, flash-attn, sglang-kernel, flashinfer: GPU kernel packages.
#
# Environment: MILES_ORACLE_BASE_PYTHON (default python3.11); PIP_CACHE_DIR defaults to
# <repo>/.oracles/cache/pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${1:-$repo/.oracles/miles}"
requirements="$here/requirements.txt"
megatron_tar="${MILES_ORACLE_MEGATRON_TAR:-$repo/../shared/upstream/megatron-lm-2e64d788.tar.gz}"
base_python="${MILES_ORACLE_BASE_PYTHON:-python3.11}"
stamp_file=".miles-oracle-stamp"

say() { printf '[miles-oracle build] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

command -v "$base_python" >/dev/null 2>&1 || die "$base_python not found (set MILES_ORACLE_BASE_PYTHON)"
base_version="$("$base_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
    || die "cannot run $base_python (set MILES_ORACLE_BASE_PYTHON to a Python 3.11)"
[[ "$base_version" == "3.11" ]] || die "$base_python is Python $base_version; the oracle needs 3.11"
[[ -f "$requirements" ]] || die "missing $requirements"
[[ -f "$megatron_tar" ]] || die "missing $megatron_tar (radixark's Megatron-LM; set MILES_ORACLE_MEGATRON_TAR)"

mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9 || die "cannot lock $venv.lock"
fi

want_stamp="$(cat "$requirements" "$here/stubs.py" "$megatron_tar" <("$base_python" -VV) | sha256sum | cut -d' ' -f1)"
if [[ -f "$venv/$stamp_file" && "$(cat "$venv/$stamp_file")" == "$want_stamp" ]]; then
    say "up to date: $venv (stamp ${want_stamp:0:12})"
    exit 0
fi
if [[ -e "$venv" ]]; then
    [[ -f "$venv/pyvenv.cfg" ]] || die "$venv exists and is not a venv; refusing to replace it"
    say "stale or incomplete venv at $venv: removing it"
    rm -rf -- "$venv"
fi

started=$SECONDS
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$repo/.oracles/cache/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
say "creating venv $venv (Python $base_version)"
"$base_python" -m venv "$venv"
say "installing $(grep -cE '^[A-Za-z0-9]' "$requirements") pinned packages with --no-deps"
"$venv/bin/python" -m pip install --no-deps --only-binary=:all: --progress-bar off -q -r "$requirements"

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
say "Megatron-LM from $megatron_tar"
mkdir -p "$venv/megatron-lm"
tar -xzf "$megatron_tar" -C "$venv/megatron-lm" --strip-components=1
echo "$venv/megatron-lm" >"$site/miles_oracle_megatron.pth"
cp "$here/stubs.py" "$site/miles_oracle_stubs.py"
echo "import miles_oracle_stubs" >"$site/miles_oracle_stubs.pth"
chmod -R a+rX "$venv"  # the sandbox runs the oracle as the unprivileged user nobody

say "smoke test: import Megatron's and SGLang's argument modules"
"$venv/bin/python" -W ignore -c 'import megatron.training.arguments, sglang.srt.server_args, sglang_router.launch_router' \
    || die "the oracle's packages do not import"

# The same venv is miles main's SGLang oracle (tools/oracles/sglang/worker.py --miles-version 31f1ca96).
say "smoke test: the SGLang 0.5.16 worker, as miles main builds an engine (DeepEP: ep = tp)"
reply="$(echo '{"id": "smoke", "engine": {"gpus_per_engine": 4, "gpus_per_node": 8, "flags": ["--sglang-moe-a2a-backend", "deepep", "--sglang-ep-size", "8"]}}' \
    | "$venv/bin/python" "$repo/tools/oracles/sglang/worker.py" --platform h200 --miles-version 31f1ca96 2>"$venv/smoke-sglang.log")" \
    || { cat "$venv/smoke-sglang.log" >&2; die "the SGLang worker failed"; }
[[ "$reply" == *'"accepted": true'* && "$reply" == *'"ep_size": 4'* ]] \
    || { cat "$venv/smoke-sglang.log" >&2; die "unexpected smoke reply: $reply"; }
rm -f "$venv/smoke-sglang.log"

echo "$want_stamp" >"$venv/$stamp_file"
say "built $venv in $((SECONDS - started)) s, $(du -sh "$venv" | cut -f1)"
