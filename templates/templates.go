// Package templates embeds the report templates and the LLM prompt templates.
package templates

import "embed"

// FS holds report.md.tmpl, report.html.tmpl and prompts/*.tmpl (one prompt template per job
// kind, default.tmpl for the others, role.tmpl for per-role summaries).
//
//go:embed *.tmpl prompts/*.tmpl
var FS embed.FS
