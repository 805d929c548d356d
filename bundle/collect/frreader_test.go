package collect

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestReadLocalDumps: what a reader pod prints of a claim: each dump <prefix><rank> as a line
// NAME BASE64 (any byte survives), sorted, a dump over the bound as NAME !over N bytes, and
// nothing of other files, directories or the bare prefix.
func TestReadLocalDumps(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	pickle := []byte{0x80, 0x02, '\n', 0x00, 0xff, '}', '.'}
	write("trace_rank_10", pickle)
	write("trace_rank_2", pickle[:3])
	write("trace_rank_3", bytes.Repeat([]byte{1}, 100))
	write("trace_rank_", pickle)
	write("notes.txt", pickle)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "trace_rank_4"), 0o755))

	var out bytes.Buffer
	require.NoError(t, ReadLocalDumps(t.Context(), filepath.Join(dir, "trace_rank_"), 64, &out))
	require.Equal(t, []string{
		"trace_rank_10 " + base64.StdEncoding.EncodeToString(pickle),
		"trace_rank_2 " + base64.StdEncoding.EncodeToString(pickle[:3]),
		"trace_rank_3 !over 64 bytes",
	}, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"))

	require.Error(t, ReadLocalDumps(t.Context(), filepath.Join(dir, "none", "trace_rank_"), 64, &out))
}

// TestDumpClaim: the claim that holds a dump prefix is the deepest mount above it, and only a
// PersistentVolumeClaim counts (an emptyDir went with the pod).
func TestDumpClaim(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "fr", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fr-dumps"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}}
	c := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "data", MountPath: "/mnt"}, {Name: "fr", MountPath: "/mnt/fr/", SubPath: "job-1"}, {Name: "scratch", MountPath: "/scratch"}}}
	claim, m, ok := dumpClaim(p, c, "/mnt/fr/trace_rank_")
	require.True(t, ok)
	require.Equal(t, "fr-dumps", claim)
	require.Equal(t, "job-1", m.SubPath)
	claim, _, ok = dumpClaim(p, c, "/mnt/other/trace_rank_")
	require.True(t, ok)
	require.Equal(t, "data", claim)
	_, _, ok = dumpClaim(p, c, "/scratch/trace_rank_")
	require.False(t, ok)
	_, _, ok = dumpClaim(p, c, "/tmp/trace_rank_")
	require.False(t, ok)
}
