#!/usr/bin/env bash
# Call sites of __tls_get_addr in the functions MLX's three per-transform calls run, in a
# build of libhipfft_pool_cufft.so (each call site runs once per call of its function on
# the fast path; the exports' second site is inside the host profile's branch, off unless
# HIPFFT_POOL_HOST_PROFILE=1).
# Usage: bash tls-calls.sh LIB
objdump -d --no-show-raw-insn "$1" | awk '/^[0-9a-f]+ <.*>:$/{f=$2} /__tls_get_addr/{c[f]++} END{for(k in c) print c[k], k}' |
  grep -E "Engine11set_setting|Engine4exec|Watchdog5enter|CudaBackend.*plan_exec_bound|<cufftXtExec>|<cufftSetStream>|<cufftSetWorkArea>" | sort -k2
