#!/usr/bin/env bash
# Soak the pool on the simulated runtime: many threads, a small ceiling, random faults, for a
# set time, checking the invariants against the sim's ground truth (examples/soak.rs).
#   scripts/soak.sh [--threads N] [--seconds S] [--ceiling C] [--out FILE] [soak args...]
#       builds the example, runs it, prints the date, machine, commit and command with the
#       figures (JSON), and appends them to FILE when given. Exit status 1 on a violation.
#   scripts/soak.sh --stage
#       builds the example and lays it out in .device/soak/ (ignored by git) for the device
#       machine: carry `.device`, then run `bash .device/soak/run.sh [SECONDS]` there
#       (default 300 s, all cores; writes $OUT/soak.json and $OUT/soak.log).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--stage" ]; then
  cargo build --release --example soak
  out=.device/soak
  rm -rf "$out"; mkdir -p "$out"
  cp target/release/examples/soak "$out/soak"
  strip --strip-debug "$out/soak"
  git rev-parse HEAD > "$out/COMMIT"
  cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the device machine: bash .device/soak/run.sh [SECONDS] [THREADS] [CEILING]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seconds="${1:-300}"; threads="${2:-$(nproc)}"; ceiling="${3:-4}"
out="${OUT:-$here}"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "commit: $(cat "$here/COMMIT")"
  echo "command: soak --threads $threads --seconds $seconds --ceiling $ceiling --json"
} | tee "$out/soak.log"
"$here/soak" --threads "$threads" --seconds "$seconds" --ceiling "$ceiling" --json > "$out/soak.json"
rc=$?
cat "$out/soak.json" | tee -a "$out/soak.log"
echo "exit: $rc" | tee -a "$out/soak.log"
exit $rc
RUN
  chmod +x "$out/run.sh"
  du -sh "$out"
  exit 0
fi

threads=8; seconds=60; ceiling=4; out=""; extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads="$2"; shift 2;;
    --seconds) seconds="$2"; shift 2;;
    --ceiling) ceiling="$2"; shift 2;;
    --out) out="$2"; shift 2;;
    *) extra+=("$1"); shift;;
  esac
done
cargo build --release --example soak 2>&1 | tail -1
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src examples || echo '+dirty')"
cmd="target/release/examples/soak --threads $threads --seconds $seconds --ceiling $ceiling ${extra[*]:-} --json"
header="date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
commit: $commit
command: $cmd"
echo "$header"
set +e
result="$($cmd)"
rc=$?
set -e
echo "$result"
echo "exit: $rc"
if [ -n "$out" ]; then
  { echo "$header"; echo "$result"; echo "exit: $rc"; echo; } >> "$out"
fi
exit $rc
