#!/usr/bin/env bash
# Installs what the tests need outside npm, when it is missing (Debian/Ubuntu):
# Chromium (its SwiftShader gives software WebGPU) and the Vulkan loader that
# Dawn (the `webgpu` npm package) uses to reach SwiftShader in Node tests.
# Nothing to do when PIPELAB_CHROMIUM names a browser and libvulkan is there.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || [ -n "${PIPELAB_CHROMIUM:-}" ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: please install ${need[*]} with your package manager (or set PIPELAB_CHROMIUM to a Chrome/Chromium executable)" >&2
  exit 1
fi
echo "install-browser: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${need[@]}"
