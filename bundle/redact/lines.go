package redact

import (
	"bytes"
)

// What one line of a stream says about the next ones. Secrets do not keep to one line: YAML
// puts a value below its key, an env list puts "value:" on the line after "name:", a shell
// line ends with a flag whose value was wrapped, a console wraps a long token. The copier
// keeps one line of state for each.

type pendKind int

const (
	pendNone pendKind = iota
	// pendYAML: a secret's YAML key ended its line (password:, password: |); its value is in
	// the lines below that are indented more than the key.
	pendYAML
	// pendEnv: "- name: PGPASSWORD" ended its line; the "value:" key of the same item
	// follows, at the same column as "name".
	pendEnv
	// pendNext: a line ended with NAME=, a secret flag or "Bearer"; the next line's single
	// word is the value.
	pendNext
)

type pending struct {
	kind  pendKind
	col   int   // the key's column (pendYAML, pendEnv)
	m     int32 // the rule that masks the value
	block bool  // pendYAML: the key had a block indicator (| or >)
	// prompt (pendYAML): the key is also a prompt ("Password:"); a value not indented below
	// it is the answer echoed on the next line.
	prompt bool
	waited int // lines seen since
}

// yamlBlock is a YAML value being read in the lines below its key, masked as one secret.
type yamlBlock struct {
	col   int // the key's column: the value's lines are indented more
	m     int32
	lines [][]byte
	size  int
	start int    // the line number of the first line
	tok   []byte // set once written: the lines that follow get the same token
}

// heldLine is a line kept back one line, ending with a word that may be the start of a token
// the next line finishes.
type heldLine struct {
	raw    []byte
	spans  []span
	lineNo int
	run    int // where the last word of the line starts
}

// bodyStart is where a line's text starts after its kubelet timestamp, and its indentation
// after that.
func bodyStart(text []byte) (int, int) {
	p := stampLen(text)
	ind := 0
	for p+ind < len(text) && text[p+ind] == ' ' {
		ind++
	}
	return p, ind
}

// trimEOL is bytes.TrimRight(b, "\r\n") without the set that call builds on every line
// (redaction and the scan's Carries run it on each line).
func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// trimBlankEnd is bytes.TrimRight(b, " \t\r"), as trimEOL.
func trimBlankEnd(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func blankLine(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}

// isTokenChar is a character a token may hold.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c == '~'
}

// maxWrap bounds the word looked at on each side of a line break.
const maxWrap = 4 << 10

// trailingRun finds the word that ends the line (where it starts, or -1) and whether a rule's
// trigger ends inside it (hf_, ghp_, eyJ, AKIA...: the start of a token).
func (c *copier) trailingRun(text []byte) (int, bool) {
	e := len(bytes.TrimRight(text, "\r"))
	s := e
	for s > 0 && e-s < maxWrap && isTokenChar(text[s-1]) {
		s--
	}
	if e-s < 4 {
		return -1, false
	}
	for _, h := range c.sc.hits {
		if h.End > s {
			t := c.r.trig[h.ID]
			if t.m >= 0 && wrapRule(c.r.ms[t.m]) {
				return s, true
			}
		}
	}
	return s, false
}

// wrapRule reports whether a rule finds tokens by their shape, which a wrapped token keeps: not
// the rules that take any value after a name (secret-assignment, env-secret).
func wrapRule(m *matcher) bool {
	return len(m.res) > 0 && m.id != "secret-assignment" && !m.block
}

// endsInWrapRule reports whether a token found by its shape ends the line.
func (c *copier) endsInWrapRule(text []byte, spans []span) bool {
	e := len(bytes.TrimRight(text, "\r"))
	n := len(spans)
	return n > 0 && spans[n-1].m >= 0 && spans[n-1].end == e && wrapRule(c.r.ms[spans[n-1].m])
}

// flushHeld writes the held line as it is.
func (c *copier) flushHeld() {
	if h := c.held; h != nil {
		c.held = nil
		text := bytes.TrimSuffix(h.raw, []byte("\n"))
		c.writeLine(h.raw, text, h.spans, h.lineNo)
	}
}

