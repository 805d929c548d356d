package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	index := filepath.Join(corpusDir, "INDEX.tsv")
	if _, err := os.Stat(index); os.IsNotExist(err) {
		t.Skipf("no corpus at %s", corpusDir)
	}
	floorData, err := os.ReadFile(filepath.Join("testdata", "corpus-floor"))
	require.NoError(t, err)
	var floor [2]struct{ right, alarms int }
	_, err = fmt.Sscanf(string(floorData), "right %d\nfalse-alarms %d\nfallback-right %d\nfallback-false-alarms %d",
		&floor[0].right, &floor[0].alarms, &floor[1].right, &floor[1].alarms)
	require.NoError(t, err, "testdata/corpus-floor: want 'right N', 'false-alarms N', 'fallback-right N' and 'fallback-false-alarms N' lines")
	for i, tiers := range []string{"all", "fallback"} {
		right, alarms, total, misses := scoreCorpus(t, index, "--tiers", tiers)
		name := map[string]string{"all": "", "fallback": "fallback-"}[tiers]
		t.Logf("corpus, --tiers %s: %d/%d right, healthy false alarms %d; misses: %s", tiers, right, total, alarms, strings.Join(misses, "; "))
		require.GreaterOrEqual(t, right, floor[i].right, "--tiers %s: fewer corpus excerpts right than the floor; misses: %s", tiers, strings.Join(misses, "; "))
		require.LessOrEqual(t, alarms, floor[i].alarms, "--tiers %s: false alarms on healthy excerpts", tiers)
		if right > floor[i].right {
			t.Logf("the score is above the floor: raise testdata/corpus-floor to %sright %s", name, strconv.Itoa(right))
		}
	}
}

// scoreCorpus analyzes every excerpt of the corpus's index with args and scores it as
// score.py does: a healthy excerpt is right unless called unhealthy (then a false alarm), a
// failure when its category is the label or an accepted one, or when unknown is accepted.
func scoreCorpus(t *testing.T, index string, args ...string) (right, alarms, total int, misses []string) {
	f, err := os.Open(index)
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
		r, _ := analyzeJSON(t, nil, append([]string{filepath.Join(corpusDir, id+".log"), "--no-cache"}, args...)...)
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
