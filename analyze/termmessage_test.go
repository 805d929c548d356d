package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTerminationMessageWithoutLog: a container's termination message (FallbackToLogsOnError
// puts its log's tail there) is read for the error only when the bundle has no log of that
// container: another container's log of the same pod does not stand for it, and the
// container's own log does (its lines are the findings, not the message's copy of them).
func TestTerminationMessageWithoutLog(t *testing.T) {
	const oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free."
	term := `{exitCode: 1, reason: Error, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:05:09Z", message: "` + oom + `"}`
	pod := podYAML("a", "n1", "Failed", term, 0)
	fromMessage := func(r *Result) []*Finding {
		var fs []*Finding
		for _, f := range r.Findings {
			if len(f.Evidence) > 0 && strings.HasPrefix(f.Evidence[0].Text, "termination message: ") {
				fs = append(fs, f)
			}
		}
		return fs
	}
	for _, tc := range []struct {
		name string
		log  string // the log file, besides the pod; "" for none
		read bool   // the message is read
	}{
		{"no log at all", "", true},
		{"a log of another container of the pod", "logs/ml/a/sidecar.log", true},
		{"a log of the container itself", "logs/ml/a/c.log", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"resources/core/Pod/ml/a.yaml": pod}
			if tc.log != "" {
				files[tc.log] = "2026-03-14T10:01:00Z step 10 loss 2.1\n"
			}
			r := analyzeFiles(t, files)
			got := fromMessage(r)
			if !tc.read {
				require.Empty(t, got)
				require.NotNil(t, r.RootCause)
				require.Equal(t, "unknown/exit-code", r.RootCause.RuleID)
				return
			}
			require.Len(t, got, 1)
			require.NotNil(t, r.RootCause)
			require.Equal(t, CategoryCUDAOOM, r.RootCause.Category)
			require.Equal(t, "a", r.RootCause.Pod)
			require.Equal(t, "c", r.RootCause.Container)
			require.Equal(t, "termination message: "+oom, r.RootCause.Evidence[0].Text)
		})
	}
}
