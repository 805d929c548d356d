package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHighlighterMarksWhatTheQueryLooksFor: the highlighter reads the query with the search's
// own grammar, so it marks the words and prefixes searched for and nothing the query excludes,
// however the exclusion is written, nor field clauses.
func TestHighlighterMarksWhatTheQueryLooksFor(t *testing.T) {
	const on, off = "\x1b[1;30;43m", "\x1b[0m"
	for _, c := range []struct{ query, line, want string }{
		{"NCCL NOT (info OR debug)", "NCCL INFO debug: nccl", on + "NCCL" + off + " INFO debug: " + on + "nccl" + off},
		{"alloc* -gpu", "Allocated 2 GiB on gpu0 gpu", on + "Allocated" + off + " 2 GiB on gpu0 gpu"},
		{`"out of memory" pod:*worker-3`, "CUDA out of memory worker", "CUDA " + on + "out" + off + " " + on + "of" + off + " " + on + "memory" + off + " worker"},
	} {
		h := highlighter(c.query, "")
		require.NotNil(t, h, c.query)
		require.Equal(t, c.want, h(c.line), c.query)
	}
	require.Nil(t, highlighter("-info level:error", ""), "nothing to mark")
	require.Nil(t, highlighter(`"unclosed`, ""), "a query search refuses marks nothing")
}
