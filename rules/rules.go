// Package rules embeds coroner's built-in rule set: one YAML file per family of failures.
// See analyze.LoadRules for the schema and `coroner rules lint` to check a directory.
package rules

import "embed"

// FS holds the built-in rule files.
//
//go:embed *.yaml
var FS embed.FS
