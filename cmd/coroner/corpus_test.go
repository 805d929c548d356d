package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corpusDir is the real-log corpus (../shared/corpus/real beside the repository): verbatim
// excerpts of public issue threads, each labelled with its root cause.
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus", "real")

// TestCorpusFloor scores the diagnosis on the real-log corpus as ../shared/corpus/score.py
// does (`make corpus` prints the table), with both tiers and with the second tier alone
// (`make corpus-tier2`: its generalisation is what unseen wording gets), and fails when
// either is worse than the floor kept in testdata/corpus-floor: fewer excerpts right, or a
// false alarm on a healthy one. Raise the floor when the score rises; never lower it.
func TestCorpusFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("2 x 344 analyses: make test runs it")
	}
	if _, err := os.Stat(filepath.Join(corpusDir, "INDEX.tsv")); os.IsNotExist(err) {
		t.Skipf("no corpus at %s", corpusDir)
	}
	scoreAgainstFloor(t, "corpus", corpusDir, filepath.Join("testdata", "corpus-floor"))
}

// TestSpotFloor scores the spot sets kept in testdata/spot (real excerpts of public threads,
// gathered after the rules by families the rules were not written from; scripts/spot.sh
// prints their table) against each set's floor file, as TestCorpusFloor does the corpus.
func TestSpotFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("2 analyses per excerpt: make test runs it")
	}
	sets, err := filepath.Glob(filepath.Join("..", "..", "testdata", "spot", "*", "INDEX.tsv"))
	require.NoError(t, err)
	for _, index := range sets {
		dir := filepath.Dir(index)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			scoreAgainstFloor(t, filepath.Base(dir), dir, filepath.Join(dir, "floor"))
		})
	}
}

// scoreAgainstFloor scores the labelled excerpts of dir with both tiers and with the second
// tier alone, and fails when either is worse than the floor file's: fewer right, or a false
// alarm more on a healthy excerpt.
func scoreAgainstFloor(t *testing.T, name, dir, floorFile string) {
	floorData, err := os.ReadFile(floorFile)
	require.NoError(t, err)
	var floor [2]struct{ right, alarms int }
	_, err = fmt.Sscanf(string(floorData), "right %d\nfalse-alarms %d\nfallback-right %d\nfallback-false-alarms %d",
		&floor[0].right, &floor[0].alarms, &floor[1].right, &floor[1].alarms)
	require.NoError(t, err, "%s: want 'right N', 'false-alarms N', 'fallback-right N' and 'fallback-false-alarms N' lines", floorFile)
	for i, tiers := range []string{"all", "fallback"} {
		right, alarms, total, misses := scoreCorpus(t, dir, "--tiers", tiers)
		prefix := map[string]string{"all": "", "fallback": "fallback-"}[tiers]
		t.Logf("%s, --tiers %s: %d/%d right, healthy false alarms %d; misses: %s", name, tiers, right, total, alarms, strings.Join(misses, "; "))
		require.GreaterOrEqual(t, right, floor[i].right, "%s, --tiers %s: fewer excerpts right than the floor; misses: %s", name, tiers, strings.Join(misses, "; "))
		require.LessOrEqual(t, alarms, floor[i].alarms, "%s, --tiers %s: false alarms on healthy excerpts", name, tiers)
		if right > floor[i].right {
			t.Logf("the score is above the floor: raise %s to %sright %d", floorFile, prefix, right)
		}
	}
}

// scoreCorpus analyzes every excerpt of dir's INDEX.tsv with args and scores it as
// score.py does: a healthy excerpt is right unless called unhealthy (then a false alarm), a
// failure when its category is the label or an accepted one, or when unknown is accepted.
func scoreCorpus(t *testing.T, dir string, args ...string) (right, alarms, total int, misses []string) {
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 3 {
			continue
		}
		id, label := cols[0], cols[1]
		accept := map[string]bool{}
		for _, a := range strings.Split(cols[2], "|") {
			accept[strings.TrimSpace(a)] = true
		}
		r, _ := analyzeJSON(t, nil, append([]string{filepath.Join(dir, id+".log"), "--no-cache"}, args...)...)
		verdict, category := string(r.Verdict), ""
		if r.RootCause != nil {
			category = string(r.RootCause.Category)
		}
		var ok bool
		switch {
		case label == "healthy":
			ok = verdict != "unhealthy"
			if !ok {
				alarms++
			}
		case verdict == "unhealthy":
			ok = category == label || accept[category]
		default:
			ok = accept["healthy"]
		}
		total++
		if ok {
			right++
		} else {
			misses = append(misses, id+" want "+label+" got "+verdict+"/"+category)
		}
	}
	require.NoError(t, sc.Err())
	return right, alarms, total, misses
}
