//go:build browser

package main

import (
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	titleRE    = regexp.MustCompile(`(?s)<title>(.*?)</title>`)
	warningsRE = regexp.MustCompile(`invalid YAML|does not decode`)
)

// TestHTMLReportRunsNoBundleScript renders the report of a bundle full of markup in headless
// Chromium: no planted script runs (the title stays the report's own), and no planted
// element exists in the DOM, with the page's Content-Security-Policy and without it.
func TestHTMLReportRunsNoBundleScript(t *testing.T) {
	chromium := chromiumPath(t)
	domOf := func(page string) string {
		out, _ := runChromium(t, chromium, "--dump-dom", "file://"+page)
		return out
	}
	title := func(page string) string {
		m := titleRE.FindStringSubmatch(page)
		require.NotNil(t, m, "a title")
		return html.UnescapeString(m[1]) // the text, however the browser serialises it
	}

	// The control: in this browser a script does change the title.
	dir := t.TempDir()
	control := filepath.Join(dir, "control.html")
	require.NoError(t, os.WriteFile(control, []byte(`<!DOCTYPE html><html><head><title>before</title></head><body><script>document.title='pwned'</script></body></html>`), 0o644))
	require.Equal(t, "pwned", title(domOf(control)), "scripts run in this headless Chromium")

	report := filepath.Join(dir, "report.html")
	code, _, stderr := run(t, "analyze", hostileMarkupBundle(t), "-o", report, "-q")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Contains(t, string(data), "Content-Security-Policy")
	noCSP := filepath.Join(dir, "report-no-csp.html")
	require.NoError(t, os.WriteFile(noCSP, regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAll(data, nil), 0o644))

	want := title(string(data))
	require.Contains(t, want, "</title><script>document.title='pwned-job'", "the job name is in the title, as text")
	for _, page := range []string{report, noCSP} {
		got := domOf(page)
		require.Equal(t, want, title(got), "%s: a planted script changed the title", filepath.Base(page))
		require.Empty(t, plantedElement.FindAllString(got, -1), "%s: planted markup became an element", filepath.Base(page))
		require.Empty(t, warningsRE.FindAllString(got, -1), "the bundle is valid: every object is read")
		require.Contains(t, got, "&lt;script&gt;document.title='pwned-log'&lt;/script&gt;", "and is shown as text")
		require.Contains(t, got, "CUDA out of memory", "the report is whole")
		for _, text := range []string{"pwned-pod", "pwned-node", "pwned-event'", "pwned-event-reason", "pwned-link", "pwned-condition", "pwned-evidence", "pwned-reason"} {
			require.Contains(t, got, text, "the planted text is shown")
		}
	}
}

// chromiumPath finds Chromium, or skips the test outside CI (.ci/run installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is needed for this test in CI: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the HTML escaping is still checked by TestReportsEscapeBundleText")
	return ""
}

// runChromium runs headless Chromium with a fresh profile and nothing of its own on the
// network that can be turned off, and returns its stdout and stderr.
func runChromium(t *testing.T, chromium string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "chromium %v: %s", args, errOut.String())
	return out.String(), errOut.String()
}
