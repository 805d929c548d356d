package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A volume that does not mount is a wait to start; its cause is the storage when the storage
// does not answer, and the job's configuration when the volume is a Secret or ConfigMap that
// is missing.
func TestVolumeMountPaste(t *testing.T) {
	for _, tc := range []struct{ name, text, rule, reason string }{
		// https://github.com/kubernetes/kubernetes/issues/90079
		{"nfs server does not answer", "Mounting arguments: [/home/kubernetes/containerized_mounter/rootfs mount -t nfs <NFS IP>:/<PATH> /var/lib/kubelet/pods/f10b9de9-f159-4a67-ae4d-0f31e6b3d7a1/volumes/kubernetes.io~nfs/website-fs-files]\n" +
			"Output: mount.nfs: Connection timed out\n\n" +
			"  Warning  FailedMount  24s (x2 over 4m57s)  kubelet, gke-platform-dev-system-pool-46318f24-ww70  Unable to attach or mount volumes: unmounted volumes=[website-files], unattached volumes=[website-files default-token-fcc59]: timed out waiting for the condition\n",
			"storage-error/volume-mount-timeout", "pending for at least 4 min when the text was taken"},
		// https://github.com/kubernetes-sigs/nfs-subdir-external-provisioner/issues/75
		{"mount program fails", "  Warning  FailedMount  2m (x9 over 20m)  kubelet  MountVolume.SetUp failed for volume \"nfs-subdir-external-provisioner-root\" : mount failed: exit status 32\n",
			"storage-error/volume-mount-failed", "pending for 20 min"},
		// https://github.com/UffizziCloud/uffizzi_controller/issues/82
		{"disk still attached elsewhere", "Multi-Attach error for volume \"pvc-xxxx\" Volume is already exclusively attached to one node and can't be attached to another\n",
			"storage-error/volume-mount-failed", "could not be mounted"},
		// https://github.com/jaconi-io/helm-charts/issues/50, with the kubelet's summary of the
		// same wait: the summary says that it timed out, the secret's event says why.
		{"missing secret", "  Warning  FailedMount  98s (x1198 over 40h)  kubelet  MountVolume.SetUp failed for volume \"certs\" : secret \"coturn\" not found\n" +
			"  Warning  FailedMount  3m (x500 over 40h)  kubelet  Unable to attach or mount volumes: unmounted volumes=[certs], unattached volumes=[certs kube-api-access-7xq2k]: timed out waiting for the condition\n",
			"config-error/missing-secret-configmap", "pending for 40 h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireStuckPaste(t, tc.text, tc.rule, tc.reason)
		})
	}
}

// A pasted pod's events that show its container created after a start-up complaint (a
// volume, a node, an image) show a wait the pod got past; a crash loop after the start, or a
// complaint after it, or about another pod, is no such thing.
func TestStartupWaitEnded(t *testing.T) {
	// https://github.com/Azure/kubernetes-keyvault-flexvol/issues/68
	mounted := `Events:
  Type     Reason       Age   From                               Message
  ----     ------       ----  ----                               -------
  Normal   Scheduled    23s   default-scheduler                  Successfully assigned flexvoltest/nginx-flex-kv-podid to aks-agentpool-11854310-5
  Warning  FailedMount  22s   kubelet, aks-agentpool-11854310-5  MountVolume.SetUp failed for volume "test" : mount command failed, status: Failure, reason: /etc/kubernetes/volumeplugins/azure~kv/azurekeyvault-flexvolume failed, failed to get key vault
  Normal   Pulling      16s   kubelet, aks-agentpool-11854310-5  pulling image "nginx"
  Normal   Pulled       15s   kubelet, aks-agentpool-11854310-5  Successfully pulled image "nginx"
  Normal   Created      14s   kubelet, aks-agentpool-11854310-5  Created container
  Normal   Started      14s   kubelet, aks-agentpool-11854310-5  Started container
`
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, mounted)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	}
	res := analyzeLogs(t, all, mounted)
	require.Contains(t, findingsOf(res), "storage-error/volume-mount-failed warning")

	for _, tc := range []struct{ name, text, category string }{
		// The events of tarantool/tarantool-operator#88's guide, the crash loop's start first.
		{"a crash loop after the start", `  Normal   Created           37m (x5 over 39m)      kubelet, minikube  Created container pim-storage
  Normal   Started           37m (x5 over 39m)      kubelet, minikube  Started container pim-storage
  Warning  BackOff           4m25s (x157 over 38m)  kubelet, minikube  Back-off restarting failed container
`, "user-code-error"},
		// The complaint comes after the creation: the volume of a later start.
		{"a mount after the start", strings.Join(strings.Split(mounted, "\n")[6:10], "\n") + "\n" + strings.Split(mounted, "\n")[4] + "\n", "storage-error"},
		// kubectl get events of a namespace: another pod's container started.
		{"another pod's start", `9m32s       Warning   FailedMount   pod/trainer-0   MountVolume.SetUp failed for volume "data" : mount failed: exit status 32
9m28s       Normal    Started       pod/loader-1    Started container loader
`, "storage-error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.text)
			require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
			require.Equal(t, Category(tc.category), res.RootCause.Category, findingsOf(res))
		})
	}
}

// A SIGTERM the job's own launcher sends is its teardown after another failure, not the
// scheduler taking the pod away: the second tier does not call it a preemption.
func TestLauncherSIGTERMIsNoPreemption(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// https://github.com/pytorch/pytorch/issues/88251
	log := "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 59460 closing signal SIGTERM\n" +
		"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 59461 closing signal SIGTERM\n" +
		"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 59462 closing signal SIGTERM\n" +
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 5 (pid: 59469) of binary: /home/user/.\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict)
		require.NotEqual(t, CategoryPreemptedEvicted, res.RootCause.Category, findingsOf(res))
	}
}
