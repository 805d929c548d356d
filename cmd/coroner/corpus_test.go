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
// does (`make corpus` prints the table) and fails when it is worse than the floor kept in
// testdata/corpus-floor: fewer excerpts right, or a false alarm on a healthy one. Raise the
// floor when the score rises; never lower it.
func TestCorpusFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("183 analyses: make test runs it")
	}
	index := filepath.Join(corpusDir, "INDEX.tsv")
	f, err := os.Open(index)
	if os.IsNotExist(err) {
		t.Skipf("no corpus at %s", corpusDir)
	}
	require.NoError(t, err)
	defer f.Close()
	floorData, err := os.ReadFile(filepath.Join("testdata", "corpus-floor"))
	require.NoError(t, err)
	var floorRight, floorAlarms int
	_, err = fmt.Sscanf(string(floorData), "right %d\nfalse-alarms %d", &floorRight, &floorAlarms)
	require.NoError(t, err, "testdata/corpus-floor: want 'right N' and 'false-alarms N' lines")

	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	right, alarms, total := 0, 0, 0
	var misses []string
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
		r, _ := analyzeJSON(t, nil, filepath.Join(corpusDir, id+".log"), "--no-cache")
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
	t.Logf("corpus: %d/%d right, healthy false alarms %d; misses: %s", right, total, alarms, strings.Join(misses, "; "))
	require.GreaterOrEqual(t, right, floorRight, "fewer corpus excerpts right than the floor; misses: %s", strings.Join(misses, "; "))
	require.LessOrEqual(t, alarms, floorAlarms, "false alarms on healthy excerpts")
	if right > floorRight {
		t.Logf("the score is above the floor: raise testdata/corpus-floor to right %s", strconv.Itoa(right))
	}
}
