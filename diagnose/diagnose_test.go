package diagnose

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

func builtin(t *testing.T) *analyze.RuleSet {
	t.Helper()
	rs, err := BuiltinRules()
	require.NoError(t, err)
	return rs
}

// TestRun: one call from an input to a redacted report, for a bundle and for plain logs; the
// rule set can be handed in or loaded while the input is read.
func TestRun(t *testing.T) {
	ctx := t.Context()
	d, err := Run(ctx, Input{Paths: []string{"../samples/pytorchjob-cuda-oom-rank"}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits()})
	require.NoError(t, err)
	require.Equal(t, analyze.VerdictUnhealthy, d.Result.Verdict)
	require.NotNil(t, d.Report.RootCause)
	require.Equal(t, "cuda-oom", string(d.Report.RootCause.Category))
	require.NoError(t, d.Close())

	log := filepath.Join(t.TempDir(), "train.log")
	secret := "hf_" + strings.Repeat("Ab3", 12)
	require.NoError(t, os.WriteFile(log, []byte("step 10 loss 2.1\nexport HF_TOKEN="+secret+"\n"+
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"), 0o644))
	loads := 0
	d, err = Run(ctx, Input{Paths: []string{log}}, Options{Limits: bundle.DefaultLimits(),
		LoadRules: func() (*analyze.RuleSet, error) { loads++; return builtin(t), nil }})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 1, loads)
	require.Equal(t, "cuda-oom", string(d.Report.RootCause.Category))
	require.Positive(t, d.Masked, "the token in the evidence's window is masked")
	for _, e := range d.Report.RootCause.Evidence {
		for _, l := range e.Before {
			require.NotContains(t, l.Text, secret)
		}
	}
}

// TestRunErrors: nothing to diagnose, or no rules, is an error naming the input, and nothing is
// left open.
func TestRunErrors(t *testing.T) {
	ctx := t.Context()
	empty := filepath.Join(t.TempDir(), "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err := Run(ctx, Input{Paths: []string{empty}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits()})
	require.ErrorContains(t, err, empty+": 0 lines read")

	_, err = Run(ctx, Input{Paths: []string{"../samples/pytorchjob-cuda-oom-rank", empty}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits()})
	var ue *UsageError
	require.True(t, errors.As(err, &ue), "a bundle among log files is a usage mistake: %v", err)

	_, err = Run(ctx, Input{Paths: []string{empty}}, Options{Limits: bundle.DefaultLimits()})
	require.ErrorContains(t, err, "no rule set")

	broken := errors.New("rules/x.yaml: line 3: unknown field")
	_, err = Run(ctx, Input{Paths: []string{empty}}, Options{Limits: bundle.DefaultLimits(),
		LoadRules: func() (*analyze.RuleSet, error) { return nil, broken }})
	require.ErrorIs(t, err, broken, "a rule file's error comes before the input's")
}

// TestRunIndexLifetime: the index is written and opened once the report is made (its heads
// are not held through the analysis): the report's evidence still has its context lines,
// the diagnosis answers windows until Close, and neither a diagnosis that fails after the
// scan nor a closed one leaves its private index behind.
func TestRunIndexLifetime(t *testing.T) {
	ctx := t.Context()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	private := func() []string {
		t.Helper()
		dirs, err := filepath.Glob(filepath.Join(tmp, "coroner-index-*"))
		require.NoError(t, err)
		return dirs
	}
	d, err := Run(ctx, Input{Paths: []string{"../samples/pytorchjob-cuda-oom-rank"}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits()})
	require.NoError(t, err)
	require.NotNil(t, d.Index)
	require.Len(t, private(), 1)
	ev := d.Report.RootCause.Evidence[0]
	require.NotEmpty(t, ev.Before, "the root cause's evidence has the lines before it")
	lines, err := d.Index.Window(ev.File, ev.Line, 1, 0)
	require.NoError(t, err)
	require.Len(t, lines, 2)
	require.Nil(t, d.Result.Findings, "the report holds the findings")
	require.Len(t, d.Result.Logs, len(d.Report.Logs))
	require.NoError(t, d.Close())
	require.Empty(t, private(), "Close removes the private index")

	empty := filepath.Join(t.TempDir(), "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = Run(ctx, Input{Paths: []string{empty}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits()})
	require.ErrorContains(t, err, "0 lines read")
	require.Empty(t, private(), "a failed diagnosis removes its private index")
}

// TestReferencesAreTyped: the report says where its verdict points and which object each
// piece of evidence and each event is about as data, so a consumer (diff, watch's Event, an
// agent) never parses a sentence back. A plain log is named by its file, in the sentence and
// in the place.
func TestReferencesAreTyped(t *testing.T) {
	ctx := t.Context()
	d, err := Run(ctx, Input{Paths: []string{"../samples/pytorchjob-cuda-oom-rank"}}, DefaultOptions())
	require.NoError(t, err)
	defer d.Close()
	at := d.Report.VerdictAt
	require.NotNil(t, at)
	require.Equal(t, "train-job-worker-4", at.Pod)
	require.Equal(t, "pytorch", at.Container)
	require.NotNil(t, at.Rank)
	require.Equal(t, 5, *at.Rank)
	require.Contains(t, d.Report.VerdictReason, " in "+at.Pod+"/"+at.Container+", rank 5")
	objects := 0
	for _, f := range d.Report.Findings {
		for _, e := range f.Evidence {
			if e.Source == analyze.SourceLog {
				require.Nil(t, e.ObjectRef, "%s: a log line has no object", f.ID)
				continue
			}
			require.NotNil(t, e.ObjectRef, "%s: %s evidence names its object", f.ID, e.Source)
			require.Equal(t, e.ObjectRef.String(), e.Object)
			objects++
		}
	}
	require.Positive(t, objects)
	require.NotEmpty(t, d.Report.Events)
	for _, e := range d.Report.Events {
		require.NotEmpty(t, e.ObjectRef.Kind)
		require.Equal(t, e.ObjectRef.String(), e.Object)
	}

	log := filepath.Join(t.TempDir(), "rank3.log")
	require.NoError(t, os.WriteFile(log, []byte("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"), 0o644))
	p, err := Run(ctx, Input{Paths: []string{log}}, DefaultOptions())
	require.NoError(t, err)
	defer p.Close()
	require.Equal(t, "rank3.log", p.Report.VerdictAt.File)
	require.Contains(t, p.Report.VerdictReason, " in rank3.log")
	require.NotContains(t, p.Report.VerdictReason, p.Report.VerdictAt.Pod+"/")
}

// TestAbandonWithCache: an index left unfinished (the analysis failed) is dropped, not taken
// for a cache that cannot be written: no warning, no second scan into a private index.
func TestAbandonWithCache(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	b, err := Open(t.Context(), []string{"../samples/pytorchjob-cuda-oom-rank"}, nil, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	m, err := parse.Load(b)
	require.NoError(t, err)
	var warned []string
	opts := Options{Cache: &index.Cache{Dir: filepath.Join(t.TempDir(), "cache")},
		Log: func(format string, args ...any) { warned = append(warned, fmt.Sprintf(format, args...)) }}
	_, pending, _, err := scan(t.Context(), m, builtin(t), nil, opts)
	require.NoError(t, err)
	pending.abandon()
	require.Empty(t, warned)
	private, err := filepath.Glob(filepath.Join(tmp, "coroner-index-*"))
	require.NoError(t, err)
	require.Empty(t, private, "an abandoned index is not built again privately")
}
