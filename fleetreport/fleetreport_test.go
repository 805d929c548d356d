package fleetreport

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/store"
)

// hostile is text a bundle could put in a namespace, node or image name.
const hostile = "<script>alert(1)</script>|x](http://evil.example)\"'\x1b[2J"

func sample() *store.FleetReport {
	monday := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	since := monday.Add(-2 * 24 * time.Hour) // a Saturday: its week starts the Monday before
	return &store.FleetReport{
		Since: &since, Until: monday.AddDate(0, 0, 21), Store: "host=db user=coroner",
		Totals: store.Totals{Runs: 40, Interruptions: 9, Unknown: 1, GPUHoursUsed: 12345.6, GPUHoursLost: 321},
		Weekly: []store.WeekCount{
			{Week: monday.AddDate(0, 0, -7), Category: "gpu-hardware", Fault: "hardware", Interruptions: 1, GPUHoursLost: 10},
			{Week: monday, Category: "gpu-hardware", Fault: "hardware", Interruptions: 3, GPUHoursLost: 100},
			{Week: monday, Category: "cuda-oom", Fault: "user", Interruptions: 2, GPUHoursLost: 11},
			// The week of March 9 has none.
			{Week: monday.AddDate(0, 0, 14), Category: "unknown", Fault: "unknown", Interruptions: 3, GPUHoursLost: 200},
		},
		Causes: []store.CauseCount{
			{Category: "gpu-hardware", Fault: "hardware", Interruptions: 4, SharePercent: 44.4, GPUHoursLost: 110},
			{Category: "unknown", Fault: "unknown", Interruptions: 3, SharePercent: 33.3, GPUHoursLost: 200},
			{Category: "cuda-oom", Fault: "user", Interruptions: 2, SharePercent: 22.2, GPUHoursLost: 11},
		},
		Nodes: []store.NodeFailures{{Cluster: "prod", Node: hostile, Hardware: 4, Interruptions: 4, WithEvidence: 3, Xids: []store.XidCount{{Xid: "79", Interruptions: 3}, {Xid: "48", Interruptions: 1}}, Last: monday}},
		FailureRates: []store.FailureRate{
			{Dimension: "namespace", Value: hostile, Runs: 10, Failures: 5, Rate: 0.5},
			{Dimension: "image", Value: "img:1", Runs: 4, Failures: 1, Rate: 0.25},
		},
		Retries:   []store.RetryOutcome{{Category: "gpu-hardware", Retry: "transient", Failures: 4, Succeeded: 1, FailedAgain: 2, NotRetried: 1}},
		Diagnosis: store.DiagnosisDelay{Count: 9, MedianSeconds: 95, P90Seconds: 7300},
	}
}

func render(t *testing.T, r *store.FleetReport, format string) string {
	t.Helper()
	var a, b bytes.Buffer
	require.NoError(t, Render(&a, r, format))
	require.NoError(t, Render(&b, r, format))
	require.Equal(t, a.String(), b.String(), "the same report gives the same bytes")
	return a.String()
}

func TestWeeksIncludeTheEmptyOnes(t *testing.T) {
	v := newView(sample())
	require.Len(t, v.Weeks, 4, "from the week of the start (Feb 23) to the week before the end (Mar 16)")
	assert.Equal(t, time.Date(2026, 2, 23, 0, 0, 0, 0, time.UTC), v.Weeks[0])
	assert.Equal(t, []int{0, 0, 0, 0}, v.ByFault.Values[2], "the week of March 9 is drawn, empty")
	// Hardware, platform, user, unknown.
	assert.Equal(t, []int{3, 0, 2, 0}, v.ByFault.Values[1])
	assert.Equal(t, []int{3, 0, 2}, v.ByCause.Values[1], "gpu-hardware, unknown, cuda-oom")
	assert.Equal(t, []int{0, 3, 0}, v.ByCause.Values[3])
}

func TestManyCausesShareOtherColour(t *testing.T) {
	r := sample()
	r.Causes = nil
	for i := range 12 {
		r.Causes = append(r.Causes, store.CauseCount{Category: string(rune('a' + i)), Interruptions: 12 - i})
	}
	r.Weekly = []store.WeekCount{{Week: r.Weekly[1].Week, Category: "l", Fault: "user", Interruptions: 5}}
	v := newView(r)
	require.Len(t, v.ByCause.Series, len(palette))
	assert.Equal(t, "other", v.ByCause.Series[len(palette)-1].Name)
	assert.Equal(t, 5, v.ByCause.Values[1][len(palette)-1], "the twelfth cause is drawn as other")
	assert.Equal(t, otherColor, v.CauseColor("l"))
}

