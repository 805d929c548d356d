package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/internal/spotbundle"
	"github.com/coroner-dev/coroner/report"
)

// bundleAnswer is what one analysis says: verdict, category, confidence and root pod.
type bundleAnswer struct {
	verdict, category, confidence, pod string
}

func answerOf(r *report.Report) bundleAnswer {
	a := bundleAnswer{verdict: string(r.Verdict)}
	if r.RootCause != nil {
		a.category, a.confidence, a.pod = string(r.RootCause.Category), string(r.RootCause.Confidence), r.RootCause.Pod
	}
	return a
}

func (a bundleAnswer) String() string {
	s := a.verdict
	if a.category != "" {
		s += "/" + a.category + "@" + a.confidence
	}
	return s
}

// confRank orders confidences.
var confRank = map[string]int{"low": 1, "medium": 2, "high": 3}

// confident is a root cause named at high or medium confidence.
func (a bundleAnswer) confident() bool {
	return a.verdict == "unhealthy" && (a.confidence == "high" || a.confidence == "medium")
}

// rightFor scores an answer as score.py does: a healthy row is right unless called unhealthy,
// a failure when its category is the label or an accepted one, or when unknown is accepted.
func rightFor(a bundleAnswer, label string, accept map[string]bool) bool {
	switch {
	case label == "healthy":
		return a.verdict != "unhealthy"
	case a.verdict == "unhealthy":
		return a.category == label || accept[a.category]
	}
	return accept["healthy"]
}

// TestSpotBundles wraps every excerpt of the corpus and of the spot sets into the bundle
// `coroner collect` would have written of a job that printed it (internal/spotbundle:
// four pods, statuses as Kubernetes shows them, the excerpt as its root rank's log) and
// compares the bundle's answer with the plain excerpt's and with the label. It fails when
// fewer bundles are right than testdata/spot-bundle-floor holds, or more are confidently
// wrong, healthy runs called unhealthy, or right answers on another pod than the excerpt's.
// The pods' statuses only say what the excerpt itself says (a status chosen from the label
// would give the answer away), so the test cannot see analyze stop reading them: it sees
// statuses that spoil an answer, not ones that stop helping. With SPOT_BUNDLES=1 (`make
// spot-bundles`) it prints every row where the two answers differ.
func TestSpotBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("2 analyses per excerpt: make test runs it")
	}
	if _, err := os.Stat(filepath.Join(corpusDir, "INDEX.tsv")); os.IsNotExist(err) {
		// The floor counts the corpus's rows: without them it would fail for the wrong reason.
		t.Skipf("no corpus at %s", corpusDir)
	}
	dirs := []string{corpusDir}
	sets, err := filepath.Glob(filepath.Join("..", "..", "testdata", "spot", "*", "INDEX.tsv"))
	require.NoError(t, err)
	for _, s := range sets {
		dirs = append(dirs, filepath.Dir(s))
	}
	tmp := t.TempDir()
	var opt spotbundle.Options // SPOT_BUNDLES=running or =sigterm measures the other variants
	switch os.Getenv("SPOT_BUNDLES") {
	case "running":
		opt.OthersRunning = true
	case "sigterm":
		opt.OthersSIGTERM = true
	}
	var total, excerptRight, bundleRight, worse, better, bolder, confidentWrong, alarms, wrongPod, surer, lessSure int
	var lines []string
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			cols := strings.Split(sc.Text(), "\t")
			if len(cols) < 5 {
				continue
			}
			row := spotbundle.Row{ID: cols[0], Label: cols[1], RootRank: cols[3], Framework: cols[4]}
			accept := map[string]bool{}
			for _, a := range strings.Split(cols[2], "|") {
				accept[strings.TrimSpace(a)] = true
			}
			name := filepath.Base(dir) + "/" + row.ID
			logPath := filepath.Join(dir, row.ID+".log")
			data, err := os.ReadFile(logPath)
			require.NoError(t, err)
			out := filepath.Join(tmp, filepath.Base(dir)+"-"+row.ID+".tar.gz")
			b, err := spotbundle.Write(out, row, data, opt)
			require.NoError(t, err, name)
			re, _ := analyzeJSON(t, nil, logPath, "--no-cache")
			rb, _ := analyzeJSON(t, nil, out, "--no-cache")
			require.NoError(t, os.Remove(out))
			ea, ba := answerOf(re), answerOf(rb)
			eok, bok := rightFor(ea, row.Label, accept), rightFor(ba, row.Label, accept)
			total++
			if eok {
				excerptRight++
			}
			if bok {
				bundleRight++
			}
			mark := ""
			switch {
			case eok && !bok:
				worse++
				mark = "worse "
			case !eok && bok:
				better++
				mark = "better"
			case !eok && !bok && ba.confident() && !ea.confident():
				bolder++
				mark = "bolder"
			case eok && bok && ea.verdict == "unhealthy" && ba.verdict == "unhealthy" && ea.confidence != ba.confidence:
				if confRank[ba.confidence] > confRank[ea.confidence] {
					surer++
					mark = "surer "
				} else {
					lessSure++
					mark = "unsure"
				}
			}
			if !bok && ba.confident() {
				confidentWrong++
			}
			if row.Label == "healthy" && ba.verdict == "unhealthy" {
				alarms++
			}
			podNote := ""
			if bok && ba.verdict == "unhealthy" && row.RootRank != "-" && ba.pod != "" && ba.pod != b.Pod {
				wrongPod++
				podNote = " pod " + ba.pod + " (excerpt in " + b.Pod + ")"
				if mark == "" {
					mark = "pod   "
				}
			}
			if mark != "" || (!bok && ba.confident()) {
				if mark == "" {
					mark = "XX    "
				}
				lines = append(lines, fmt.Sprintf("%s %-16s %-9s want %s: excerpt %s, bundle %s%s", mark, name, b.State, row.Label, ea, ba, podNote))
			}
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	sort.Strings(lines)
	summary := fmt.Sprintf("%d rows: right as excerpt %d, right as bundle %d; bundle worse %d, better %d, wrong and bolder %d; right both ways, the bundle surer %d, less sure %d; bundle confidently wrong %d, healthy called unhealthy %d, right but another pod %d",
		total, excerptRight, bundleRight, worse, better, bolder, surer, lessSure, confidentWrong, alarms, wrongPod)
	if os.Getenv("SPOT_BUNDLES") != "" {
		fmt.Println(strings.Join(lines, "\n"))
		fmt.Println(summary)
	}
	t.Log(summary)
	floorFile := filepath.Join("testdata", "spot-bundle-floor")
	floorData, err := os.ReadFile(floorFile)
	if os.IsNotExist(err) && os.Getenv("SPOT_BUNDLES") != "" {
		return
	}
	require.NoError(t, err)
	var fRight, fWrong, fAlarms, fPod int
	_, err = fmt.Sscanf(string(floorData), "right %d\nconfident-wrong %d\nfalse-alarms %d\nwrong-pod %d", &fRight, &fWrong, &fAlarms, &fPod)
	require.NoError(t, err, "%s: want 'right N', 'confident-wrong N', 'false-alarms N' and 'wrong-pod N' lines", floorFile)
	// A right category on another pod than the one whose log holds the excerpt is a wrong
	// pointer for the user who reads it.
	require.LessOrEqual(t, wrongPod, fPod, "more bundles right but on another pod than the floor:\n%s", strings.Join(lines, "\n"))
	require.GreaterOrEqual(t, bundleRight, fRight, "fewer bundles right than the floor:\n%s", strings.Join(lines, "\n"))
	require.LessOrEqual(t, confidentWrong, fWrong, "more bundles confidently wrong than the floor:\n%s", strings.Join(lines, "\n"))
	require.LessOrEqual(t, alarms, fAlarms, "more healthy bundles called unhealthy than the floor:\n%s", strings.Join(lines, "\n"))
}

