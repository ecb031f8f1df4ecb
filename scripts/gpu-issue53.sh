#!/usr/bin/env bash
# Issue 53's GPU figures in one call on a lent machine (bench/GPU.md), after the parts of scripts/gpu-carry.sh were
# stashed (gpu-device.sh stash) and with .gpu-variants/ built by scripts/gpu-nudge-ab.sh build:
#  1. unpack, probe, and the GPT pipeline grid on the build of the stop (its default nudge);
#  2. the nudge A/B: the same grid on each variant build;
#  3. makemore's preset on the fastest build of 2 (PIPELAB_MAKEMORE_LIMIT_S, default 150 s);
#  4. the kernels (--big: with 1024³ … 4096³) and the one-device GPT step against TF.js on the build of the stop;
#  5. the mesh grid (dp-only rows: the nudge's cost there) on each variant, as time allows.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/gpu-out}"
export PIPELAB_GPU_REQUIRED=1 PIPELAB_GPU_RECIPES="${PIPELAB_GPU_RECIPES:-vulkan}"
g="${PIPELAB_GPU_ROOT:-/opt/pipelab-gpu}"
step() { echo "gpu-issue53: [$(date +%T)] $*"; }
step "1. the build of the stop"
OUT="$out" bash scripts/gpu-device.sh run --quick --suite gpt-schedules 2>&1 | grep -E 'makespan|hardware|adapter|failed|error' | head -20
step "2. the nudge A/B on the GPT grid"
OUT="$out" bash scripts/gpu-nudge-ab.sh bench gpt-schedules --quick
best=$(cat "$out/ab/fastest" 2>/dev/null || echo '')
dist="$g/dist"
if [ -n "$best" ] && [ -d "$g/variants/$best/dist" ]; then dist="$g/variants/$best/dist"; fi
step "3. makemore on $dist ($(cat "$dist/nudge-setting.txt" 2>/dev/null || echo 'the default nudge'))"
# shellcheck source=/dev/null
. "$g/env.sh"
PIPELAB_DIST="$dist" PIPELAB_MAKEMORE_LIMIT_S="${PIPELAB_MAKEMORE_LIMIT_S:-150}" bash scripts/gpu-browser-bench.sh --no-build --out "$out/makemore" --suite makemore 2>&1 | grep -E 'makemore:|failed|error'
step "4. kernels and the GPT step on the build of the stop"
PIPELAB_DIST="$g/dist" bash scripts/gpu-browser-bench.sh --no-build --out "$out/kernels" --suite kernels,gpt 2>&1 | grep -E 'geometric|ours / TF|gpt batch|autotune|failed|error'
step "5. the mesh grid per build"
PIPELAB_DIST="$g/dist" bash scripts/gpu-browser-bench.sh --no-build --out "$out/mesh" --quick --suite mesh 2>&1 | grep -E 'makespan|failed|error'
OUT="$out" bash scripts/gpu-nudge-ab.sh bench mesh --quick
# A lent machine sends back a limited number of files from $OUT: one archive of the results, the logs beside it.
(cd "$out" && tar -czf results.tgz ab makemore kernels mesh bench 2>/dev/null && rm -rf ab makemore kernels mesh bench)
step "done: $out/results.tgz"
