package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// maxMarkdown is what a report must stay under to fit a GitHub issue comment (65,536
// characters) with room for the ticket's own words.
const maxMarkdown = 60000

// generated writes a samplegen bundle of ranks pods (one rank out of GPU memory, the others
// timing out in NCCL) with about 8 KiB of log per rank.
func generated(t *testing.T, ranks int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, samplegen.Generate(dir, ranks, int64(ranks)*8<<10, 1))
	return dir
}

// TestReportsAtScale: at 8, 64 and 1,024 ranks the Markdown fits a ticket and renders as
// GitHub renders it, the picture folds identical lanes and keeps the root cause's, and the
// summary stays a screen. Generating 1,024 pods takes seconds: not with -short.
func TestReportsAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("generates bundles of 64 and 1,024 pods")
	}
	for _, tt := range []struct {
		ranks  int
		bundle func(t *testing.T) string
		folded string // the text chart's folded lane
		root   string
	}{
		{8, func(*testing.T) string { return filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank") }, "6 ranks", "worker-4"},
		{64, func(t *testing.T) string { return generated(t, 64) }, "62 ranks", "worker-36"},
		{1024, func(t *testing.T) string { return generated(t, 1024) }, "1,022 ranks", "worker-36"},
	} {
		t.Run(strconv.Itoa(tt.ranks), func(t *testing.T) {
			b := tt.bundle(t)
			cache := t.TempDir()
			analyzeTo := func(format string, extra ...string) string {
				return requireExit(t, exitOK, "", append([]string{"analyze", b, "--format", format, "--cache-dir", cache}, extra...)...)
			}
			md := analyzeTo("md")
			require.Less(t, len(md), maxMarkdown, "the Markdown fits a ticket comment")
			checkGitHubMarkdown(t, md)
			full := analyzeTo("md", "--full")
			require.GreaterOrEqual(t, len(full), len(md))
			checkGitHubMarkdown(t, full)

			summary := analyzeTo("text")
			require.Contains(t, summary, "\n  "+tt.folded+" ")
			require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(tt.root)+` +.*✖.*CUDA out of memory at .* \(root cause\)`, summary)
			require.Less(t, strings.Count(summary, "\n"), 30, "the summary is a screen:\n%s", summary)

			page := analyzeTo("html")
			require.Contains(t, page, `<figure class="lanes" id="swimlanes">`)
			require.Contains(t, page, `class="lab rootlab">`+tt.root+`<`)
			require.Regexp(t, `first failure [0-9:]+ · `+regexp.QuoteMeta(tt.root), page)
			lanes := strings.Count(page, `class="lab`)
			require.LessOrEqual(t, lanes, 40, "identical lanes fold")
			t.Logf("%d ranks: Markdown %d bytes (--full %d), HTML %d bytes, %d lanes drawn", tt.ranks, len(md), len(full), len(page), lanes)
		})
	}
}

// checkGitHubMarkdown renders Markdown as GitHub does (GFM tables, raw HTML such as
// <details> passed through) and checks its structure: every table is a table, every fence
// a code block, every fold closed, one title.
func checkGitHubMarkdown(t *testing.T, md string) {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	require.NoError(t, gm.Convert([]byte(md), &out))
	h := out.String()
	tables := len(regexp.MustCompile(`(?m)^\|[-:|]+\|$`).FindAllString(md, -1))
	require.Equal(t, tables, strings.Count(h, "<table>"), "every Markdown table renders as a table")
	require.NotRegexp(t, `<p>\|`, h, "no table is left as text")
	fences := len(regexp.MustCompile("(?m)^```+text$").FindAllString(md, -1))
	require.Equal(t, fences, strings.Count(h, `<pre><code class="language-text">`), "every fence renders as a code block")
	require.Equal(t, strings.Count(h, "<details>"), strings.Count(h, "</details>"))
	require.Equal(t, 1, strings.Count(h, "<h1>"))
	// The folds hold Markdown, not raw text: a table inside a fold is rendered.
	if i := strings.Index(h, "<details>"); i >= 0 && strings.Contains(md[strings.Index(md, "<details>"):], "|---") {
		require.Contains(t, h[i:], "<table>")
	}
}

// TestMarkdownWithHugeLines: log lines of hundreds of kilobytes (a tensor dump in an error
// message, around it) do not blow the Markdown past a ticket, --full included.
func TestMarkdownWithHugeLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "train.log")
	dump := strings.Repeat("tensor([0.1234, ", 20000)
	require.NoError(t, os.WriteFile(log, []byte("step 1 "+dump+"\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "+dump+"\n"), 0o644))
	for _, full := range []string{"--full=false", "--full"} {
		md := requireExit(t, exitOK, "", "analyze", log, "--format", "md", full, "--no-cache")
		require.Less(t, len(md), maxMarkdown, full)
		require.Contains(t, md, "CUDA out of memory")
		checkGitHubMarkdown(t, md)
	}
}
