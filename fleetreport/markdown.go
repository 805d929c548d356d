package fleetreport

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/coroner-dev/coroner/report"
)

func renderMarkdown(w io.Writer, v *view) error {
	b := bufio.NewWriter(w)
	md := report.MarkdownText
	fmt.Fprintf(b, "# coroner fleet report\n\n%s · store %s\n\n", md(v.Period()), md(v.Store))
	t := v.Totals
	fmt.Fprintf(b, "**%d interruptions** of %d job runs (%d unknown) · **%s GPU-hours lost** of %s used (%s)",
		t.Interruptions, t.Runs, t.Unknown, hours(t.GPUHoursLost), hours(t.GPUHoursUsed), v.LostShare())
	if v.Diagnosis.Count > 0 {
		fmt.Fprintf(b, " · diagnosed in %s (median; 90%%: %s)", duration(v.Diagnosis.MedianSeconds), duration(v.Diagnosis.P90Seconds))
	}
	if tr := v.Trial; tr != nil {
		fmt.Fprintf(b, "\n\n## Trial %s against the current analyses\n\n%d job attempts re-analyzed, %d with another outcome.\n\n",
			md(tr.Trial), tr.Attempts, tr.Changed)
		fmt.Fprint(b, "| outcome | current | trial | change |\n|---|--:|--:|--:|\n")
		for _, c := range tr.Causes {
			fmt.Fprintf(b, "| %s | %d | %d | %+d |\n", md(c.Outcome), c.Current, c.Trial, c.Trial-c.Current)
		}
		if len(tr.Changes) > 0 {
			fmt.Fprint(b, "\n| current | trial | attempts |\n|---|---|--:|\n")
			for _, c := range tr.Changes {
				fmt.Fprintf(b, "| %s | %s | %d |\n", md(c.From), md(c.To), c.Count)
			}
		}
		fmt.Fprint(b, "\n## Interruptions by root cause\n\n")
	} else {
		fmt.Fprint(b, "\n\n## Interruptions by root cause\n\n")
	}
	if len(v.Causes) == 0 {
		fmt.Fprint(b, "No interruption in the period.\n")
	} else {
		fmt.Fprint(b, "| category | fault | interruptions | share | GPU-hours lost |\n|---|---|--:|--:|--:|\n")
		for _, c := range v.Causes {
			fmt.Fprintf(b, "| %s | %s | %d | %.1f%% | %s |\n", md(c.Category), md(c.Fault), c.Interruptions, c.SharePercent, hours(c.GPUHoursLost))
		}
	}
	if len(v.Weeks) > 0 {
		fmt.Fprint(b, "\n## Interruptions per week by fault\n\n| week |")
		for _, s := range v.ByFault.Series {
			fmt.Fprintf(b, " %s |", s.Name)
		}
		fmt.Fprint(b, " all |\n|---|"+strings.Repeat("--:|", len(v.ByFault.Series)+1)+"\n")
		for i, w := range v.Weeks {
			fmt.Fprintf(b, "| %s |", w.Format("2006-01-02"))
			for _, n := range v.ByFault.Values[i] {
				fmt.Fprintf(b, " %d |", n)
			}
			fmt.Fprintf(b, " %d |\n", total(v.ByFault.Values[i]))
		}
	}
	fmt.Fprint(b, "\n## Drain these: nodes by hardware and collective failures\n\n")
	if len(v.Nodes) == 0 {
		fmt.Fprint(b, "No node is named by a GPU, CUDA or collective finding in the period.\n")
	} else {
		fmt.Fprint(b, "With node evidence: failures put down to the node's GPU by its own evidence (a GPU health agent's condition, event or log line) at the time of the failure; the others are named by their pods' errors alone.\n\n")
		fmt.Fprint(b, "| cluster | node | hardware | collective | CUDA | interruptions | with node evidence | Xid | last |\n|---|---|--:|--:|--:|--:|--:|---|---|\n")
		for _, n := range v.Nodes {
			fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s |\n", md(n.Cluster), md(n.Node), n.Hardware, n.Collective, n.CUDA,
				n.Interruptions, n.WithEvidence, md(xids(n.Xids)), n.Last.Format("2006-01-02"))
		}
	}
	fmt.Fprint(b, "\n## Failure rates\n")
	for _, g := range v.Rates {
		fmt.Fprintf(b, "\n### %s\n\n| %s | runs | failures | rate | GPU-hours lost |\n|---|--:|--:|--:|--:|\n", dimensionTitle(g.Dimension), g.Dimension)
		for _, r := range g.Rows {
			fmt.Fprintf(b, "| %s | %d | %d | %s | %s |\n", md(r.Value), r.Runs, r.Failures, percent(r.Rate), hours(r.GPUHoursLost))
		}
	}
	fmt.Fprint(b, "\n## Retry outcomes\n\n")
	if len(v.Retries) == 0 {
		fmt.Fprint(b, "No failure in the period.\n")
	} else {
		fmt.Fprint(b, "What the next run of the same job (its owner, else its kind and name) did after each failure.\n\n")
		fmt.Fprint(b, "| cause | retry | failures | succeeded | failed again (same cause) | failed otherwise | not retried |\n|---|---|--:|--:|--:|--:|--:|\n")
		for _, r := range v.Retries {
			fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d | %d |\n", md(r.Category), md(r.Retry), r.Failures, r.Succeeded, r.FailedAgain, r.FailedOtherwise, r.NotRetried)
		}
	}
	return b.Flush()
}