func TestHTMLIsSelfContainedAndEscaped(t *testing.T) {
	out := render(t, sample(), "html")
	assert.NotContains(t, out, "<script>", "bundle text is escaped")
	assert.Contains(t, out, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.False(t, strings.ContainsAny(out, "\x1b\a"), "cat fleet.html must not drive the terminal")
	assert.Contains(t, out, `\x1b[2J`, "the escape is shown as text")
	assert.NotRegexp(t, regexp.MustCompile(`(?i)<script|<link|<img|src=|href=|@import|url\(`), out,
		"no script, no stylesheet, nothing fetched: one file that works offline")
	// The charts: one bar segment per non-empty (week, series), with its count in its tooltip.
	assert.Equal(t, 2, strings.Count(out, "<svg "))
	assert.Contains(t, out, "<title>week of 2026-03-02: gpu-hardware 3</title>")
	assert.Contains(t, out, "<title>week of 2026-03-16: unknown 3</title>")
	assert.Contains(t, out, `class="partial"><title>week of 2026-02-23 (part of the week): gpu-hardware 1</title>`, "the period starts on a Saturday")
	assert.Equal(t, 2, strings.Count(out, `class="partial"`), "one segment in each chart; the last week is whole")
	assert.Equal(t, 2*4, strings.Count(out, "<rect "), "4 segments in each chart")
	for _, want := range []string{"12,346", "321", "2.6%", "1m 35s", "2h 1m", "79 (3), 48 (1)", "50.0%", "transient (a retry can help)"} {
		assert.Contains(t, out, want)
	}
}

func TestGridSteps(t *testing.T) {
	for most, want := range map[int]float64{0: 1, 3: 1, 5: 1, 6: 2, 10: 2, 11: 5, 25: 5, 26: 10, 404: 100, 501: 200, 2600: 1000} {
		assert.Equal(t, want, niceStep(most), "tallest bar %d", most)
	}
}

func TestMarkdownEscapesAndCounts(t *testing.T) {
	out := render(t, sample(), "md")
	assert.NotContains(t, out, "<script>")
	assert.NotContains(t, out, "](http", "no link from bundle text")
	assert.NotContains(t, out, "\x1b", "no terminal escape from bundle text")
	assert.Contains(t, out, "| gpu-hardware | hardware | 4 | 44.4% | 110 |")
	assert.Contains(t, out, "| 2026-03-09 | 0 | 0 | 0 | 0 | 0 |", "the empty week is a row")
	assert.Contains(t, out, "| 2026-03-02 | 3 | 0 | 2 | 0 | 5 |")
	assert.Contains(t, out, "**9 interruptions** of 40 job runs (1 unknown)")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| prod |") {
			assert.Contains(t, line, "| 4 | 0 | 0 | 4 | 3 |", "3 of its 4 with node evidence")
			assert.Equal(t, 10, strings.Count(line, "|")-strings.Count(line, `\|`), "a node name's pipe does not make a column: %s", line)
		}
	}
}

func TestJSONIsTheStoreReport(t *testing.T) {
	r := sample()
	var back store.FleetReport
	require.NoError(t, json.Unmarshal([]byte(render(t, r, "json")), &back))
	assert.Equal(t, *r, back)
}

func TestEmptyPeriod(t *testing.T) {
	r := &store.FleetReport{Until: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Store: "s"}
	for _, f := range Formats {
		out := render(t, r, f)
		if f != "json" {
			assert.Contains(t, out, "No interruption in the period.", f)
		}
	}
	assert.Error(t, Render(&bytes.Buffer{}, r, "pdf"))
}

func TestTrialComparison(t *testing.T) {
	r := sample()
	r.Trial = &store.TrialComparison{Trial: "xid-79", Attempts: 5, Changed: 2,
		Causes:  []store.TrialCause{{Outcome: "cuda-error", Current: 3, Trial: 1}, {Outcome: "gpu-hardware", Current: 0, Trial: 2}},
		Changes: []store.TrialChange{{From: "cuda-error", To: "gpu-hardware", Count: 2}}}
	html := render(t, r, "html")
	assert.Contains(t, html, "<h2>Trial xid-79 against the current analyses</h2>")
	assert.Contains(t, html, `<tr><td>cuda-error</td><td class="n">3</td><td class="n">1</td><td class="n">-2</td></tr>`)
	assert.Contains(t, html, `<tr><td>cuda-error</td><td>gpu-hardware</td><td class="n">2</td></tr>`)
	md := render(t, r, "md")
	assert.Contains(t, md, "5 job attempts re-analyzed, 2 with another outcome.")
	assert.Contains(t, md, "| gpu-hardware | 0 | 2 | +2 |")
	assert.NotContains(t, render(t, sample(), "md"), "Trial", "no trial asked, no section")
}
