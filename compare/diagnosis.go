package compare

import (
	"fmt"
	"sort"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// diagnosisChanges are the verdicts and root causes that differ, and the categories of
// primary findings one run has and the other has not: a root cause's category first, then by
// severity.
func diagnosisChanges(good, bad *report.Report) []*Change {
	var out []*Change
	if good.Verdict != bad.Verdict {
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "verdict", Score: 1000,
			Title: fmt.Sprintf("verdict %s in GOOD, %s in BAD", good.Verdict, bad.Verdict),
			Good:  good.VerdictReason, Bad: bad.VerdictReason})
	}
	if gc, bc := rootCategory(good), rootCategory(bad); gc != bc {
		c := &Change{Section: SectionDiagnosis, Kind: "root-cause", Score: 900, Good: rootText(good), Bad: rootText(bad)}
		switch {
		case gc == "":
			c.Title = "BAD's root cause: " + bad.RootCause.Title
		case bc == "":
			c.Title = "GOOD had a root cause BAD has not: " + good.RootCause.Title
		default:
			c.Title = fmt.Sprintf("root cause %s in GOOD, %s in BAD", gc, bc)
		}
		out = append(out, c)
	}
	gf, bf := byCategory(good), byCategory(bad)
	for _, cat := range sortedKeys(bf) {
		if _, ok := gf[cat]; ok {
			continue
		}
		f := bf[cat]
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "finding-new", Score: 500 + 10*int(f.Severity),
			Path: cat, Title: fmt.Sprintf("%s %s only in BAD: %s", f.Severity, cat, f.Title), Bad: f.Pod})
	}
	for _, cat := range sortedKeys(gf) {
		if _, ok := bf[cat]; ok {
			continue
		}
		f := gf[cat]
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "finding-gone", Score: 400 + 10*int(f.Severity),
			Path: cat, Title: fmt.Sprintf("%s %s only in GOOD: %s", f.Severity, cat, f.Title), Good: f.Pod})
	}
	return out
}

func rootCategory(r *report.Report) string {
	if r.RootCause == nil {
		return ""
	}
	return string(r.RootCause.Category)
}

func rootText(r *report.Report) string {
	if r.RootCause == nil {
		return ""
	}
	return r.RootCause.Title + where(&r.RootCause.Finding)
}

// where says the pod of a finding, when it has one.
func where(f *report.Finding) string {
	if f.Pod == "" {
		return ""
	}
	return " (" + f.Pod + ")"
}

// byCategory keeps, for each category of the primary findings, the most severe and then the
// earliest finding (findings come sorted by time).
func byCategory(r *report.Report) map[string]*report.Finding {
	out := map[string]*report.Finding{}
	for _, f := range r.Findings {
		if f.SecondaryOf != "" || f.Category == analyze.Category("") {
			continue
		}
		if had, ok := out[string(f.Category)]; !ok || f.Severity > had.Severity {
			out[string(f.Category)] = f
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
