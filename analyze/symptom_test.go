package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

// TestSymptomThatNamesNoCause: a symptom whose words name no cause of its own (a peer gone,
// mpirun's abort summary) stays the root cause of a log that shows nothing before it, but at
// medium confidence: the rank that failed first may be in a log that is not there. A symptom
// whose words name the cause (a collective's timeout with its op) keeps high, and so does
// the same symptom in a bundle whose every pod has its log and no other pod failed first.
func TestSymptomThatNamesNoCause(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct {
		name, log string
		rule      string
		want      Confidence
	}{
		// https://github.com/pytorch/pytorch/issues/75512 (gloo's peer closed the pair)
		{"gloo peer closed", "epoch 3 step 200 loss 1.42\n" +
			"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:28048\n",
			"collective-error/gloo-peer-closed", ConfidenceMedium},
		// https://github.com/synthetik-technologies/blastfoam/issues/13 (mpirun's summary after
		// a rank's exit)
		{"mpirun abort summary", "--------------------------------------------------------------------------\n" +
			"Primary job terminated normally, but 1 process returned\n" +
			"a non-zero exit code. Per user-direction, the job has been aborted.\n" +
			"--------------------------------------------------------------------------\n",
			"collective-error/mpi-nonzero-exit", ConfidenceMedium},
		// https://github.com/horovod/horovod/issues/1890 (the stall inspector's warning: the
		// ranks it waits for may still come)
		// (repeated: one report alone is a wait of a minute or two, TestHorovodLoneStall)
		{"horovod stall warning", strings.Repeat("[1,0]<stderr>:[2020-04-20 20:29:29. 89665: W horovod/common/stall_inspector.cc:105] "+
			"One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds.\n", 2),
			"hang/horovod-stall", ConfidenceMedium},
		// A timeout that names its collective and rank says what happened: high.
		{"nccl watchdog", "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: " +
			"WorkNCCL(SeqNum=4512, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600055 milliseconds before timing out.\n",
			"collective-timeout/nccl-watchdog", ConfidenceHigh},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, tt.rule, res.RootCause.RuleID)
			require.Equal(t, tt.want, res.Confidence)
			if tt.want == ConfidenceMedium {
				require.Equal(t, BasisSymptom, res.ConfidenceBasis)
			}
		})
	}

	// A bundle: the job's pods each with its log, the gloo error the first failure of any of
	// them: nothing failed before it, high. With one pod's log missing, medium.
	for _, tt := range []struct {
		name    string
		dropLog string
		want    Confidence
	}{
		{"every pod's log", "", ConfidenceHigh},
		{"a pod's log missing", "train-job-worker-6", ConfidenceMedium},
		// An empty log is no log: a process SIGKILLed before it wrote leaves one, and its pod's
		// stop time (set when the runtime notices) comes after the symptom it caused.
		{"a pod's log empty", "empty:train-job-worker-6", ConfidenceMedium},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeSymptomBundle(t, all, tt.dropLog)
			require.Equal(t, "collective-error/gloo-peer-closed", res.RootCause.RuleID)
			require.Equal(t, tt.want, res.Confidence)
		})
	}
}

// analyzeSymptomBundle copies the cuda-oom sample and gives worker-4 a gloo error instead of
// its out-of-memory error (the other ranks' watchdog timeouts come ten minutes later, and
// explain their exits); with a dropLog, every log is cut before those, so the gloo error stays
// the first failure seen; dropLog's log is left out, or
// left empty when it reads "empty:<pod>".
func analyzeSymptomBundle(t *testing.T, all []*Rule, dropLog string) *Result {
	t.Helper()
	src := "../samples/pytorchjob-cuda-oom-rank"
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	logs, err := filepath.Glob(filepath.Join(dir, "logs", "ml", "*", "pytorch.log"))
	require.NoError(t, err)
	for _, p := range logs {
		pod := filepath.Base(filepath.Dir(p))
		if pod == dropLog {
			require.NoError(t, os.RemoveAll(filepath.Dir(p)))
			continue
		}
		if "empty:"+pod == dropLog {
			require.NoError(t, os.WriteFile(p, nil, 0o644))
			continue
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var kept []string
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if l == "" || (dropLog != "" || pod == "train-job-worker-4") && l >= "2026-03-14T10:02" {
				break
			}
			kept = append(kept, l)
		}
		if pod == "train-job-worker-4" {
			kept = append(kept, "2026-03-14T10:02:11.496540354Z RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.3.4]:28048\n")
		}
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(kept, "")), 0o644))
	}
	b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	m, err := parse.Load(b)
	require.NoError(t, err)
	rs, err := NewRuleSet(all)
	require.NoError(t, err)
	res, ix, err := analyzeModel(t.Context(), m, rs, index.BuildOptions{}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return res
}
