#!/bin/sh
# Builds hip-shim and exposes it as libhipfft.so(.0) and libamdhip64.so(.6) in DIR (default:
# target/hip-shim-lib), as symlinks to the one built file, so that the dynamic loader maps a
# single instance under both names (copies would be two instances with two backends).
#
#   hip-shim/build-names.sh [DIR] [extra cargo args, e.g. --features cuda]
#   HIPFFT_POOL_HIPFFT_LIB=DIR/libhipfft.so HIPFFT_POOL_HIP_LIB=DIR/libamdhip64.so <program>
#   or: LD_LIBRARY_PATH=DIR <program that dlopens libhipfft.so>
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$root/target/hip-shim-lib"}
[ $# -gt 0 ] && shift
cargo build --release -p hip-shim --manifest-path "$root/Cargo.toml" "$@"
target=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
so="$target/release/libhip_shim.so"
mkdir -p "$dir"
for name in libhipfft.so libhipfft.so.0 libamdhip64.so libamdhip64.so.6; do
    ln -sf "$so" "$dir/$name"
done
echo "$dir"
