package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLevelZeroOutOfDeviceMemory: an Intel GPU whose memory runs out says so in Level Zero's
// status, wherever it surfaces (oneCCL's worker, the SYCL runtime under an abort): the process's
// abort is the symptom and device memory the cause, with all tiers and with the second alone.
func TestLevelZeroOutOfDeviceMemory(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		// The status as open-edge-platform/physical-ai-studio#440 prints it.
		progress + "terminate called after throwing an instance of 'sycl::_V1::exception'\n" +
			"  what():  Enqueue process failed.\n" +
			"level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)\n" +
			"Fatal Python error: Aborted\n",
		// oneCCL's worker reporting it inside a collective (the driver's status, as
		// intel/compute-runtime#984 names it).
		progress + "2024:05:29-19:16:18:(202165) |CCL_ERROR| worker.cpp:338 ccl_worker_func: worker 0 caught internal exception: " +
			"oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at zeCommandQueueExecuteCommandLists, code: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\n" +
			"terminate called after throwing an instance of 'ccl::v1::exception'\n",
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.RootCause.Title)
		}
	}
}
