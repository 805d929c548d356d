package report

import "github.com/coroner-dev/coroner/analyze"

// ConfidenceText says in words how sure the root cause is, for people: a specific rule on
// unambiguous evidence, the second tier's "likely", or "could not tell".
func (rc *RootCause) ConfidenceText() string {
	switch rc.Confidence {
	case analyze.ConfidenceHigh:
		return "high — a specific rule matched"
	case analyze.ConfidenceMedium:
		return "medium — likely: no specific rule matched, the cause was named from the words of the failure (the terms in its title)"
	case analyze.ConfidenceLow:
		return "low — could not tell for sure: only an exit code, a signal, a generic exception or retries that never succeed say that it failed"
	}
	return ""
}

// Hedged says whether the root cause is less than sure, so that a summary says so.
func (rc *RootCause) Hedged() bool {
	return rc.Confidence != "" && rc.Confidence != analyze.ConfidenceHigh
}
