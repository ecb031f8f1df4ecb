#!/usr/bin/env bash
# Packs what a lent GPU machine with no Node, no npm, no Chromium and no network needs to run
# scripts/gpu-browser-bench.sh (bench/GPU.md, "The recipe that worked"), from this machine
# (Debian, with the chromium package installed and `npm ci` done), into parts that each fit one call
# of the lent machine (its working tree travels with at most 64 MiB):
#
#   scripts/gpu-carry.sh [OUT_DIR] [PART_MiB]       default .gpu-carry, 56
#
# OUT_DIR/1/part.aa, OUT_DIR/2/part.ab, ...: one tar, split; each call carries one folder
# (`carry: [".gpu-carry/K"]`) and runs `bash scripts/gpu-device.sh stash` (the last one `run`),
# which gathers the parts outside the repository, where they stay while the machine stays warm.
# The tar holds: Chromium (its binary xz-compressed, its resources, and the shared libraries it links
# beyond glibc and libstdc++, as this machine has them, with NSS's modules, and a font), Debian's Vulkan loader and
# glvnd (EGL/GL) packages, the Node binary, node_modules/playwright{,-core}, the app built without
# source maps and the bench's one-file drivers (scripts/bundle-browser-bench.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.gpu-carry}"
part_mib="${2:-56}"
chrome_dir=/usr/lib/chromium
[ -x "$chrome_dir/chromium" ] || { echo "gpu-carry: $chrome_dir/chromium not found: apt-get install chromium" >&2; exit 1; }
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || { echo "gpu-carry: DejaVu fonts not found: apt-get install fonts-dejavu-core" >&2; exit 1; }
[ -d node_modules/playwright-core ] || { echo "gpu-carry: node_modules/playwright-core not found: npm ci" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
p="$work/payload"
mkdir -p "$p/gl"
say() { echo "gpu-carry: $*"; }

# Chromium: the binary (the bulk, xz with the x86 filter; cached beside OUT_DIR by the binary's checksum).
sum=$(sha256sum "$chrome_dir/chromium" | cut -c1-16)
cache="${out%/}.chromium-$sum.xz"
if [ ! -f "$cache" ]; then
  say "compressing $chrome_dir/chromium (a few minutes) ..."
  xz -9e --x86 --lzma2=preset=9e,dict=192MiB -T1 -c "$chrome_dir/chromium" > "$cache.tmp"
  mv "$cache.tmp" "$cache"
fi
cp "$cache" "$p/chromium.xz"
# ... its resources (no validation layer, no mock ICD, English only) ...
(cd "$chrome_dir" && tar -cJf "$p/chrome-rest.tar.xz" chrome_100_percent.pak chrome_200_percent.pak chrome_crashpad_handler icudtl.dat \
  libEGL.so libGLESv2.so libvk_swiftshader.so libvulkan.so.1 vk_swiftshader_icd.json resources.pak snapshot_blob.bin v8_context_snapshot.bin locales/en-US.pak)
# ... and the libraries it links, but glibc's and the C++ runtime (the lent machine's own are newer).
libs="$work/libs"
mkdir -p "$libs/nss"
ldd "$chrome_dir/chromium" | awk '{print $3}' | grep '^/' | sort -u \
  | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' \
  | while read -r f; do cp -L "$f" "$libs/"; done
cp -L /usr/lib/x86_64-linux-gnu/nss/*.so "$libs/nss/" 2>/dev/null || true
(cd "$libs" && tar -cJf "$p/libs.tar.xz" .)
# A font and a fontconfig file naming it: Chromium's browser process aborts (Skia's FontConfigInterface,
# "Not implemented") when a page draws text on a machine with no fontconfig configuration.
mkdir -p "$work/fonts/fonts"
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf "$work/fonts/fonts/"
cat > "$work/fonts/fonts.conf" <<'CONF'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir prefix="relative">fonts</dir>
  <cachedir>/tmp/pipelab-fontconfig-cache</cachedir>
</fontconfig>
CONF
(cd "$work" && tar -cJf "$p/fonts.tar.xz" fonts)
# Vulkan loader and glvnd, as Debian packages (unpacked into / there, as root).
(cd "$p/gl" && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1) || say "apt-get download of the GL packages failed: the lent machine must have them"
# Node, Playwright, the app and the drivers.
node_bin=$(readlink -f "$(command -v node)")
node_cache="${out%/}.node-$(sha256sum "$node_bin" | cut -c1-16).xz"
if [ ! -f "$node_cache" ]; then
  xz -9 -T2 -c "$node_bin" > "$node_cache.tmp"
  mv "$node_cache.tmp" "$node_cache"
fi
cp "$node_cache" "$p/node.xz"
tar -cJf "$p/node_modules.tar.xz" node_modules/playwright node_modules/playwright-core
say "building the app (no source maps) ..."
npx vite build --logLevel warn --outDir "$work/dist" --emptyOutDir --sourcemap false
(cd "$work" && tar -cJf "$p/dist.tar.xz" dist)
node scripts/bundle-browser-bench.mjs >/dev/null
cp -r .bench-browser "$p/bench-browser"
(cd "$p" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)

rm -rf "$out"
mkdir -p "$out"
(cd "$work" && tar -cf payload.tar payload && split -b "${part_mib}m" payload.tar part.)
k=0
for f in "$work"/part.*; do
  k=$((k + 1))
  mkdir -p "$out/$k"
  mv "$f" "$out/$k/"
done
du -b "$p"/* | sed 's/^/gpu-carry:   /'
say "$(du -sb "$work/payload.tar" | cut -f1) bytes in $k parts under $out/ (carry one per call: .gpu-carry/1 ... .gpu-carry/$k)"
