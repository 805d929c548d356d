package bundle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogStreamsNamesEachLogByItsPath: a log's namespace, pod and container are its path's
// parts; a file under logs/ at any other depth, or not ending in .log, is skipped and named.
func TestLogStreamsNamesEachLogByItsPath(t *testing.T) {
	b := &Bundle{Files: []File{
		{Path: "logs/ml/w-0/trainer.log", Size: 3},
		{Path: "logs/ml/w-0/trainer.previous.log", Size: 4},
		{Path: "logs//w-1/x.log"},
		{Path: "logs/ml/w-0/sub/deep.log"},
		{Path: "logs/ml/w-0.log"},
		{Path: "logs/ml/w-0/notes.txt"},
		{Path: "resources/pods.yaml"},
	}}
	logs, warnings := LogStreams(b)
	require.Equal(t, []LogStream{
		{Path: "logs/ml/w-0/trainer.log", Namespace: "ml", Pod: "w-0", Container: "trainer", Size: 3},
		{Path: "logs/ml/w-0/trainer.previous.log", Namespace: "ml", Pod: "w-0", Container: "trainer", Previous: true, Size: 4},
		{Path: "logs//w-1/x.log", Namespace: "", Pod: "w-1", Container: "x"},
	}, logs)
	require.Equal(t, []string{
		"logs/ml/w-0/sub/deep.log: not at logs/<namespace>/<pod>/<container>.log; skipped",
		"logs/ml/w-0.log: not at logs/<namespace>/<pod>/<container>.log; skipped",
		"logs/ml/w-0/notes.txt: not at logs/<namespace>/<pod>/<container>.log; skipped",
	}, warnings)
}
