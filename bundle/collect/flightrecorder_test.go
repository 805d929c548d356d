package collect

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/frtrace"
)

// fakeContainer is the edge this test cannot run (a kubelet executing in a container): a
// running container's files, served to the fixed argv collect sends.
type fakeContainer struct {
	files map[string][]byte
	calls [][]string
}

func (f *fakeContainer) exec(_ context.Context, _, _, _ string, argv []string, stdout io.Writer) error {
	f.calls = append(f.calls, argv)
	switch {
	case len(argv) == 4 && argv[0] == "ls" && argv[1] == "-1" && argv[2] == "--":
		var names []string
		for p := range f.files {
			if path.Dir(p) == argv[3] {
				names = append(names, path.Base(p))
			}
		}
		sort.Strings(names)
		_, err := io.WriteString(stdout, strings.Join(names, "\n")+"\n")
		return err
	case len(argv) == 3 && argv[0] == "cat" && argv[1] == "--":
		data, ok := f.files[argv[2]]
		if !ok {
			return io.ErrUnexpectedEOF
		}
		_, err := stdout.Write(data)
		return err
	}
	return io.ErrUnexpectedEOF
}

func frPod(name string, running bool) *podInfo {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Env: []corev1.EnvVar{
			{Name: "TORCH_FR_DUMP_TEMP_FILE", Value: "/fr/trace_rank_"}}}, {Name: "sidecar"}}}}
	st := corev1.ContainerStatus{Name: "pytorch"}
	if running {
		st.State.Running = &corev1.ContainerStateRunning{}
	} else {
		st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	return &podInfo{pod: p}
}

// TestCollectFlightRecords: the dumps named by the container's TORCH_FR_DUMP_TEMP_FILE are
// read with a fixed argv, written as JSON under flightrecorder/ and read back as the
// pickles were; a terminated container, a dump over the limit and a denied exec are gaps.
func TestCollectFlightRecords(t *testing.T) {
	pickles, err := filepath.Glob("../../frtrace/testdata/tutorial/nccl_trace_rank_*")
	require.NoError(t, err)
	require.Len(t, pickles, 2)
	fc := &fakeContainer{files: map[string][]byte{"/fr/checkpoint.pt": []byte("not a dump"), "/fr/trace_rank_huge9": make([]byte, 4096)}}
	for i, p := range pickles {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		fc.files["/fr/trace_rank_"+string(rune('0'+i))] = data
	}
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	w, err := bundle.NewWriter(out)
	require.NoError(t, err)
	denied := func(ctx context.Context, ns, pod, c string, argv []string, stdout io.Writer) error {
		if pod == "denied" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, pod, nil)
		}
		return fc.exec(ctx, ns, pod, c, argv, stdout)
	}
	col := &collector{opts: Options{Exec: denied, MaxFlightRecordBytes: 2048}, written: map[string]bool{}, w: w}
	col.flightRecords(t.Context(), []*podInfo{frPod("train-0", true), frPod("gone", false), frPod("denied", true)})
	require.NoError(t, w.Close(&bundle.Manifest{FormatVersion: bundle.FormatVersion}))

	var gaps []string
	for _, g := range col.gaps {
		gaps = append(gaps, g.Object+": "+g.Message)
	}
	require.Len(t, gaps, 3, "%q", gaps)
	require.Contains(t, gaps[0], "trace_rank_huge9 is over 2048 bytes: not kept")
	require.Contains(t, gaps[1], "pod/gone container pytorch: not running")
	require.Contains(t, gaps[2], "pod/denied container pytorch: flight recorder dumps /fr/trace_rank_*: forbidden")
	for _, c := range fc.calls {
		require.Contains(t, []string{"ls", "cat"}, c[0], "a fixed argv, never a shell")
	}

	b, err := bundle.Open(t.Context(), out, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	frs, warnings := bundle.FlightRecords(b)
	require.Empty(t, warnings)
	require.Len(t, frs, 2)
	var dumps []frtrace.RankDump
	for _, fr := range frs {
		require.Equal(t, "train-0", fr.Pod)
		f, err := b.FS.Open(fr.Path)
		require.NoError(t, err)
		data, err := io.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, byte('{'), data[0], "written as JSON, to be redacted as text")
		d, err := frtrace.Decode(data, frtrace.DefaultLimits())
		require.NoError(t, err)
		rank, _ := frtrace.RankFromName(fr.Name)
		dumps = append(dumps, frtrace.RankDump{Rank: rank, Dump: d})
	}
	a := frtrace.Match(dumps)
	require.Len(t, a.Problems, 1)
	require.Equal(t, frtrace.Missing, a.Problems[0].Kind)
	require.Equal(t, []int{1}, a.Problems[0].Ranks)
}