// joinHeld decides whether the held line's last word and this line's first are one token
// wrapped in two: when the rules find, in the two joined, a token that crosses the break,
// both parts are masked with that token's mask (counted once). It writes the held line and
// returns this line's spans.
func (c *copier) joinHeld(text []byte, spans []span) []span {
	h := c.held
	defer c.flushHeld()
	p, ind := bodyStart(text)
	p += ind
	q := p
	for q < len(text) && q-p < maxWrap && isTokenChar(text[q]) {
		q++
	}
	if q-p < 4 {
		return spans
	}
	held := bytes.TrimSuffix(h.raw, []byte("\n"))
	heldEnd := len(bytes.TrimRight(held, "\r"))
	left := held[h.run:heldEnd]
	joined := make([]byte, 0, len(left)+q-p)
	joined = append(joined, left...)
	joined = append(joined, text[p:q]...)
	var cross span
	found := false
	for _, s := range c.r.find(joined, c.sc) {
		if s.m >= 0 && s.start < len(left) && s.end > len(left) && wrapRule(c.r.ms[s.m]) {
			cross, found = s, true
			break
		}
	}
	if !found {
		return spans
	}
	// When the held line already held a whole token, its continuation must look like one: a
	// long word with a digit, or the whole of its line ("Starting" is not a token's end).
	whole := false
	for _, s := range h.spans {
		if s.m == cross.m && s.end == heldEnd {
			whole = true
		}
	}
	right := text[p : p+cross.end-len(left)]
	rest := bytes.TrimRight(text[p+len(right):], "\r")
	if whole && (len(right) < 8 || !bytes.ContainsAny(right, "0123456789") && len(rest) > 0) {
		return spans
	}
	tok := c.r.token(nil, cross.m, joined[cross.start:cross.end])
	// The held line: everything from the token's start on is the token.
	hs := h.spans[:0]
	for _, s := range h.spans {
		if s.end <= h.run+cross.start {
			hs = append(hs, s)
		}
	}
	h.spans = append(hs, span{start: h.run + cross.start, end: heldEnd, m: cross.m, tok: tok})
	// This line: its first word, up to the token's end, continues it (counted once).
	cs := []span{{start: p, end: p + len(right), m: cross.m, tok: tok, nocount: true}}
	for _, s := range spans {
		if s.start >= p+len(right) {
			cs = append(cs, s)
		}
	}
	return cs
}

// announce reads what a line says of the next ones: a secret's YAML key with its value below,
// an env var's secret name with its value next, NAME=, a secret flag or "Bearer" at its end.
func (c *copier) announce(text []byte, spans []span) {
	p, ind := bodyStart(text)
	c.pend = c.r.announced(text, p, ind, spans)
}

// announced is what announce keeps for the next lines, for a text whose body starts at p,
// indented by ind (bodyStart).
func (r *Redactor) announced(text []byte, p, ind int, spans []span) pending {
	t := trimBlankEnd(text[p:])
	if len(t) <= ind {
		return pending{}
	}
	if len(spans) > 0 && spans[len(spans)-1].end >= p+len(t) {
		return pending{} // the line's end is masked already
	}
	col := ind
	for col+1 < len(t) && t[col] == '-' && t[col+1] == ' ' {
		col += 2
		for col < len(t) && t[col] == ' ' {
			col++
		}
	}
	// name: PGPASSWORD, as an env list item has it; its value follows.
	if len(t)-col >= len("name:") && string(t[col:col+len("name:")]) == "name:" {
		name := bytes.Trim(bytes.TrimSpace(t[col+len("name:"):]), `"'`)
		if m, secret := r.envRule(string(name)); secret && len(name) > 0 && bytes.IndexFunc(name, func(r rune) bool { return !isNameChar(byte(r)) }) < 0 {
			return pending{kind: pendEnv, col: col, m: m}
		}
		return pending{}
	}
	last := t[len(t)-1]
	// password:, password: |, password: >- : the value is below.
	if yamlEnd(t) {
		key, block, ok := yamlKeyOnly(t[col:])
		if !ok {
			if promptLine(t[col:]) {
				return pending{kind: pendNext, m: int32(r.byID["secret-assignment"])}
			}
			return pending{}
		}
		strong := SecretName(string(key))
		if strong || block && weakAlone(key) {
			return pending{kind: pendYAML, col: col, m: int32(r.byID["secret-assignment"]), block: block,
				prompt: !block && passwordName(string(key))}
		}
		return pending{}
	}
	// HF_TOKEN=, --hf-token, Authorization: Bearer at the end of the line.
	if last != '=' && !(last >= 'a' && last <= 'z' || last >= 'A' && last <= 'Z') {
		return pending{}
	}
	word := t[lastWordStart(t):]
	if last != '=' && word[0] != '-' && len(word) != len("bearer") {
		return pending{}
	}
	switch {
	case last == '=':
		name := bytes.TrimRight(word, "=")
		if secretNameBytes(bytes.TrimLeft(name, "-")) {
			return pending{kind: pendNext, m: int32(r.byID["secret-assignment"])}
		}
	case isSecretFlag(string(word)):
		return pending{kind: pendNext, m: int32(r.byID["secret-assignment"])}
	case bytes.EqualFold(word, []byte("bearer")):
		return pending{kind: pendNext, m: int32(r.byID["bearer-token"])}
	}
	return pending{}
}

