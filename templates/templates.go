// Package templates embeds the report templates (the LLM step's prompt templates live with it,
// in narrate/prompts).
package templates

import "embed"

// FS holds report.md.tmpl and report.html.tmpl.
//
//go:embed *.tmpl
var FS embed.FS
