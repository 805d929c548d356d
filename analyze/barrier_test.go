package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The store-based barrier of init_process_group waits until as many processes as the world
// size have registered. More than the world size is a launch that can never start (two jobs
// on one store, a script that spawns under a launcher that already did): the report names the
// configuration at once. Fewer is a rank still on its way, which a log alone cannot time: the
// verdict stays unknown rather than calling a start in progress unhealthy.
func TestStoreBarrierCount(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// Lines in the format of torch.distributed's _store_based_barrier, as
	// https://github.com/ultralytics/yolov5/issues/4409 shows them.
	wait := func(world, joined string) string {
		return strings.Repeat("Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size="+
			world+", worker_count="+joined+", timeout=0:30:00)\n", 3)
	}

	res := analyzeLogs(t, all, wait("4", "8"))
	require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	require.Equal(t, "config-error/store-barrier-oversubscribed", res.RootCause.RuleID)
	require.Equal(t, "8 processes joined a process group of world size 4", res.RootCause.Title)

	// https://github.com/tczhangzhi/pytorch-distributed/issues/18: the barrier's timeout with
	// four processes for a world of two names the configuration, not a rank that never came.
	res = analyzeLogs(t, all, "RuntimeError: Timed out initializing process group in store based barrier on rank: 2, for key: store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)\n")
	require.Equal(t, CategoryConfigError, res.RootCause.Category, findingsOf(res))

	for _, joined := range []string{"7", "8"} {
		res = analyzeLogs(t, all, wait("8", joined))
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	}
}
