#!/usr/bin/env bash
# On a lent GPU machine (no Node, no npm, no Chromium, no network; run as root): gathers the parts that
# scripts/gpu-carry.sh packed and each call carried in .gpu-carry/K, then unpacks them and runs
# scripts/gpu-browser-bench.sh on them. bench/GPU.md has the recipe.
#
#   bash scripts/gpu-device.sh stash                 keep this call's part (outside the repository)
#   bash scripts/gpu-device.sh unpack                keep it, unpack all; writes $PIPELAB_GPU_ROOT/env.sh
#   bash scripts/gpu-device.sh bench [bench options] probe and bench what was unpacked
#   bash scripts/gpu-device.sh run [bench options]   unpack, then bench
#
# Environment: OUT (a folder for the results, logs and probe; default ./gpu-out), PIPELAB_STASH
# (default /root/pipelab-gpu-stash), PIPELAB_GPU_ROOT (where it unpacks; default /opt/pipelab-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
shift || true
stash="${PIPELAB_STASH:-/root/pipelab-gpu-stash}"
g="${PIPELAB_GPU_ROOT:-/opt/pipelab-gpu}"
out="${OUT:-$PWD/gpu-out}"
say() { echo "gpu-device: $*"; }

keep_parts() {
  mkdir -p "$stash"
  for f in .gpu-carry/*/part.*; do
    [ -e "$f" ] || continue
    cp "$f" "$stash/"
    say "kept $(basename "$f") ($(stat -c %s "$f") bytes)"
  done
  say "parts kept so far: $(cd "$stash" && ls part.* 2>/dev/null | tr '\n' ' ')"
}

# xz may be missing: Python's lzma reads it too.
unxz_to() { if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi; }

unpack() {
  rm -rf "$g"
  mkdir -p "$g"
  cat "$stash"/part.* | tar -x -C "$g"
  local p="$g/payload"
  (cd "$p" && sha256sum -c --quiet SHA256SUMS) || { say "a part is missing or damaged: $(cd "$stash" && ls)"; exit 1; }
  mkdir -p "$g/chromium" "$g/lib" "$g/bin"
  unxz_to "$p/chromium.xz" > "$g/chromium/chromium"
  chmod +x "$g/chromium/chromium"
  unxz_to "$p/chrome-rest.tar.xz" | tar -x -C "$g/chromium"
  unxz_to "$p/libs.tar.xz" | tar -x -C "$g/lib"
  unxz_to "$p/fonts.tar.xz" | tar -x -C "$g"
  unxz_to "$p/node.xz" > "$g/bin/node"
  chmod +x "$g/bin/node"
  unxz_to "$p/node_modules.tar.xz" | tar -x -C .
  unxz_to "$p/dist.tar.xz" | tar -x -C "$g"
  rm -rf .bench-browser && cp -r "$p/bench-browser" .bench-browser
  mkdir -p .gl && cp "$p"/gl/*.deb .gl/ 2>/dev/null || true
  # Chromium sees the carried libraries and font; nothing else does. Its stderr (the GPU process's errors) is kept.
  cat > "$g/chromium/chromium-carried" <<WRAP
#!/bin/sh
export LD_LIBRARY_PATH="$g/lib:$g/lib/nss\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" FONTCONFIG_FILE="$g/fonts/fonts.conf"
exec "$g/chromium/chromium" "\$@" 2>>"$out/chromium-stderr.log"
WRAP
  chmod +x "$g/chromium/chromium-carried"
  cat > "$g/env.sh" <<ENV
export PATH="$g/bin:\$PATH" PIPELAB_CHROMIUM="$g/chromium/chromium-carried" PIPELAB_DIST="$g/dist" PIPELAB_ROOT="$PWD" PIPELAB_PROBE_JSON="$out/gpu-probe.json"
ENV
}

describe_machine() {
  {
    echo "## machine"; uname -a; nvidia-smi 2>&1 | head -15 || true
    echo "## node $(node --version)"; "$PIPELAB_CHROMIUM" --version 2>&1 || true
    echo "## libraries Chromium would not find"; LD_LIBRARY_PATH="$g/lib:$g/lib/nss" ldd "$g/chromium/chromium" | grep 'not found' || echo none
    echo "## ICDs"; ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/glvnd/egl_vendor.d 2>&1 || true
  } > "$out/machine.txt" 2>&1
  cat "$out/machine.txt"
}

mkdir -p "$out"
keep_parts
case "$mode" in
  stash) exit 0 ;;
  unpack | run) unpack ;;
  bench) ;;
  *) echo "usage: gpu-device.sh stash | unpack | bench [bench options] | run [bench options]" >&2; exit 2 ;;
esac
# shellcheck source=/dev/null
. "$g/env.sh"
describe_machine
if [ "$mode" = unpack ]; then exit 0; fi
set -o pipefail
bash scripts/gpu-browser-bench.sh --no-build --out "$out/bench" "$@" 2>&1 | tee "$out/log.txt"
