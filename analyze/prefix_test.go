package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitPrefix: each launcher's prefix is taken off and names its process; text that only
// looks like one stays whole.
func TestSplitPrefix(t *testing.T) {
	tests := []struct {
		line, rest, stream string
		rank               int
	}{
		{"[rank3]: RuntimeError: boom", "RuntimeError: boom", "rank 3", 3},
		{"[default0]:Traceback (most recent call last):", "Traceback (most recent call last):", "local rank 0", -1},
		{"[1,3]<stderr>: MPI_ABORT was invoked", "MPI_ABORT was invoked", "rank 3", 3},
		{"(RayTrainWorker pid=123, ip=10.0.0.1) ValueError: x", "ValueError: x", "pid 123", -1},
		{"10: torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", "rank 10", 10},
		{"trainer-1  | ModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'", "trainer-1", -1},
		{"> [1,2]<stdout>: NCCL WARN x", "NCCL WARN x", "rank 2", 2},
		{"[rank5000]: boom", "boom", "rank 5000", 5000},
		{"worker-1: ModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'", "worker-1", -1},
		{"10.0.0.7: [rank3]: RuntimeError: boom", "RuntimeError: boom", "rank 3", 3},
		// Not prefixes.
		{"step 3 | loss 2.1 | lr 1e-4", "step 3 | loss 2.1 | lr 1e-4", "", -1},
		{"epoch 1 |  loss 2.1", "epoch 1 |  loss 2.1", "", -1},
		{"[2026-03-14 10:00:00] INFO start", "[2026-03-14 10:00:00] INFO start", "", -1},
		{"12345678: not a rank", "12345678: not a rank", "", -1},
		{"torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", "", -1},
		{"cuda-12.1: installed", "cuda-12.1: installed", "", -1},
		{"1.2.3: version", "1.2.3: version", "", -1},
	}
	for _, tt := range tests {
		rest, p := splitPrefix([]byte(tt.line))
		require.Equal(t, tt.rest, string(rest), tt.line)
		require.Equal(t, tt.stream, p.stream, tt.line)
		require.Equal(t, tt.rank, p.rank, tt.line)
	}
}
