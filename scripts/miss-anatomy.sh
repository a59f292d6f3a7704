#!/usr/bin/env bash
# Builds examples/miss_anatomy (--features cuda) into .device/anatomy/ for
# scripts/miss-anatomy-device.sh, and with BASE=<commit> the same program at that commit
# too (built in a worktree under /tmp, the example file copied in), as miss_anatomy_base.
#
#   BASE=0e79848 bash scripts/miss-anatomy.sh
#   # on the device, carrying .device/anatomy:
#   OUT=$OUT bash scripts/miss-anatomy-device.sh .device/anatomy
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.device/anatomy
rm -rf "$dest" && mkdir -p "$dest"
cargo build --release --features cuda --example miss_anatomy
cp target/release/examples/miss_anatomy "$dest/" && strip --strip-debug "$dest/miss_anatomy"
if [ -n "${BASE:-}" ]; then
  wt=/tmp/hfp-anatomy-base-$BASE
  [ -d "$wt" ] || git worktree add -f "$wt" "$BASE" >/dev/null
  cp examples/miss_anatomy.rs "$wt/examples/"
  (cd "$wt" && CARGO_TARGET_DIR=/tmp/hfp-anatomy-base-target cargo build --release --features cuda --example miss_anatomy)
  cp /tmp/hfp-anatomy-base-target/release/examples/miss_anatomy "$dest/miss_anatomy_base"
  strip --strip-debug "$dest/miss_anatomy_base"
fi
cp scripts/miss-anatomy-device.sh "$dest/"
ls -la "$dest"
