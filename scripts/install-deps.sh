#!/usr/bin/env bash
# Installs what the tests need outside npm, when it is missing (Debian/Ubuntu):
# - Chromium (its SwiftShader gives software WebGPU) and the Vulkan loader that
#   Dawn (the `webgpu` npm package) uses to reach SwiftShader in Node tests;
# - PyTorch for Debian's Python (python3-torch: torch with torch.distributed and
#   gloo, and /usr/bin/torchrun), which runs the exported PyTorch program
#   (src/export/torch-export.test.ts, e2e/torch-export.spec.ts).
# Nothing to do for Chromium when PIPELAB_CHROMIUM names a browser, nor for
# PyTorch when PIPELAB_TORCHRUN names a torchrun.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || [ -n "${PIPELAB_CHROMIUM:-}" ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
if [ -z "${PIPELAB_TORCHRUN:-}" ]; then
  { [ -x /usr/bin/torchrun ] && /usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1; } || need+=(python3-torch)
fi
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: please install ${need[*]} with your package manager (or set PIPELAB_CHROMIUM to a Chrome/Chromium executable, PIPELAB_TORCHRUN to a torchrun)" >&2
  exit 1
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${need[@]}"
