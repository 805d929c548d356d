package report

// MarkdownText is text from a bundle made safe in a Markdown paragraph or table cell: no
// structure (tables, links, HTML), no control characters. Other reports over bundles' text
// (the fleet report) use it.
func MarkdownText(s string) string { return mdEscape(s) }