// TestRecentStallInARunningJob: Horovod's stall inspector warns after 60 s and goes on
// waiting (horovod/horovod#1890's wording), repeating its report while the stall lasts. In a
// bundle of a job still running, collected a minute after one warning, the ranks it waits for
// may still come (a slow checkpoint): the hang is named at low, a lone report, and says why.
// Collected 40 minutes after it, the stall is sure.
func TestRecentStallInARunningJob(t *testing.T) {
	excerpt := []byte("[1,0]<stdout>:epoch 1 step 200 loss 0.41\n" +
		"[1,0]<stderr>:[2020-04-20 20:29:29. 89665: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\n" +
		"[1,0]<stderr>:Missing ranks:\n" +
		"[1,0]<stderr>:1: [allreduce.c_d1.bias, allreduce.c_d1.weight]\n")
	for _, tt := range []struct {
		label string // the kind of row: running (collected 1 min after), hang (40 min after)
		conf  analyze.Confidence
	}{{"healthy", analyze.ConfidenceLow}, {"hang", analyze.ConfidenceHigh}} {
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		b, err := spotbundle.Write(out, spotbundle.Row{ID: "stall", Label: tt.label, RootRank: "-", Framework: "horovod"}, excerpt, spotbundle.Options{})
		require.NoError(t, err)
		require.Equal(t, spotbundle.MPIJob, b.Kind)
		r, _ := analyzeJSON(t, nil, out, "--no-cache")
		require.Equal(t, analyze.VerdictUnhealthy, r.Verdict, r.VerdictReason)
		require.Equal(t, analyze.CategoryHang, r.RootCause.Category)
		require.Equal(t, tt.conf, r.RootCause.Confidence, tt.label)
		if tt.conf == analyze.ConfidenceLow {
			code, stdout, stderr := run(t, "analyze", out, "--no-cache")
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, "a stall was reported once")
		}
	}
}
