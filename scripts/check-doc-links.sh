#!/usr/bin/env bash
# Lists every path under docs/runs/ that README.md, docs/*.md and docs/history/*.md cite, and
# fails if a cited path does not exist. A citation is `docs/runs/...` anywhere in those files,
# or a relative `runs/...` (docs/*.md) or `../runs/...` (docs/history/*.md). A path may name a
# folder (with or without a trailing slash) or a file, and may end in a `*` glob (`run19-*`):
# it exists when the glob matches. `docs/runs/` alone names the folder, not its content.
#
#   scripts/check-doc-links.sh            # every cited path, ok or MISSING; exit 1 if one is missing
#   scripts/check-doc-links.sh --uncited  # the tracked files under docs/runs/ that no citation
#                                         # covers (docs/runs/README.md excepted), one a line
#
# After pruning, `--uncited` prints nothing: docs/runs/ holds only what a doc cites.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob

docs=(README.md docs/*.md docs/history/*.md)

# One cited path a line, as a path from the repository root, trailing slashes and sentence
# punctuation removed.
cited() {
  local f
  for f in "${docs[@]}"; do
    grep -oE 'docs/runs/[A-Za-z0-9._/*+-]*' "$f" || true
    case $f in
      docs/history/*) grep -oE '(^|[^A-Za-z0-9_./-])\.\./runs/[A-Za-z0-9._/*+-]*' "$f" |
                        sed -E 's#^.*\.\./runs/#docs/runs/#' || true ;;
      docs/*)         grep -oE '(^|[^A-Za-z0-9_./-])runs/[A-Za-z0-9._/*+-]*' "$f" |
                        sed -E 's#^.*runs/#docs/runs/#' || true ;;
    esac
  done | sed -E 's#[.,:;]+$##; s#/+$##' | grep -vxE 'docs/runs' | sort -u
}

# The paths a cited path stands for (a glob expanded), one a line; none if it does not exist.
expand() {
  local p=$1 m
  if [[ $p == *'*'* ]]; then
    for m in $p; do printf '%s\n' "$m"; done
  elif [ -e "$p" ]; then
    printf '%s\n' "$p"
  fi
}

if [ "${1:-}" = --uncited ]; then
  # A file is covered when it, or a folder above it, is a cited path.
  cited | while read -r p; do expand "$p"; done | sed -E 's#/+$##' |
    awk 'NR == FNR { c[$0] = 1; next }
         $0 == "docs/runs/README.md" { next }
         { p = $0; while (p != "") { if (p in c) next; if (!sub(/\/[^\/]*$/, "", p)) break } print }' \
      - <(git ls-files docs/runs)
  exit 0
fi

missing=0 total=0
while read -r p; do
  total=$((total + 1))
  if [ -n "$(expand "$p")" ]; then
    printf 'ok       %s\n' "$p"
  else
    printf 'MISSING  %s\n' "$p"
    missing=$((missing + 1))
  fi
done < <(cited)
files=$(git ls-files docs/runs | wc -l)
echo "check-doc-links: $total cited paths, $missing missing; $files files tracked under docs/runs"
[ "$missing" -eq 0 ]
