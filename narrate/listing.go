package narrate

import (
	"fmt"
	"strings"

	"github.com/coroner-dev/coroner/report"
)

// Listing is the prompt as a person reviews it before anything is sent: a header of "#" lines
// (what it asks about, its template, how big it is, what it carries and what was shortened or
// left out to fit), then its messages. numCtx is the caller's name for the context size (a
// flag, a setting), which the header names beside its value.
func (p *Prompt) Listing(numCtx string) string {
	var b strings.Builder
	what := "job"
	if p.Role != "" {
		what = "role " + p.Role
	}
	t := p.Template
	version := t.Version
	if version == "" {
		version = "none"
	}
	fmt.Fprintf(&b, "# prompt for the %s: template %s, version %s (%s)\n", what, t.Name, version, t.Source)
	fmt.Fprintf(&b, "# about %d tokens (estimated) of %s %d, %d kept for the answer; %d bytes; %s\n",
		p.Tokens, numCtx, p.NumCtx, p.NumPredict, p.Bytes, p.Hash)
	var inc, short []string
	for _, s := range report.SummarizeParts(p.Included) {
		inc = append(inc, s.String())
	}
	for _, in := range p.Included {
		if in.Shortened {
			short = append(short, in.Kind.String()+" "+in.Ref)
		}
	}
	if len(inc) == 0 {
		inc = []string{"nothing from the bundle beyond the job summary"}
	}
	fmt.Fprintf(&b, "# included: %s; %d left out to fit\n", strings.Join(inc, "; "), p.Omitted)
	if len(short) > 0 {
		fmt.Fprintf(&b, "# shortened to fit: %s\n", strings.Join(short, ", "))
	}
	var left []string
	for _, c := range p.Info().LeftOut {
		left = append(left, c.Kind.Plural(c.Count))
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, "# left out to fit: %s\n", strings.Join(left, ", "))
	}
	b.WriteString(p.Text())
	return b.String()
}
