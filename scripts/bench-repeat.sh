#!/usr/bin/env bash
# Run a scenario several times, with one binary or several run alternately,
# and print each binary's median (min-max) of every figure: a run of
# c1m-small varies by 10-15% on a 2-core machine, so one run says little,
# and two binaries compared one after the other meet different machine
# states.
#
#   scripts/bench-repeat.sh [-n N] [-bins BIN,BIN...] [-out DIR] scenario [-- bench flags]
#
#   -n N       runs per binary (default 5)
#   -bins      the binaries to compare, run in turn within each round
#              (default: $BIN, else ./bin/drover); each is labelled by its
#              position and file name
#   -out DIR   where the results go (default: a new temporary directory),
#              one subdirectory per binary; `drover bench -summarize
#              DIR/*/*.json` prints the summary again
#
# Each run is scripts/bench-cluster.sh: a fresh three-server cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

N=5 BINS="${BIN:-./bin/drover}" OUT="" SCENARIO="" EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -bins) BINS=$2; shift 2 ;;
    -out) OUT=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *)
      if [ -n "$SCENARIO" ]; then echo "one scenario at a time" >&2; exit 2; fi
      SCENARIO=$1; shift ;;
  esac
done
if [ -z "$SCENARIO" ]; then
  echo "usage: $0 [-n N] [-bins BIN,BIN...] [-out DIR] scenario [-- bench flags]" >&2
  exit 2
fi
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/drover-bench-repeat.XXXXXX")

IFS=, read -r -a BIN_LIST <<<"$BINS"
LABELS=()
for i in "${!BIN_LIST[@]}"; do
  LABELS+=("$((i + 1))-$(basename "${BIN_LIST[$i]}")")
done

for round in $(seq 1 "$N"); do
  for i in "${!BIN_LIST[@]}"; do
    echo "==> round $round/$N: ${BIN_LIST[$i]} ($SCENARIO)"
    BIN=${BIN_LIST[$i]} METRICS_DIR=$OUT/metrics/${LABELS[$i]} scripts/bench-cluster.sh -json "$OUT/${LABELS[$i]}" "$SCENARIO" -- "${EXTRA[@]}" |
      grep -E '^(Placed|Running|Write -> eval|MISSED|Targets)' || true
  done
done

echo
echo "==> $N run(s) per binary of $SCENARIO; results in $OUT"
"${BIN_LIST[0]}" bench -summarize "$OUT"/*/*.json
# Allocation counts per server process (runtime.malloc_count, cumulative
# over the server's life, and runtime.total_gc_runs), which do not depend
# on how busy the machine is.
echo
echo "==> mallocs and GC runs per server, median over runs (metrics in $OUT/metrics)"
for d in "$OUT"/metrics/*/; do
  [ -d "$d" ] || continue
  for f in "$d"*.json; do
    m=$(grep -o '"Name":"runtime.malloc_count"[^}]*' "$f" | grep -o '"Value":[0-9.e+]*' | head -1 | cut -d: -f2)
    g=$(grep -o '"Name":"runtime.total_gc_runs"[^}]*' "$f" | grep -o '"Value":[0-9.e+]*' | head -1 | cut -d: -f2)
    echo "$(basename "$d") $m $g"
  done
done | awk '{k=$1; m[k]=m[k]" "$2; g[k]=g[k]" "$3} END {for (k in m) print k, "mallocs:" m[k], "| gc runs:" g[k]}' | sort
