package diagnose

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/report"
)

// maskedBoth diagnoses the log of lines (then a CUDA OOM, the root cause, and a few lines) with its secrets kept and a Carry visitor in the scan, then
// masks two copies of the report: with the Carry (the lead of a window with no line that may
// begin a secret cut to one line) and without (every window read with its whole lead). It
// returns both as JSON, the Carry and the report as it was before masking.
func maskedBoth(t *testing.T, lines []string) (fast, slow []byte, carry *Carry, rep *report.Report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "train.log")
	lines = append(lines, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
	lines = append(lines, ordinary(5)...)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	probe, err := redact.New(redact.Options{})
	require.NoError(t, err)
	d, err := Run(t.Context(), Input{Paths: []string{path}}, Options{Rules: builtin(t), Limits: bundle.DefaultLimits(), KeepSecrets: true})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	// What Run's own scan sees when it masks: a Carry, here in a scan of its own.
	c := NewCarry(probe, d.Model.Logs)
	_, err = logscan.ScanAll(t.Context(), d.Bundle.FS, d.Model.Logs, logscan.AllOptions{MaxLine: 1 << 20, Visitors: []logscan.Visitor{c}})
	require.NoError(t, err)
	orig, err := json.Marshal(d.Report)
	require.NoError(t, err)
	masked := func(ws *WindowMasker) []byte {
		var r report.Report
		require.NoError(t, json.Unmarshal(orig, &r))
		_, err := redactReport(t.Context(), &r, d.Bundle, ws, probe, nil, "")
		require.NoError(t, err)
		out, err := json.Marshal(&r)
		require.NoError(t, err)
		return out
	}
	return masked(&WindowMasker{Index: d.Index, Carry: c}), masked(&WindowMasker{Index: d.Index}), c, d.Report
}

// ordinary is n lines of a training log with nothing that may begin a secret.
func ordinary(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("[rank0] step=%d loss=%.4f lr=1.0e-04 grad_norm=0.87 tokens_per_sec=31000", i, 2+float64(i%97)/100)
	}
	return out
}

// A private key that begins far above an evidence window (its BEGIN line 60 lines above the
// window, its body and END line in it) is masked as in the whole log: the log holds lines
// that may begin a secret, so the window is masked with its whole lead.
func TestWindowKeyAbove(t *testing.T) {
	rnd := rand.New(rand.NewPCG(22, 28))
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var body []string
	for range 60 {
		var l strings.Builder
		for range 64 {
			l.WriteByte(b64[rnd.IntN(len(b64))])
		}
		body = append(body, l.String())
	}
	lines := append(ordinary(300), "-----BEGIN RSA PRIVATE KEY-----")
	lines = append(lines, body...)
	fast, slow, carry, rep := maskedBoth(t, append(lines, "-----END RSA PRIVATE KEY-----"))
	require.Equal(t, string(slow), string(fast))
	e := rep.RootCause.Evidence[0]
	require.Equal(t, body[len(body)-3], e.Before[0].Text, "the window starts in the key's body (unmasked report)")
	require.False(t, carry.none(e.File, e.Before[0].Line-redact.WindowLead, e.Before[0].Line-1), "the key's lines may begin a secret")
	for _, l := range body {
		require.NotContains(t, string(fast), l)
	}
	require.Contains(t, string(fast), "REDACTED:private-key")
}

// A log with no line that may begin a secret takes the fast path (one line read above each
// window), and its report is masked to the same bytes as with every window's whole lead: a
// token wrapped from the line above into the window, and one in the window, are masked.
func TestWindowNoCarry(t *testing.T) {
	lines := append(ordinary(300), "export HF_TOKEN=hf_AbCdEfGhIjKlMn", "OpQrStUvWxYz0123456789 set",
		"export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "[rank0] saving", "[rank0] saved")
	fast, slow, carry, rep := maskedBoth(t, lines)
	require.Equal(t, string(slow), string(fast))
	e := rep.RootCause.Evidence[0]
	first := e.Before[0].Line
	require.True(t, carry.none(e.File, first-redact.WindowLead, first-1), "no line above the window may begin a secret")
	require.Equal(t, "OpQrStUvWxYz0123456789 set", e.Before[0].Text, "the wrapped token's end is the window's first line")
	for _, s := range []string{"OpQrStUvWxYz0123456789", "hf_AbCd", "0123456789abcdef0123456789abcdef01234567"} {
		require.NotContains(t, string(fast), s)
	}
}
