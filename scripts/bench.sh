#!/usr/bin/env bash
# make bench: coroner analyze and search on generated bundles of every kind of content that once
# made the index cost more than a scan (issue 13): repetitive training logs, distinct lines, many
# ranks, 200,000 tiny files, one huge line, a number on many lines, and a 1 GiB tarball. Prints
# figures and ratios next to their targets; asserts nothing (timings never go in unit tests).
#
# The machine may be shared: every figure is the median of BENCH_REPS runs, ratios compare runs
# made back to back, CPU time (user+sys) is printed beside wall-clock time, and the load average is
# printed at the start and the end. Bundles are generated once into .cache/bench/gen-<hash of the
# generator>/ (older generations are removed); BENCH_CASES picks cases by name, BENCH_BIG=1 adds
# 4 GiB bundles (about 10 GiB of disk and ten minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./bin/coroner
ROOT=${BENCH_DIR:-.cache/bench}
REPS=${BENCH_REPS:-3}
command -v rg >/dev/null || { echo "bench: ripgrep (rg) is needed: apt-get install ripgrep" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench: GNU time is needed: apt-get install time" >&2; exit 1; }
gen_hash=$(cat internal/samplegen/*.go samples/internal/genbundle/*.go | sha256sum | cut -c1-12)
GEN="$ROOT/gen-$gen_hash"
mkdir -p "$GEN"
for old in "$ROOT"/gen-*; do [ "$old" = "$GEN" ] || rm -rf "$old"; done
WORK=$(mktemp -d "$ROOT/run-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
go build -o "$WORK/genbundle" ./samples/internal/genbundle

# Cases: name kind ranks size baseline (the repetitive case of the same size, or -), queries.
# A query "Q --limit N" passes the flag too.
COMMON_QUERIES=('NCCL AND timeout' '"CUDA out of memory"' 'step 48120' 'level:error rank:37' 'Traceback' 'step 100' 'step 100 --limit 1' 'ProcessGroupNCCL.cpp' 'SeqNum=48120')
declare -A KIND RANKS SIZE BASE RGRATIO CPU RSS INDEX SMAX WALL VSREP
add_case() { KIND[$1]=$2; RANKS[$1]=$3; SIZE[$1]=$4; BASE[$1]=$5; CASES+=("$1"); }
CASES=()
add_case rep-7M       repetitive 64    7MiB   -
add_case rep-15M      repetitive 64    15MiB  -
add_case rep-32M      repetitive 64    32MiB  -
add_case rep-64M      repetitive 64    64MiB  -
add_case rep-256M     repetitive 64    256MiB -
add_case rep-1G       repetitive 64    1GiB   -
add_case dis-7M       distinct   64    7MiB   rep-7M
add_case dis-32M      distinct   64    32MiB  rep-32M
add_case dis-256M     distinct   64    256MiB rep-256M
add_case dis1-256M    distinct   1     256MiB rep-256M
# 16 KiB per rank: the slope over 1,024, 4,096 and 16,384 ranks is the cost of a file.
add_case ranks1024    repetitive 1024  16MiB  -
add_case ranks4096    repetitive 4096  64MiB  -
add_case ranks16384   repetitive 16384 256MiB -
add_case files200k    files      25000 15MiB  rep-15M
add_case huge-256M    hugeline   1     256MiB rep-256M
add_case num-1G       numbers    64    1GiB   rep-1G
if [ "${BENCH_BIG:-}" = 1 ]; then
  add_case rep-4G     repetitive 64    4GiB   -
  add_case dis-4G     distinct   64    4GiB   rep-4G
fi
if [ -n "${BENCH_CASES:-}" ]; then
  wanted=()
  for c in "${CASES[@]}"; do
    for w in $BENCH_CASES; do
      # A case asked for brings its baseline.
      if [ "$c" = "$w" ] || [ "${BASE[$w]:-}" = "$c" ]; then wanted+=("$c"); break; fi
    done
  done
  CASES=("${wanted[@]}")
fi

bundle() { # prints the directory of a case's bundle, generating it once
  local dir="$GEN/$1"
  if [ ! -d "$dir" ]; then
    "$WORK/genbundle" -o "$dir.tmp" -kind "${KIND[$1]}" -ranks "${RANKS[$1]}" -size "${SIZE[$1]}" >&2
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# run_timed OUT CMD...: appends "wall cpu maxrss_kb" of one run of CMD to OUT.
run_timed() {
  local out=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/t" "$@" >/dev/null 2>"$WORK/err" || { echo "bench: failed: $*" >&2; cat "$WORK/err" >&2; }
  awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$WORK/t" >> "$out"
}

echo "coroner $($BIN --version | awk '{print $3}'), $(nproc) CPUs, $REPS runs per figure (the median)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. analyze against ripgrep on repetitive logs, back to back.
$BIN rules list --patterns | sed -E 's/\(\?P<[A-Za-z_]+>/(/g' > "$WORK/patterns.txt"
echo
echo "analyze --no-cache against rg -c -f <$(wc -l < "$WORK/patterns.txt") rule patterns> on the same files"
printf '%-10s %8s | %9s %9s | %9s %9s | %10s %10s\n' case logMB analyze_s rg_s analyze_cpu rg_cpu wall_ratio cpu_ratio
for c in "${CASES[@]}"; do
  case $c in rep-256M|rep-1G|rep-4G|ranks*) ;; *) continue ;; esac
  dir=$(bundle "$c")
  bytes=$(find "$dir/logs" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  find "$dir/logs" -type f -exec cat {} + > /dev/null # warm the page cache for both alike
  : > "$WORK/a"; : > "$WORK/r"
  for _ in $(seq "$REPS"); do
    run_timed "$WORK/a" $BIN analyze "$dir" --format json -q --no-cache
    run_timed "$WORK/r" rg --no-ignore -c -f "$WORK/patterns.txt" "$dir/logs"
  done
  aw=$(cut -d' ' -f1 "$WORK/a" | median); ac=$(cut -d' ' -f2 "$WORK/a" | median)
  rw=$(cut -d' ' -f1 "$WORK/r" | median); rc=$(cut -d' ' -f2 "$WORK/r" | median)
  awk -v c="$c" -v b="$bytes" -v aw="$aw" -v ac="$ac" -v rw="$rw" -v rc="$rc" 'BEGIN {
    printf "%-10s %8.0f | %9.2f %9.2f | %9.2f %9.2f | %9.2fx %9.2fx\n", c, b / 1048576, aw, rw, ac, rc, aw / rw, ac / rc }'
  RGRATIO[$c]=$(awk -v a="$ac" -v r="$rc" 'BEGIN {printf "%.2f", a / r}')
done

# 2. every case: analyze (no cache: the index is built), its peak RSS, the index it leaves in a
# cache, and coroner search on that warm cache.
echo
echo "every case: analyze --no-cache, then analyze into a cache and search it warm"
echo "targets: peak RSS <= 300 MB (analyze and search); analyze CPU <= 2x the repetitive case of the same size;"
echo "         index <= 10% of the logs; warm search < 100 ms for every query (the slowest query's median is search_max)"
printf '%-10s %8s %7s | %9s %8s %8s %7s | %7s | %7s %7s %7s\n' case logMB files analyze_s cpu_s vs_rep RSS_MB index% srch_p50 srch_max srch_RSS
for c in "${CASES[@]}"; do
  dir=$(bundle "$c")
  read -r bytes files < <(find "$dir/logs" -type f -printf '%s\n' | awk '{s += $1; n++} END {print s, n}')
  : > "$WORK/a"
  for _ in $(seq "$REPS"); do
    run_timed "$WORK/a" $BIN analyze "$dir" --format json -q --no-cache --max-entries 1000000
  done
  aw=$(cut -d' ' -f1 "$WORK/a" | median); ac=$(cut -d' ' -f2 "$WORK/a" | median)
  rss=$(cut -d' ' -f3 "$WORK/a" | sort -n | tail -1)
  CPU[$c]=$ac; RSS[$c]=$((rss / 1024)); WALL[$c]=$aw
  vs=-
  if [ "${BASE[$c]}" != - ] && [ -n "${CPU[${BASE[$c]}]:-}" ]; then
    vs=$(awk -v a="$ac" -v b="${CPU[${BASE[$c]}]}" 'BEGIN {printf "%.2fx", a / b}')
    VSREP[$c]=${vs%x}
  fi
  idx="$WORK/cache-$c"
  $BIN analyze "$dir" -q --cache-dir "$idx" --format json --max-entries 1000000 >/dev/null
  # The logs' index, named by the bundle's stat entry: analyze keeps the index of the events and
  # objects beside it (for the search after it), which is not the logs' and is not counted.
  key=$(grep -ho "\"source\":\"$(realpath -s "$dir")\",[^}]*\"key\":\"[0-9a-f]*\"" "$idx"/stat/*.json | sed 's/.*"key":"//; s/"$//' || true)
  ibytes=$( (du -sb "$idx/${key:-none}" 2>/dev/null || echo 0) | awk '{print $1 + 0}')
  queries=("${COMMON_QUERIES[@]}")
  [ "${KIND[$c]}" = distinct ] && queries+=('ximuhayo' 'request_id' 'tokens AND peda' '6d964169333e1645')
  : > "$WORK/s"; : > "$WORK/qmed"
  for q in "${queries[@]}"; do
    : > "$WORK/q"
    extra=()
    if [[ $q == *" --limit "* ]]; then extra=(--limit "${q##* --limit }"); q=${q% --limit *}; fi
    for _ in $(seq "$REPS"); do
      run_timed "$WORK/q" $BIN search "$dir" "$q" "${extra[@]}" --cache-dir "$idx" --max-entries 1000000
    done
    cat "$WORK/q" >> "$WORK/s"
    echo "$(cut -d' ' -f1 "$WORK/q" | median) $q ${extra[*]}" >> "$WORK/qmed"
  done
  p50=$(cut -d' ' -f1 "$WORK/s" | median)
  smax=$(sort -g "$WORK/qmed" | tail -1 | cut -d' ' -f1)
  srss=$(cut -d' ' -f3 "$WORK/s" | sort -n | tail -1)
  INDEX[$c]=$(awk -v ib="$ibytes" -v b="$bytes" 'BEGIN {printf "%.1f", 100 * ib / b}')
  SMAX[$c]=$(awk -v s="$smax" 'BEGIN {printf "%.0f", s * 1000}')
  awk -v c="$c" -v b="$bytes" -v f="$files" -v aw="$aw" -v ac="$ac" -v vs="$vs" -v rss="$rss" -v ib="$ibytes" \
      -v p50="$p50" -v smax="$smax" -v srss="$srss" 'BEGIN {
    printf "%-10s %8.0f %7d | %9.2f %8.2f %8s %7.0f | %6.2f%% | %7.0f %7.0f %7.0f\n", c, b / 1048576, f, aw, ac, vs, rss / 1024, 100 * ib / b, p50 * 1000, smax * 1000, srss / 1024 }'
  if [ -n "${BENCH_VERBOSE:-}" ]; then sort -gr "$WORK/qmed" | head -3 | sed 's/^/    slowest: /'; fi
  rm -rf "$idx"
done

# 3. cost linear in files: 16 KiB per rank at 1,024, 4,096 and 16,384 ranks, the CPU per rank
# and each step's CPU over the one before (linear: 4x for 4x the ranks and bytes).
if [ -n "${CPU[ranks1024]:-}${CPU[ranks4096]:-}${CPU[ranks16384]:-}" ]; then
  echo
  echo "slope: analyze CPU at 16 KiB per rank (linear in files: 4.00x for 4x the ranks)"
  prev=
  for c in ranks1024 ranks4096 ranks16384; do
    [ -n "${CPU[$c]:-}" ] || { prev=; continue; }
    step=-
    [ -n "$prev" ] && step=$(awk -v a="${CPU[$prev]}" -v b="${CPU[$c]}" 'BEGIN {printf "%.2fx", b / a}')
    awk -v c="$c" -v r="${RANKS[$c]}" -v cpu="${CPU[$c]}" -v rss="${RSS[$c]}" -v step="$step" 'BEGIN {
      printf "  %-10s %6d ranks  CPU %7.2f s  %6.2f ms/rank  RSS %5d MB  step %s\n", c, r, cpu, 1000 * cpu / r, rss, step }'
    prev=$c
  done
fi

# 4. search of a 1 GiB tarball after analyze: the index is found from the tarball itself.
if [[ " ${CASES[*]} " == *" rep-1G "* ]]; then
  dir=$(bundle rep-1G)
  tgz="$GEN/rep-1G.tar.gz"
  [ -f "$tgz" ] || { tar -C "$dir" -czf "$tgz.tmp" . && mv "$tgz.tmp" "$tgz"; }
  idx="$WORK/cache-tgz"
  : > "$WORK/a"
  run_timed "$WORK/a" $BIN analyze "$tgz" -q --cache-dir "$idx" --format json
  : > "$WORK/s"
  for q in 'NCCL AND timeout' 'step 48120' '"CUDA out of memory"'; do
    for _ in $(seq "$REPS"); do run_timed "$WORK/s" $BIN search "$tgz" "$q" --cache-dir "$idx"; done
  done
  echo
  awk -v tb="$(stat -c %s "$tgz")" -v a="$(cut -d' ' -f1 "$WORK/a")" -v s="$(cut -d' ' -f1 "$WORK/s" | median)" \
      -v smax="$(cut -d' ' -f1 "$WORK/s" | sort -g | tail -1)" -v rss="$(cut -d' ' -f3 "$WORK/s" | sort -n | tail -1)" 'BEGIN {
    printf "1 GiB tarball (%.0f MB): analyze %.2f s; warm search p50 %.0f ms, max %.0f ms, RSS %.0f MB (target < 1 s)\n", tb / 1e6, a, s * 1000, smax * 1000, rss / 1024 }'
  rm -rf "$idx"
fi
# 5. the targets of issue 28, each with its measured value: met, NOT met, or not measured (its
# case was not run).
echo
echo "targets (issue 28; CPU ratios are to rg in the same run)"
# target NAME VALUE LIMIT UNIT: met when VALUE <= LIMIT.
target() {
  if [ -z "$2" ]; then printf '  %-52s %10s  (target <= %s%s)  not measured\n' "$1" - "$3" "$4"; return; fi
  awk -v n="$1" -v v="$2" -v l="$3" -v u="$4" 'BEGIN {
    printf "  %-52s %9s%s  (target <= %s%s)  %s\n", n, v, u, l, u, (v + 0 <= l + 0) ? "met" : "NOT met" }'
}
slowest() { # the slowest query's median over the given cases, in ms
  local m=
  for c in "$@"; do [ -n "${SMAX[$c]:-}" ] && m=$(awk -v a="${m:-0}" -v b="${SMAX[$c]}" 'BEGIN {print (b > a) ? b : a}'); done
  echo "$m"
}
target "16,384 ranks x 16 KiB: analyze CPU / rg CPU" "${RGRATIO[ranks16384]:-}" 2 x
target "16,384 ranks x 16 KiB: analyze peak RSS" "${RSS[ranks16384]:-}" 300 " MB"
target "4,096 ranks x 16 KiB: analyze CPU / rg CPU" "${RGRATIO[ranks4096]:-}" 1.5 x
target "200,000 files of 80 bytes: analyze wall" "${WALL[files200k]:-}" 10 " s"
target "200,000 files of 80 bytes: analyze peak RSS" "${RSS[files200k]:-}" 300 " MB"
target "200,000 files of 80 bytes: index / logs" "${INDEX[files200k]:-}" 20 %
target "1 GiB repetitive: analyze CPU / rg CPU" "${RGRATIO[rep-1G]:-}" 1.2 x
target "distinct lines 256 MiB: CPU / repetitive's" "${VSREP[dis-256M]:-}" 2 x
target "slope 1,024 -> 4,096 ranks: CPU step (linear: 4x, 10% slack)" \
  "$([ -n "${CPU[ranks1024]:-}" ] && [ -n "${CPU[ranks4096]:-}" ] && awk -v a="${CPU[ranks1024]}" -v b="${CPU[ranks4096]}" 'BEGIN {printf "%.2f", b / a}')" 4.4 x
target "slope 4,096 -> 16,384 ranks: CPU step (linear: 4x, 10% slack)" \
  "$([ -n "${CPU[ranks4096]:-}" ] && [ -n "${CPU[ranks16384]:-}" ] && awk -v a="${CPU[ranks4096]}" -v b="${CPU[ranks16384]}" 'BEGIN {printf "%.2f", b / a}')" 4.4 x
target "warm search, slowest query: 1 GiB repetitive" "$(slowest rep-1G)" 100 " ms"
target "warm search, slowest query: distinct lines" "$(slowest dis-7M dis-32M dis-256M dis1-256M)" 100 " ms"
target "warm search, slowest query: 16,384 ranks" "$(slowest ranks16384)" 100 " ms"
target "warm search, slowest query: 200,000 files" "$(slowest files200k)" 300 " ms"
echo "  collect of 1,024 pods < 10 s: make bench-collect (CORONER_COLLECT_PODS=1024 by default) prints the time and the API server's request count"

echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "analyze_s, rg_s: wall-clock; cpu: user+sys seconds; vs_rep: CPU over the repetitive case of the same size;"
echo "index%: the logs' cached index over the log bytes (not the events' and objects' index beside it); srch_p50: median over every query's runs; srch_max: the slowest query's median."