// yamlEnd reports whether a line may end with a YAML key whose value is below: it ends with
// ':', a block indicator, or a comment.
func yamlEnd(t []byte) bool {
	switch last := t[len(t)-1]; {
	case last == ':' || last == '|' || last == '>':
		return true
	case last == '+' || last == '-' || last >= '0' && last <= '9':
		n := len(t)
		return n >= 2 && (t[n-2] == '|' || t[n-2] == '>') || n >= 3 && (t[n-3] == '|' || t[n-3] == '>')
	}
	return bytes.IndexByte(t, '#') >= 0
}

// lastWordStart is where the last blank-separated word of t starts.
func lastWordStart(t []byte) int {
	i := len(t)
	for i > 0 && t[i-1] != ' ' && t[i-1] != '\t' {
		i--
	}
	return i
}

// yamlKeyOnly reports whether t is a YAML key and nothing else (key:, key: |, "key": >-, a
// comment after), and returns the key and whether a block indicator follows it.
func yamlKeyOnly(t []byte) ([]byte, bool, bool) {
	if i := bytes.IndexByte(t, '#'); i > 0 && t[i-1] == ' ' {
		t = bytes.TrimRight(t[:i], " \t")
	}
	block := false
	if len(t) > 0 && t[len(t)-1] != ':' {
		// A block indicator: | or >, then at most a chomping sign and an indentation digit.
		i := len(t) - 1
		for i > 0 && len(t)-1-i < 2 && (t[i] == '+' || t[i] == '-' || t[i] >= '0' && t[i] <= '9') {
			i--
		}
		if t[i] != '|' && t[i] != '>' {
			return nil, false, false
		}
		block = true
		t = bytes.TrimRight(t[:i], " \t")
	}
	if len(t) < 2 || t[len(t)-1] != ':' {
		return nil, false, false
	}
	key := bytes.Trim(t[:len(t)-1], `"'`)
	if len(key) == 0 {
		return nil, false, false
	}
	for _, ch := range key {
		if !isNameChar(ch) {
			return nil, false, false
		}
	}
	return key, block, true
}

// pendLine handles a line the last one announced something for, and reports whether it wrote
// it.
func (c *copier) pendLine(raw, text []byte, lineNo int) bool {
	pd := &c.pend
	was := *pd
	p, ind := bodyStart(text)
	body := text[p:]
	if blankLine(body) {
		if pd.waited++; pd.waited > 2 {
			c.pend = pending{}
		}
		return false
	}
	switch pd.kind {
	case pendYAML:
		c.pend = pending{}
		if ind <= was.col {
			return was.prompt && c.nextWord(raw, text, was.m, lineNo)
		}
		// The value of a secret's key is a scalar: a nested mapping or list (a volume's
		// "secret:" with its secretName) is not, unless a block indicator said so.
		if !was.block && looksStructured(body[ind:]) {
			return false
		}
		c.flushHeld()
		c.yb = &yamlBlock{col: was.col, m: was.m, start: lineNo}
		c.yamlLine(raw, lineNo)
		return true
	case pendEnv:
		if ind < pd.col {
			c.pend = pending{}
			return false
		}
		rest, ok := bytes.CutPrefix(body[ind:], []byte("value:"))
		if ind != pd.col || !ok {
			if bytes.HasPrefix(body[ind:], []byte("valueFrom:")) || pd.waited > 6 {
				c.pend = pending{}
			} else {
				pd.waited++
			}
			return false
		}
		m := pd.m
		c.pend = pending{}
		at := p + ind + len("value:")
		v := bytes.TrimSpace(rest)
		if len(v) == 0 || v[0] == '|' || v[0] == '>' {
			// The value is in the lines below.
			c.pend = pending{kind: pendYAML, col: pd.col, m: m, block: len(v) > 0}
			return false
		}
		vs, ok := rawValueAt(text, skipBlanks(text, at))
		if !ok || text[vs.start] == '$' || bytes.HasPrefix(text[vs.start:vs.end], []byte(tokenPrefix)) {
			return false
		}
		c.flushHeld()
		spans := []span{{start: vs.start, end: vs.end, m: m}}
		for _, s := range c.r.find(text, c.sc) {
			if s.start >= vs.end {
				spans = append(spans, s)
			}
		}
		c.writeLine(raw, text, spans, lineNo)
		return true
	case pendNext:
		m := pd.m
		c.pend = pending{}
		return c.nextWord(raw, text, m, lineNo)
	}
	return false
}

