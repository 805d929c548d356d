package analyze

import (
	"testing"
	"time"

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
			res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": tc.text}, time.Time{}, Options{})
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, tc.rule, res.RootCause.RuleID, findingsOf(res))
			require.Contains(t, res.VerdictReason, tc.reason)
		})
	}
}
