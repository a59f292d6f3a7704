#!/usr/bin/env bash
# Where a pool miss's time goes, on the device machine: runs examples/miss_anatomy (staged
# in DIR by `scripts/miss-anatomy.sh`) and, when nsys is there, traces the inline structure
# and the pool's apart (CUDA API and OS runtime summaries).
#
#   bash scripts/miss-anatomy-device.sh DIR        # writes into $OUT (default /tmp/anatomy)
#
# DIR holds miss_anatomy and, optionally, miss_anatomy_base (the same program built at an
# earlier commit, for a before/after in one run).
set -uo pipefail
dir=${1:?usage: miss-anatomy-device.sh DIR}
out=${OUT:-/tmp/anatomy}
reps=${REPS:-60}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{
  date -u +"date: %F %T UTC"
  echo "host: $(uname -srm), $(nproc) cores"
  lscpu 2>/dev/null | grep -E "Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|Hypervisor|Virtualization"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  for c in /sys/devices/system/cpu/cpu[0-9]*; do
    printf '%s siblings %s\n' "${c##*/}" "$(cat "$c/topology/thread_siblings_list" 2>/dev/null)"
  done
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
run() { # name, env..., -- args
  local name=$1; shift
  echo "== $name" | tee -a "$out/summary.txt"
  env "$@" --json "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "rc=$?" >> "$out/$name.txt"
  cat "$out/$name.txt" | tee -a "$out/summary.txt"
}
run anatomy "$dir/miss_anatomy" --reps "$reps"
[ -x "$dir/miss_anatomy_base" ] && run anatomy-base "$dir/miss_anatomy_base" --reps "$reps"
run anatomy-nopoll HIPFFT_POOL_POLL_US=0 "$dir/miss_anatomy" --reps "$reps"
run anatomy-again "$dir/miss_anatomy" --reps "$reps"
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$nsys" ]; then
  for s in inline pool; do
    echo "== nsys $s" | tee -a "$out/summary.txt"
    timeout 150 "$nsys" profile -q -t cuda,osrt -o "$out/nsys-$s" -f true "$dir/miss_anatomy" --only "$s" --reps 20 > "$out/nsys-$s.run.txt" 2>&1
    timeout 120 "$nsys" stats -q -r cuda_api_sum,osrt_sum -f csv "$out/nsys-$s.nsys-rep" > "$out/nsys-$s.stats.csv" 2>&1
    head -40 "$out/nsys-$s.stats.csv" | tee -a "$out/summary.txt"
    rm -f "$out/nsys-$s.nsys-rep" "$out/nsys-$s.sqlite"
  done
else
  echo "no nsys on this machine" | tee -a "$out/summary.txt"
fi
