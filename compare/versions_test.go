package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionPatterns: every pattern reads the public log lines it was written from, and
// lines that only look like a version are not read.
func TestVersionPatterns(t *testing.T) {
	read := map[string]bool{}
	for _, ex := range versionPatternExamples {
		vs := map[string]map[string]bool{}
		require.True(t, mayHaveVersion([]byte(strings.ToLower(ex.line))), ex.line)
		readVersions([]byte(ex.line), vs)
		assert.True(t, vs[ex.component][ex.version], "%s (%s): got %v", ex.line, ex.source, vs)
		read[ex.component] = true
	}
	for _, p := range versionPatterns {
		assert.True(t, read[p.component], "%s has no example", p.component)
	}
	for _, line := range []string{
		"kubectl version --client",
		"Python version: 3.10.12",
		"found version mismatch in checkpoint, re-reading",
		"Requirement already satisfied: torch in /usr/lib/python3/dist-packages",
	} {
		vs := map[string]map[string]bool{}
		readVersions([]byte(line), vs)
		assert.Empty(t, vs, line)
	}
}

// TestNewNCCLRanksFirst: two runs of the sample whose logs print the same driver but another
// NCCL (the sample's master prints "NCCL version 2.20.5+cuda12.4"; run b's says 2.21.5): the
// NCCL version is the first change of the spec, "Master version nccl", with both values; the
// driver both print and the DeepSpeed version the sample prints are no change.
func TestNewNCCLRanksFirst(t *testing.T) {
	dir := t.TempDir()
	for run, nccl := range map[string]string{"a": "2.20.5+cuda12.4", "b": "2.21.5+cuda12.4"} {
		copyWithEnv(t, "testdata/good", filepath.Join(dir, run), "NCCL_DEBUG_SUBSYS", "INIT")
		log := filepath.Join(dir, run, "logs", "ml", "alpaca-sft-0313-master-0", "pytorch.log")
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		s := strings.Replace(string(data), "NCCL version 2.20.5+cuda12.4", "NCCL version "+nccl, 1)
		first, rest, _ := strings.Cut(s, "\n")
		ts, _, _ := strings.Cut(first, " ")
		smi := ts + " | NVIDIA-SMI 535.104.05             Driver Version: 535.104.05     CUDA Version: 12.2     |\n"
		require.NoError(t, os.WriteFile(log, []byte(first+"\n"+smi+rest), 0o644))
	}
	r := diff(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	spec := r.Section(SectionSpec)
	require.Len(t, spec, 1, "%v", titles(spec))
	assert.Equal(t, "version", spec[0].Kind)
	assert.Equal(t, "Master version nccl", spec[0].Path)
	assert.Equal(t, "2.20.5+cuda12.4", spec[0].Good)
	assert.Equal(t, "2.21.5+cuda12.4", spec[0].Bad)
	assert.Equal(t, spec[0], r.Top(), "the first change outside the diagnoses")
	assert.Greater(t, spec[0].Score, specScore["command"], "a new NCCL ranks above a new command line")
	assert.Less(t, spec[0].Score, specScore["image"], "and below a new image, which usually brings it")
}
