#!/usr/bin/env bash
# Lay out the source trees a pinned miles version's flag catalog is read from, then sync it.
#
#   tools/flags/sources.sh MILES_CHECKOUT MEGATRON_GIT_DIR OUT_DIR SGLANG_VERSION [ROUTER_VERSION]
#
# MEGATRON_GIT_DIR is a clone of radixark/Megatron-LM (the fork miles' docker/Dockerfile clones,
# branch miles-main); the tree used is that branch's last commit before the miles commit's date,
# exported with `git archive` (nothing of it is run). SGLang and sglang-router come from PyPI wheels
# (`pip download --no-deps`), unpacked; only their argument modules are read. Then
# `run-matrix flags sync` writes miles/flags/<date>-<commit>.json.
#
# The pins (read from each miles version's docker/Dockerfile):
#   dc8b499b (PR #1124): SGLANG_IMAGE_TAG=v0.5.10, MEGATRON_BRANCH=miles-main -> SGLANG_VERSION 0.5.10
#   31f1ca96 (main):     SGLANG_IMAGE_TAG=v0.5.16, MEGATRON_BRANCH=miles-main -> SGLANG_VERSION 0.5.16
set -euo pipefail

miles="$(cd "$1" && pwd)"; megatron_git="$2"; out="$3"; sglang_version="$4"; router_version="${5:-0.3.2}"
mkdir -p "$out"
date="$(git -C "$miles" log -1 --format=%cI)"
commit="$(git -C "$miles" log -1 --format=%h)"
megatron_commit="$(git -C "$megatron_git" rev-list -1 --before="$date" miles-main)"
megatron_short="$(git -C "$megatron_git" log -1 --format='%h (%cs)' "$megatron_commit")"

rm -rf "$out/megatron" "$out/sglang" "$out/router" && mkdir -p "$out/megatron" "$out/sglang" "$out/router" "$out/wheels"
git -C "$megatron_git" archive "$megatron_commit" megatron | tar -x -C "$out/megatron"
pip download --no-deps --quiet -d "$out/wheels" "sglang==$sglang_version" "sglang-router==$router_version"
python3 -m zipfile -e "$out/wheels/sglang-$sglang_version-"*.whl "$out/sglang"
python3 -m zipfile -e "$out/wheels/sglang_router-$router_version-"*.whl "$out/router"

run-matrix flags sync --miles-root "$miles" --megatron "$out/megatron" --sglang "$out/sglang" --router "$out/router" \
    --source "megatron=radixark/Megatron-LM branch miles-main at $megatron_short, its last commit before miles $commit; the container clones that branch" \
    --source "sglang=sglang $sglang_version (PyPI wheel: server_args.py, arg_groups/arg_utils.py); the container: lmsysorg/sglang:v$sglang_version updated to branch sglang-miles" \
    --source "router=sglang-router $router_version (PyPI wheel: router_args.py)"
