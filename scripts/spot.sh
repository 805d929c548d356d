#!/bin/sh
# Score a coroner build on the spot sets kept in testdata/spot/NAME (real excerpts of public
# threads gathered after the rules, each set a family the rules were not written from; INDEX.tsv
# as the corpus's), with ../shared/corpus/score.py, both tiers and the second tier alone.
# Usage: scripts/spot.sh BIN [NAME...]   (all sets when no NAME; VERBOSE=1 prints each set's misses)
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
root=$(cd "$(dirname "$0")/.." && pwd)
score=${CORPUS_SCORE:-$root/../shared/corpus/score.py}
[ -f "$score" ] || { echo "spot.sh: no $score" >&2; exit 1; }
[ $# -gt 0 ] || set -- $(cd "$root/testdata/spot" && ls -d */ 2>/dev/null | tr -d /)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\nexec "%s" "$@" --tiers fallback\n' "$bin" > "$tmp/tier2"; chmod +x "$tmp/tier2"
tb=0; tt=0; tn=0
for name in "$@"; do
	d=$root/testdata/spot/$name
	[ -f "$d/INDEX.tsv" ] || { echo "spot.sh: $d/INDEX.tsv: no such set" >&2; exit 1; }
	mkdir -p "$tmp/$name"; cp "$score" "$tmp/$name/score.py"; ln -sfn "$d" "$tmp/$name/real"
	python3 "$tmp/$name/score.py" "$bin" > "$tmp/$name/both"
	python3 "$tmp/$name/score.py" "$tmp/tier2" > "$tmp/$name/tier2"
	[ -z "${VERBOSE:-}" ] || sed -n '/^misses/,/^$/p' "$tmp/$name/both"
	b=$(tail -1 "$tmp/$name/both"); t=$(tail -1 "$tmp/$name/tier2")
	printf '%-12s both: %s | tier alone: %s\n' "$name" "${b#corpus: }" "${t#corpus: }"
	set -- $(echo "$b" | sed -E 's#corpus: ([0-9]+)/([0-9]+).*#\1 \2#') $(echo "$t" | sed -E 's#corpus: ([0-9]+)/.*#\1#')
	tb=$((tb + $1)); tn=$((tn + $2)); tt=$((tt + $3))
done
echo "all sets: both $tb/$tn, tier alone $tt/$tn"
