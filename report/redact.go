package report

// Redact masks secrets in the text a report shows from its bundle, in place: text masks the
// lines of one window (its lines are kept, one for one), so that a secret spanning lines
// (a private key, a YAML value below its key) is found across them. Each evidence window (the
// lines before, the line, the lines after) is one text; every other message (events, job
// conditions, gaps, the timeline, titles, the verdict's reason, warnings) is its own. Names of
// pods, containers and files are not masked: they say where the evidence is.
func (r *Report) Redact(text func(lines []string) []string) {
	r.RedactWindows(text, nil)
}

// RedactWindows is Redact with each evidence window masked by mask, which is told whose
// window it is (its file and line: a window cut out of a log is masked with the lines above
// it, as the whole log is), or by text when mask is nil.
func (r *Report) RedactWindows(text func(lines []string) []string, mask func(e *Evidence, lines []string) []string) {
	one := func(s *string) {
		if *s != "" {
			*s = text([]string{*s})[0]
		}
	}
	finding := func(f *Finding) {
		one(&f.Title)
		for i := range f.Evidence {
			e := &f.Evidence[i]
			window := make([]string, 0, len(e.Before)+1+len(e.After))
			for _, c := range e.Before {
				window = append(window, c.Text)
			}
			window = append(window, e.Text)
			for _, c := range e.After {
				window = append(window, c.Text)
			}
			var out []string
			if mask != nil {
				out = mask(e, window)
			} else {
				out = text(window)
			}
			for j := range e.Before {
				e.Before[j].Text = out[j]
			}
			e.Text = out[len(e.Before)]
			for j := range e.After {
				e.After[j].Text = out[len(e.Before)+1+j]
			}
		}
	}
	one(&r.VerdictReason)
	if r.RootCause != nil {
		finding(&r.RootCause.Finding)
	}
	for _, f := range r.Findings {
		finding(f)
	}
	for i := range r.Job.Conditions {
		one(&r.Job.Conditions[i].Message)
	}
	for i := range r.Events {
		one(&r.Events[i].Message)
	}
	for i := range r.Timeline {
		one(&r.Timeline[i].Text)
	}
	for i := range r.Bundle.Gaps {
		one(&r.Bundle.Gaps[i].Message)
	}
	for i := range r.Bundle.Analyzers {
		one(&r.Bundle.Analyzers[i].Title)
		one(&r.Bundle.Analyzers[i].Message)
	}
	for i := range r.Warnings {
		one(&r.Warnings[i])
	}
	if ne := r.NodeEvidence; ne != nil && ne.Attribution != nil {
		one(&ne.Attribution.Reason) // it quotes a finding's title
	}
}
