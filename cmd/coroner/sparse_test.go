package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// Issue 22: a tarball of a few hundred bytes whose entry is a GNU sparse file, one hole,
// made archive/tar write its size in zeros to $TMPDIR on every run (the gzip stream inflates
// to kilobytes, so --max-expansion never tripped). Every command that reads a tarball refuses
// it in one line, naming the bundle and the entry, and writes nothing big.
func TestSparseTarballRefused(t *testing.T) {
	const size = 200 << 20 // under the default limits; what the old code wrote on each run
	for _, form := range samplegen.SparseForms {
		t.Run(form, func(t *testing.T) {
			gz, err := samplegen.SparseTarGz([]samplegen.TarFile{
				{Name: "manifest.json", Data: hostileManifest},
				{Name: "resources/core/Pod/ml/p.yaml", Data: hostilePod},
				{Name: "logs/ml/p/c.log", Data: oomLine},
			}, "logs/ml/p/hole.log", form, size)
			require.NoError(t, err)
			require.Less(t, len(gz), 2048)
			p := filepath.Join(t.TempDir(), "sparse.tar.gz")
			require.NoError(t, os.WriteFile(p, gz, 0o644))
			want := p + ": logs/ml/p/hole.log: tar entry is a sparse file"
			for _, args := range [][]string{
				{"analyze", p},
				{"redact", p, "-o", filepath.Join(t.TempDir(), "out.tar.gz")},
				{"search", p, "memory", "--no-cache"},
			} {
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				stop := samplegen.PeakSize(tmp)
				requireExit(t, 1, want, args...)
				require.Less(t, stop(), int64(1<<20), "%v wrote to TMPDIR", args)
			}
		})
	}
}
