#!/usr/bin/env bash
# Chrome on a real GPU: the recipe (bench/GPU.md, "The recipe that worked").
#
#   scripts/gpu-browser-bench.sh [--probe-only] [--no-build] [npm run bench options...]
#
# On a Linux machine with an NVIDIA GPU:
#  1. unpacks the Vulkan loader and GL/EGL (glvnd) user-space libraries carried in .gl/*.deb (as root;
#     see bench/GPU.md for how to fetch them), and points the Vulkan loader and glvnd's EGL at the
#     driver's ICD files where the driver put them;
#  2. starts Xvfb when there is no DISPLAY and Xvfb is installed (for the headed 'x11' recipe);
#  3. builds the app, then tries the Chromium GPU recipes of e2e/chromium.ts in turn
#     (src/bench/driver/browser-probe.ts): each one's WebGPU adapter is probed in the bench page AND in a
#     dedicated worker (vendor, architecture, isFallbackAdapter, subgroups, per-action synchronisation,
#     upload/readback per crossing, timestamp-query resolution); the first that is hardware in both wins;
#  4. runs `npm run bench -- --big` with PIPELAB_REAL_GPU=1 and that recipe, into bench/chrome-<recipe>/.
# When no recipe gives a hardware adapter it says "no hardware WebGPU adapter: falling back to SwiftShader"
# and runs the bench on SwiftShader (without --big) into bench/chrome-swiftshader/.
#
# Environment: PIPELAB_GPU_RECIPES (comma-separated, default: every recipe the display allows),
# PIPELAB_GPU_REQUIRED=1 (stop after the probe when it falls back to SwiftShader),
# PIPELAB_DIST (build folder, default dist), PIPELAB_PROBE_JSON (the probe's JSON, default $PIPELAB_DIST/gpu-probe.json), PIPELAB_CHROMIUM / PIPELAB_CHROMIUM_ARGS (e2e/chromium.ts).
# --probe-only stops after step 3 (the probe's JSON is in $PIPELAB_DIST/gpu-probe.json); --no-build serves
# the build already in $PIPELAB_DIST.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "gpu-bench: $*"; }

probe_only=0
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --probe-only) probe_only=1; shift ;;
    --no-build) build=0; shift ;;
    *) break ;;
  esac
done

# 1. User-space libraries and the driver's ICDs.
if compgen -G '.gl/*.deb' >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    say "unpacked $(ls .gl/*.deb | wc -l) packages from .gl/ into /"
  else
    say ".gl/*.deb found but not root: not unpacked"
  fi
fi
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  for d in /usr/local/nvidia/share /usr/share /etc; do
    if [ -f "$d/vulkan/icd.d/nvidia_icd.json" ]; then
      export VK_DRIVER_FILES="$d/vulkan/icd.d/nvidia_icd.json" VK_ICD_FILENAMES="$d/vulkan/icd.d/nvidia_icd.json"
      break
    fi
  done
fi
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ]; then
  for d in /usr/local/nvidia/share /usr/share /etc; do
    if [ -f "$d/glvnd/egl_vendor.d/10_nvidia.json" ]; then
      export __EGL_VENDOR_LIBRARY_FILENAMES="$d/glvnd/egl_vendor.d/10_nvidia.json"
      break
    fi
  done
fi
say "Vulkan ICD: ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-none set (the loader searches its default places)}}"
say "EGL vendor: ${__EGL_VENDOR_LIBRARY_FILENAMES:-none set}"
if command -v nvidia-smi >/dev/null; then
  say "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo 'nvidia-smi failed')"
else
  say "GPU: no nvidia-smi on this machine"
fi
if ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'; then say "Vulkan loader: found"; else say "Vulkan loader: NOT found (carry libvulkan1 in .gl/, see bench/GPU.md)"; fi

# 2. An X display for the headed recipe.
xvfb_pid=
cleanup() { if [ -n "$xvfb_pid" ]; then kill "$xvfb_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null; then
  Xvfb :97 -screen 0 1280x1024x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb_pid=$!
  sleep 1
  if kill -0 "$xvfb_pid" 2>/dev/null; then
    export DISPLAY=:97
    if command -v nvidia-smi >/dev/null; then export __GLX_VENDOR_LIBRARY_NAME=nvidia; fi
    say "started Xvfb on $DISPLAY"
  else
    say "Xvfb did not start: the headed recipe is skipped"
    xvfb_pid=
  fi
fi

# 3. Build and probe. The drivers run from the sources (tsx, after npm ci) or, where there is no npm (a lent
#    machine: scripts/gpu-carry.sh and scripts/gpu-device.sh), from their bundles in .bench-browser/.
dist="${PIPELAB_DIST:-dist}"
export PIPELAB_DIST="$dist"
if [ -e node_modules/.bin/tsx ]; then
  probe_cmd=(node --import tsx src/bench/driver/browser-probe.ts)
  bench_cmd=(npm run bench --)
elif [ -f .bench-browser/run.mjs ]; then
  export PIPELAB_ROOT="$PWD"
  probe_cmd=(node .bench-browser/browser-probe.mjs)
  bench_cmd=(node .bench-browser/run.mjs)
  say "no tsx here: the bundled drivers in .bench-browser/"
else
  say "neither node_modules/.bin/tsx (npm ci) nor .bench-browser/run.mjs (node scripts/bundle-browser-bench.mjs)"
  exit 1
fi
if [ "$build" = 1 ]; then
  say "building $dist ..."
  npx vite build --logLevel warn --outDir "$dist" --emptyOutDir
fi
probe_args=(--json "${PIPELAB_PROBE_JSON:-$dist/gpu-probe.json}")
if [ -n "${PIPELAB_GPU_RECIPES:-}" ]; then probe_args+=(--recipes "$PIPELAB_GPU_RECIPES"); fi
probe_out=$(mktemp)
set +e
"${probe_cmd[@]}" "${probe_args[@]}" | tee "$probe_out"
probe_rc=${PIPESTATUS[0]}
set -e
recipe=$(sed -n 's/^recipe=//p' "$probe_out" | tail -1)
rm -f "$probe_out"
if [ "$probe_rc" != 0 ] || [ -z "$recipe" ]; then
  say "the adapter probe failed (status $probe_rc): no WebGPU in this Chromium"
  exit 1
fi
say "chosen: $recipe"
if [ "$probe_only" = 1 ]; then exit 0; fi
if [ "$recipe" = swiftshader ] && [ "${PIPELAB_GPU_REQUIRED:-}" = 1 ]; then
  say "PIPELAB_GPU_REQUIRED=1 and no hardware adapter: no bench (the probe's JSON says why)"
  exit 3
fi

# 4. The bench (the options given to this script come last and win).
if [ "$recipe" = swiftshader ]; then
  "${bench_cmd[@]}" --no-build --out "bench/chrome-swiftshader" "$@"
else
  PIPELAB_REAL_GPU=1 PIPELAB_GPU_RECIPE="$recipe" "${bench_cmd[@]}" --no-build --big --out "bench/chrome-$recipe" "$@"
fi