// nextWord masks, with rule m, a line that is one word: the value a line above announced
// (NAME=, a secret flag, Bearer, a password prompt). It reports whether it wrote the line.
func (c *copier) nextWord(raw, text []byte, m int32, lineNo int) bool {
	p, ind := bodyStart(text)
	w := trimBlankEnd(text[p+ind:])
	if len(w) == 0 || bytes.ContainsAny(w, " \t") || w[0] == '-' || !plausibleValue(string(w)) {
		return false
	}
	c.flushHeld()
	c.writeLine(raw, text, []span{{start: p + ind, end: p + ind + len(w), m: m}}, lineNo)
	return true
}

// promptLine reports whether a line that ends with ':' is a prompt for a password whose answer
// a terminal log may show on the next line: "[sudo] password for ubuntu:", "Enter passphrase
// for key '/root/.ssh/id_rsa':", "Password for 'https://ci@git.internal':".
func promptLine(t []byte) bool {
	if len(t) == 0 || len(t) > 160 || t[len(t)-1] != ':' {
		return false
	}
	l := bytes.ToLower(t)
	for _, w := range []string{"password", "passphrase", "pass phrase", "passcode"} {
		if bytes.Contains(l, []byte(w)) {
			return true
		}
	}
	return false
}

// looksStructured reports whether a line of YAML starts a mapping entry or a list item.
func looksStructured(b []byte) bool {
	if bytes.HasPrefix(b, []byte("- ")) || bytes.Equal(bytes.TrimRight(b, "\r"), []byte("-")) {
		return true
	}
	i := 0
	for i < len(b) && isNameChar(b[i]) {
		i++
	}
	return i > 0 && i < len(b) && b[i] == ':' && (i+1 == len(b) || b[i+1] == ' ' || b[i+1] == '\r')
}

// yamlLine takes a line that may continue a YAML value and reports whether it did. The value
// ends before the first line that is not blank and not indented more than its key.
func (c *copier) yamlLine(raw []byte, lineNo int) bool {
	yb := c.yb
	text := bytes.TrimSuffix(raw, []byte("\n"))
	p, ind := bodyStart(text)
	if !blankLine(text[p:]) && ind <= yb.col {
		c.flushYAML()
		return false
	}
	if yb.tok != nil {
		c.write(c.yamlOut(raw))
		return true
	}
	yb.lines = append(yb.lines, append([]byte(nil), raw...))
	yb.size += len(raw)
	if len(yb.lines) >= maxBlockLines || yb.size >= maxBlockBytes {
		c.writeYAML()
	}
	return true
}

// writeYAML masks the YAML value read so far as one secret and writes its lines; the lines
// of the value still to come get the same token.
func (c *copier) writeYAML() {
	yb := c.yb
	var value []byte
	for _, raw := range yb.lines {
		text := trimEOL(raw)
		p, ind := bodyStart(text)
		value = append(value, text[p+ind:]...)
		value = append(value, '\n')
	}
	value = bytes.TrimSpace(value)
	if onlyTokens(value) {
		// Masked by an earlier redaction: redacting twice changes nothing.
		for _, raw := range yb.lines {
			c.write(raw)
		}
		yb.lines = nil
		yb.tok = nil
		c.yb = nil
		return
	}
	yb.tok = c.r.token(nil, yb.m, value)
	if yb.start+len(yb.lines)-1 > c.quietTo {
		c.r.counts[yb.m].Add(1)
		c.record(yb.m, yb.start)
	}
	for _, raw := range yb.lines {
		c.write(c.yamlOut(raw))
	}
	yb.lines = nil
}

// onlyTokens reports whether b holds nothing but tokens of an earlier redaction (and blanks).
func onlyTokens(b []byte) bool {
	for _, f := range bytes.Fields(b) {
		if !bytes.HasPrefix(f, []byte(tokenPrefix)) || f[len(f)-1] != ']' {
			return false
		}
	}
	return true
}

// flushYAML ends the YAML value being read.
func (c *copier) flushYAML() {
	if c.yb == nil {
		return
	}
	if c.yb.tok == nil {
		c.writeYAML()
	}
	c.yb = nil
}

// yamlOut is one line of a masked YAML value: its timestamp and indentation, then the token.
func (c *copier) yamlOut(raw []byte) []byte {
	text := bytes.TrimSuffix(raw, []byte("\n"))
	p, ind := bodyStart(text)
	if blankLine(text[p:]) {
		return raw
	}
	out := append([]byte(nil), text[:p+ind]...)
	out = append(out, c.yb.tok...)
	if bytes.HasSuffix(text, []byte("\r")) {
		out = append(out, '\r')
	}
	return append(out, raw[len(text):]...)
}
