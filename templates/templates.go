// Package templates embeds the report templates (and, later, the LLM prompt templates).
package templates

import "embed"

// FS holds report.md.tmpl and report.html.tmpl.
//
//go:embed *.tmpl
var FS embed.FS
