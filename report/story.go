package report

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// Story says in a few words how long things took: "failed 10 min 3 s after the first
// error", "3 pods pending for 5 h 27 min", "succeeded after 2 h 4 min", "collected 7 min 25 s
// after the first error" (a job still running); "" when the bundle does not date it.
func (r *Report) Story() string {
	cond := func(types ...string) *time.Time {
		for _, c := range r.Job.Conditions {
			for _, typ := range types {
				if c.Type == typ && c.Status == "True" && c.Time != nil {
					return c.Time
				}
			}
		}
		return nil
	}
	var first *time.Time
	if r.RootCause != nil {
		first = r.RootCause.Time
	}
	var pending []Pod
	for _, rep := range r.Job.Replicas {
		for _, p := range rep.Pods {
			if p.Phase == "Pending" && p.Started == nil && p.Created != nil {
				pending = append(pending, p)
			}
		}
	}
	collected := r.Bundle.CollectedAt
	switch failed, ok := cond("Failed"), cond(succeededConditions...); {
	case failed != nil && first != nil && !failed.Before(*first):
		return "failed " + Duration(failed.Sub(*first)) + " after the first error"
	case failed != nil && r.Job.Created != nil:
		return "failed " + Duration(failed.Sub(*r.Job.Created)) + " after it was created"
	case ok != nil && r.Job.Created != nil:
		return "succeeded after " + Duration(ok.Sub(*r.Job.Created))
	case len(pending) > 0 && collected != nil:
		since := *pending[0].Created
		for _, p := range pending {
			if p.Created.Before(since) {
				since = *p.Created
			}
		}
		who := "its pod"
		if len(pending) > 1 {
			who = Commas(len(pending)) + " pods"
		}
		return who + " pending for " + Duration(collected.Sub(since))
	case first != nil && collected != nil && collected.After(*first) && r.Job.Status != "Failed" && r.Job.Status != "Succeeded":
		return "collected " + Duration(collected.Sub(*first)) + " after the first error"
	}
	return ""
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// succeededConditions are the condition types that say a job ended well (batch Jobs and
// JobSets say Complete, T9k jobs Completed).
var succeededConditions = []string{"Succeeded", "Complete", "Completed"}

func isSucceeded(typ string) bool {
	for _, t := range succeededConditions {
		if t == typ {
			return true
		}
	}
	return false
}
