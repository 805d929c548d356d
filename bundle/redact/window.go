package redact

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"unicode/utf8"
)

// A key's body without its BEGIN line: a log cut in the middle of a key (the kept end of a
// truncated log), or a window of a log read back from the middle of one. Its lines are plain
// base64 and no rule finds anything in them alone; the END line that follows says what they
// were. The copier keeps such a run back until it knows.

// quiet marks the spans of a line above the window as not counted.
func (c *copier) quiet(spans []span, lineNo int) []span {
	if lineNo <= c.quietTo {
		for i := range spans {
			spans[i].nocount = true
		}
	}
	return spans
}

// candLine takes a line that may be part of a key body seen without its BEGIN line, and
// reports whether it took it: kept back (cand), or written with the run before it as one key
// when it is the key's END line. Any other line first lets the kept lines go on as text.
func (c *copier) candLine(raw []byte, lineNo int) bool {
	if len(c.cand) == 0 && (c.yb != nil || c.pend.kind != pendNone || c.held != nil) {
		return false // a run starts only where no other state waits for this line
	}
	text := trimEOL(raw)
	body := text[stampLen(text):]
	if len(c.cand) > 0 {
		if secretPEMEnd(body) {
			c.candKey(raw)
			return true
		}
		if candBody(body, true) {
			c.candAdd(raw)
			return true
		}
		c.flushCand()
		return false
	}
	if !candBody(body, false) {
		return false
	}
	c.candNo = lineNo
	c.candAdd(raw)
	return true
}

func (c *copier) candAdd(raw []byte) {
	c.cand = append(c.cand, append([]byte(nil), raw...))
	c.candSize += len(raw)
	// A key is at most maxBlockLines lines: the oldest line beyond it is text.
	for len(c.cand) > 0 && (len(c.cand) > maxBlockLines || c.candSize > maxBlockBytes) {
		c.replay(c.cand[0], c.candNo)
		c.candSize -= len(c.cand[0])
		c.cand = c.cand[1:]
		c.candNo++
	}
}

// replay processes a kept line as any line.
func (c *copier) replay(raw []byte, lineNo int) {
	c.replaying = true
	c.line(raw, lineNo)
	c.replaying = false
}

// flushCand lets the kept lines go on as text: they were not a key.
func (c *copier) flushCand() {
	cand, n := c.cand, c.candNo
	c.cand, c.candSize = nil, 0
	for i, raw := range cand {
		c.replay(raw, n+i)
	}
}

// candKey writes the kept lines and their END line as one private key, as a block that began
// at the first kept line's text.
func (c *copier) candKey(end []byte) {
	lines := append(c.cand, append([]byte(nil), end...))
	first := trimEOL(lines[0])
	p, ind := bodyStart(first)
	c.block, c.blockTok = lines, nil
	c.blockAt, c.blockStart = p+ind, c.candNo
	c.cand, c.candSize = nil, 0
	c.flushBlock()
	c.blockTok = nil
}

// candBody reports whether a line's text (after its timestamp) can be a line of a PEM body:
// one base64 word, maybe indented or quoted. Within a run (more), also a blank line or one of
// the headers of an encrypted key.
func candBody(body []byte, more bool) bool {
	if i := firstNonBlank(body); i < len(body) && body[i] < utf8.RuneSelf && !asciiSpace(body[i]) && !base64Byte(body[i]) {
		// The first byte of the trimmed body fails the loop below, and no Proc-Type or
		// DEK-Info line starts with it: false, without trimming.
		return false
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || bytes.HasPrefix(t, []byte("Proc-Type:")) || bytes.HasPrefix(t, []byte("DEK-Info:")) {
		return more
	}
	for _, c := range t {
		if !base64Byte(c) {
			return false
		}
	}
	return true
}

// base64Byte is a byte a key's body (base64, maybe quoted and escaped) holds.
func base64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '\\' || c == '"'
}

// firstNonBlank is the index of the first byte of b that is not ' ', or len(b).
func firstNonBlank(b []byte) int {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

// asciiSpace is an ASCII byte bytes.TrimSpace trims.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// secretPEMEnd reports whether a line holds the END line of a PEM block of a key that is not
// public: PRIVATE KEY of any kind (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK) or a key of a
// kind not known here. Certificates and public keys are not secrets.
func secretPEMEnd(body []byte) bool {
	i := bytes.Index(body, []byte("-----END "))
	if i < 0 {
		return false
	}
	rest := body[i+len("-----END "):]
	j := bytes.Index(rest, []byte("-----"))
	if j <= 0 {
		return false
	}
	label := string(rest[:j])
	for _, r := range label {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ' ') {
			return false
		}
	}
	return strings.Contains(label, "KEY") && !strings.Contains(label, "PUBLIC")
}

