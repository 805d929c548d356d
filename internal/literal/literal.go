// Package literal finds fixed strings fast, for the two passes that look at every byte of a
// bundle's logs: the rule prefilter of analyze (which patterns could match a line) and the
// trigger scan of redaction (which secrets rules could apply). Required derives, from a
// regular expression, the literals every match must contain; Matcher finds any number of
// literals in one pass over a line (Aho-Corasick, ASCII case folded). It imports only the
// standard library, so packages at every level can use it.
package literal
