#!/usr/bin/env bash
# make bench: analyze throughput on generated 64-rank bundles (256 MiB and 1 GiB of logs),
# side by side with ripgrep scanning the same files for the rule set's patterns; then the size
# of the log index analyze builds, and coroner search's median time on the warm cache.
# Prints figures and ratios; asserts nothing (timings never go in unit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./bin/coroner
CACHE=${BENCH_DIR:-.cache/bench}
SIZES=${BENCH_SIZES:-"256MiB 1GiB"}
RANKS=${BENCH_RANKS:-64}
mkdir -p "$CACHE"
command -v rg >/dev/null || { echo "bench: ripgrep (rg) is needed: apt-get install ripgrep" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench: GNU time is needed: apt-get install time" >&2; exit 1; }

# rg joins the patterns into one regexp: named groups would clash, so they become plain groups.
$BIN rules list --patterns | sed -E 's/\(\?P<[A-Za-z_]+>/(/g' > "$CACHE/patterns.txt"
echo "coroner $($BIN --version | awk '{print $3}'), $(nproc) CPUs, $(wc -l < "$CACHE/patterns.txt") rule patterns, $RANKS ranks"
# The machine may be shared: the load says how much, and the ratio compares runs made together.
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %10s %10s %10s %10s %12s %9s %14s\n' size logMB analyze_s MB/s peakRSS_MB rg_s analyze/rg index% search_p50_ms

measure() { # prints "seconds maxrss_kb" of a command, best of 3 runs
  local best="" rss=""
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$CACHE/time.txt" "$@" >/dev/null 2>&1 || true
    read -r s k < "$CACHE/time.txt"
    if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s; rss=$k; fi
  done
  echo "$best $rss"
}

for size in $SIZES; do
  dir="$CACHE/bundle-$RANKS-$size"
  [ -d "$dir" ] || go run ./samples/internal/genbundle -o "$dir" -ranks "$RANKS" -size "$size"
  bytes=$(du -sb "$dir/logs" | cut -f1)
  cat "$dir"/logs/*/*/*.log > /dev/null # warm the page cache for both tools alike
  # --no-cache: every run builds the index (into a private directory), as a first analyze does.
  read -r a_s a_rss < <(measure $BIN analyze "$dir" --format json -q --no-cache)
  read -r r_s _ < <(measure rg --no-ignore -c -f "$CACHE/patterns.txt" "$dir/logs")
  idx="$CACHE/index-$size"
  rm -rf "$idx"
  $BIN analyze "$dir" -q --cache-dir "$idx" --format json >/dev/null
  ibytes=$(du -sb "$idx"/[0-9a-f]*/ | awk '{s += $1} END {print s}')
  p50=$(for q in 'NCCL AND timeout' '"CUDA out of memory"' 'step 48120' 'level:error rank:37' 'Traceback'; do
      for _ in 1 2 3 4 5; do
        s=$(date +%s%N); $BIN search "$dir" "$q" --cache-dir "$idx" >/dev/null; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
      done
    done | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  awk -v size="$size" -v b="$bytes" -v a="$a_s" -v rss="$a_rss" -v r="$r_s" -v ib="$ibytes" -v p50="$p50" 'BEGIN {
    mb = b / 1048576; printf "%-8s %10.0f %10.2f %10.0f %10.0f %10.2f %11.2fx %8.2f%% %14d\n", size, mb, a, mb / a, rss / 1024, r, a / r, 100 * ib / b, p50 }'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "analyze/rg: wall-clock ratio of coroner analyze (whole report, index built) to rg -c -f PATTERNS (matching only); lower is better."
echo "index%: size of the cached log index over the log bytes; search_p50_ms: median of 25 coroner search runs on the warm cache."