// Window returns lines, a window cut out of a log, with every secret masked as Copy masks it
// in the whole log: lead holds the lines just above the window (as many as the caller can
// read; WindowLead is enough for any key or YAML value of a bounded size), read for what they
// say of the window's lines (a key that began above it, a YAML key whose value it shows) and
// neither returned nor counted. A window is one text, one line for one.
func (r *Redactor) Window(lead, lines []string) []string {
	multi := len(lines) == 0
	for _, l := range lead {
		multi = multi || strings.Contains(l, "\n")
	}
	for _, l := range lines {
		multi = multi || strings.Contains(l, "\n")
	}
	if multi {
		// A line that holds a newline of its own: no telling lines apart; each alone, then.
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = r.Text(l)
		}
		return out
	}
	all := make([]string, 0, len(lead)+len(lines))
	all = append(all, lead...)
	all = append(all, lines...)
	s := strings.Join(all, "\n")
	var b strings.Builder
	b.Grow(len(s))
	c := &copier{r: r, w: bufio.NewWriterSize(&b, min(len(s)+16, 4<<10)), sc: r.getScratch(), quietTo: len(lead)}
	c.copy(context.Background(), strings.NewReader(s), min(len(s)+1, readSize))
	r.putScratch(c.sc)
	out := strings.Split(b.String(), "\n")
	if len(out) != len(all) {
		out = make([]string, len(lines))
		for i, l := range lines {
			out[i] = r.Text(l)
		}
		return out
	}
	return out[len(lead):]
}

// WindowLead is how many lines above a window Window needs to see to mask it as the whole log
// is masked: more than the longest key block the copier reads.
const WindowLead = maxBlockLines + 56

// Carries reports whether the copier, reading line with nothing kept from the lines above it,
// may keep something for the lines below it other than the line itself: a private key's BEGIN
// line, what may be a key's body (a base64 word alone), a word alone that may go on a token
// wrapped from the line above, a secret's YAML or env key whose value is below, a NAME=, a
// secret flag or "Bearer" at the line's end. It finds no secret (no rule runs): it is cheap
// enough for every line of a scan, and errs on the side of true.
//
// A window whose lead (the lines above it, see Window) holds no line that Carries is masked
// as it is with its lead cut to its last line: nothing but a token wrapped into the window
// reaches it.
func (r *Redactor) Carries(line []byte) bool {
	text := trimEOL(line)
	p, ind := bodyStart(text)
	body := text[p:]
	if candBody(body, false) || hasBegin(body) {
		return true
	}
	// One word alone: it may continue a token wrapped from the line above and end as one,
	// which holds this line for the next in turn.
	if word := body[ind:]; len(word) > 0 && tokenWord(word) {
		return true
	}
	// With no span, announce is never quieter than with the line's own.
	return r.announced(text, p, ind, nil).kind != pendNone
}

// NeverCarries reports whether Carries is false for every line made of parts with a variable
// word between each two: a non-empty run of word bytes (ASCII letters, digits, underscores,
// bytes past ASCII) that holds an ASCII digit, as the scan's shapes have them. It decides only
// from what the parts fix, and errs on the side of false. Each of Carries' checks is false:
//   - no kubelet timestamp: the first part has a byte at 4, 7 or 10 that a timestamp has not;
//   - the first part has a non-blank byte, which is then the body's first: neither a key
//     body's byte (candBody), nor a token's (tokenWord: so no list item's "- ", no "name:");
//   - no part holds "-----" (a word byte is no dash: five dashes are within one part) or '#';
//   - the last part ends, past its blanks, with a byte that ends no YAML key, NAME= or flag;
//     or with a letter, when the line's last word starts with no dash and is no "bearer"
//     (a word that reaches into a variable word holds a digit).
func NeverCarries(parts []string) bool {
	p0 := parts[0]
	if !(len(p0) > 4 && p0[4] != '-' || len(p0) > 7 && p0[7] != '-' || len(p0) > 10 && p0[10] != 'T') {
		return false
	}
	ind := firstNonBlank([]byte(p0))
	if ind == len(p0) {
		return false
	}
	if c := p0[ind]; c >= utf8.RuneSelf || asciiSpace(c) || base64Byte(c) || isTokenChar(c) {
		return false
	}
	for _, p := range parts {
		if strings.Contains(p, "-----") || strings.IndexByte(p, '#') >= 0 {
			return false
		}
	}
	t := string(trimBlankEnd([]byte(parts[len(parts)-1])))
	if t == "" {
		return false
	}
	switch last := t[len(t)-1]; {
	case last == ':' || last == '|' || last == '>' || last == '+' || last == '-' || last == '=' || last >= '0' && last <= '9':
		return false
	case !(last >= 'a' && last <= 'z' || last >= 'A' && last <= 'Z'):
		return true
	}
	// The last word: after the last blank of the last part that has one.
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if i == len(parts)-1 {
			p = t
		}
		k := strings.LastIndexAny(p, " \t")
		if k < 0 {
			continue
		}
		if i == len(parts)-1 {
			word := p[k+1:] // all of it fixed
			return word[0] != '-' && !strings.EqualFold(word, "bearer")
		}
		return k+1 == len(p) || p[k+1] != '-'
	}
	return true // no blank: the word is the line, which starts with p0[ind], no dash
}

// hasBegin is bytes.Contains(b, "-----BEGIN") for a line with a dash or two (a log line's
// dates and exponents), where bytes.Index costs more than looking at each dash.
func hasBegin(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '-')
		if i < 0 {
			return false
		}
		// A constant string compared: loads, where bytes.HasPrefix calls memequal.
		if len(b)-i >= len("-----BEGIN") && string(b[i:i+len("-----BEGIN")]) == "-----BEGIN" {
			return true
		}
		b = b[i+1:]
	}
}

// tokenWord reports whether w is made of the characters of a token only.
func tokenWord(w []byte) bool {
	for _, c := range w {
		if !isTokenChar(c) {
			return false
		}
	}
	return true
}
