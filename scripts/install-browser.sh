#!/usr/bin/env bash
# Kept for old instructions: scripts/install-deps.sh installs everything the tests need outside npm
# (Chromium, the Vulkan loader and PyTorch).
exec bash "$(dirname "$0")/install-deps.sh" "$@"
