#!/usr/bin/env bash
# The nudge A/B on a lent GPU machine (bench/GPU.md, "Waiting for the GPU"): one build per nudge policy, measured
# one after the other in the same call, on the machine scripts/gpu-device.sh unpacked.
#
# Here:   bash scripts/gpu-nudge-ab.sh build NAME=SETTING ...   (SETTING: VITE_PIPELAB_GPU_NUDGE's value, e.g. 0.25,2,2,0)
#         → .gpu-variants/NAME.tar.xz, each a build of the app (no source maps) with that policy
# There:  bash scripts/gpu-nudge-ab.sh bench SUITES [bench options]   (after gpu-device.sh unpack or run)
#         → $OUT/ab/NAME/{results.json,RESULTS.md}; then prints each build's GPT 1F1B p = 4 makespans and
#           writes the fastest build's name to $OUT/ab/fastest (by the mean over the gpt-schedules rows)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
shift || true
case "$mode" in
  build)
    rm -rf .gpu-variants && mkdir -p .gpu-variants
    for v in "$@"; do
      name="${v%%=*}" setting="${v#*=}"
      work=$(mktemp -d)
      VITE_PIPELAB_GPU_NUDGE="$setting" npx vite build --logLevel warn --outDir "$work/dist" --emptyOutDir --sourcemap false
      echo "$setting" > "$work/dist/nudge-setting.txt"
      (cd "$work" && tar -cJf "$OLDPWD/.gpu-variants/$name.tar.xz" dist)
      rm -rf "$work"
      echo "gpu-nudge-ab: built $name (VITE_PIPELAB_GPU_NUDGE=$setting)"
    done ;;
  bench)
    suites="${1:?suites}"
    shift
    g="${PIPELAB_GPU_ROOT:-/opt/pipelab-gpu}"
    # shellcheck source=/dev/null
    . "$g/env.sh"
    out="${OUT:-$PWD/gpu-out}/ab"
    mkdir -p "$out"
    for f in .gpu-variants/*.tar.xz; do
      name=$(basename "$f" .tar.xz)
      rm -rf "$g/variants/$name" && mkdir -p "$g/variants/$name"
      python3 -c 'import lzma,sys,tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' "$f" "$g/variants/$name"
      echo "gpu-nudge-ab: $name (VITE_PIPELAB_GPU_NUDGE=$(cat "$g/variants/$name/dist/nudge-setting.txt"))"
      PIPELAB_DIST="$g/variants/$name/dist" PIPELAB_PROBE_JSON="$out/$name-probe.json" PIPELAB_GPU_RECIPES="${PIPELAB_GPU_RECIPES:-vulkan}" \
        bash scripts/gpu-browser-bench.sh --no-build --out "$out/$name" --suite "$suites" "$@" 2>&1 | grep -E 'makespan|step [0-9.]+ ms|makemore:|error|failed' || true
    done
    python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
best = None
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name, 'results.json')
    if not os.path.isfile(p): continue
    rows = json.load(open(p)).get('results', {}).get('gpt-schedules', {}).get('rows', [])
    ms = [r['makespanMeasuredMs'] for r in rows]
    if not ms: continue
    mean = sum(ms) / len(ms)
    print(f"gpu-nudge-ab: {name}: gpt-schedules makespans {', '.join(f'{m:.1f}' for m in ms)} ms, mean {mean:.1f}")
    if best is None or mean < best[1]: best = (name, mean)
if best:
    open(os.path.join(out, 'fastest'), 'w').write(best[0] + '\n')
    print(f"gpu-nudge-ab: fastest {best[0]}")
PY
    ;;
  *) echo "usage: gpu-nudge-ab.sh build NAME=SETTING ... | bench SUITES [bench options]" >&2; exit 2 ;;
esac
