// Package rules holds coroner's built-in rule set, one YAML file per family of failures, and
// the schema of a rule file (File, Spec). analyze.LoadRules reads and checks rule files;
// `coroner rules lint` runs their examples.
package rules

import "embed"

// FS holds the built-in rule files.
//
//go:embed *.yaml
var FS embed.FS
