package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNCCLBootstrapWithoutAnInterface: NCCL that finds no interface to bootstrap over fails
// its init; PyTorch wraps that as an "internal error" whose "Last error:" line says so. The
// user sees a rendezvous failure naming that line, not an NCCL internal error; an internal
// error whose last error names no cause of its own stays a collective error, and NCCL's
// bootstrap line of a run that trains is no failure.
func TestNCCLBootstrapWithoutAnInterface(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)

	// EvolvingLMMs-Lab/open-r1-multimodal#7 (NCCL_SOCKET_IFNAME=eth0 on a host without eth0).
	wrapped := "[rank0]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
		"[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2588, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5\n" +
		"[rank0]: ncclInternalError: Internal check failed.\n" +
		"[rank0]: Last error:\n" +
		"[rank0]: Bootstrap : no socket interface found\n"
	res := requireNamedByRule(t, all, wrapped, CategoryRendezvous, "rendezvous-failure/nccl-bootstrap-no-interface")
	require.Contains(t, res.RootCause.Evidence[0].Text, "Bootstrap : no socket interface found")

	// The same wrapper around a lost peer (NVIDIA/nccl#1092's title, NCCL 2.18's wording) stays
	// NCCL's error.
	other := "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1\n" +
		"ncclInternalError: Internal check failed.\n" +
		"Last error:\n"
	requireNamedByRule(t, all, other, CategoryCollectiveError, "collective-error/nccl-internal-error")

	healthy := "node1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.244.1.5<0>\n" +
		"node1:4242:4242 [0] NCCL INFO Using network Socket\n" + progress
	require.NotEqual(t, VerdictUnhealthy, analyzeLogs(t, all, healthy).Verdict)
}

// TestNCCLSkipsAnIBDeviceItCannotOpen: NCCL opens every IB device it lists and skips one it
// cannot open (a VF of another pod, a device not passed into the container), then uses the
// others or its socket transport: a run that trains after those WARNs is healthy. A verbs call
// on a device NCCL did open is still the transport's failure.
func TestNCCLSkipsAnIBDeviceItCannotOpen(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)

	// NCCL's wording (src/misc/ibvwrap.cc, src/transport/net_ib.cc); the class:
	// hustcat/k8s-rdma-device-plugin#8, openucx/ucx#6442.
	skipped := "worker-0:30:97 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n" +
		"worker-0:30:97 [0] transport/net_ib.cc:117 NCCL WARN NET/IB : Unable to open device mlx5_0\n" +
		"worker-0:30:97 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n" +
		"worker-0:30:97 [0] transport/net_ib.cc:117 NCCL WARN NET/IB : Unable to open device mlx5_1\n" +
		"worker-0:30:97 [0] NCCL INFO NET/IB : Using [0]mlx5_8:1/RoCE ; OOB eth0:10.233.99.245<0>\n" +
		"worker-0:30:97 [0] NCCL INFO Using network IB\n" + progress
	res := analyzeLogs(t, all, skipped)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)

	fellBack := "misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n" +
		"transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_bond_0\n" +
		"NCCL INFO NET/IB : No device found.\n" +
		"NCCL INFO Using network Socket\n" + progress
	res = analyzeLogs(t, all, fellBack)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)

	// NVIDIA/nccl#1129 (its title): creating the queue pair fails on the device NCCL opened.
	failed := "node08:6561:6561 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ibs3:10.252.0.211<0>\n" +
		"misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed\n"
	requireNamedByRule(t, all, failed, CategoryCollectiveError, "collective-error/nccl-net-transport")
}
