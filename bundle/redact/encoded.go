package redact

import (
	"bytes"
	"encoding/base64"
	"regexp"
)

// base64Markers are words that secrets hold: a base64 blob holding one of them is decoded and
// redacted. A kubeconfig holds client-key-data and token, a PEM block -----BEGIN, a docker
// config "auths" and password.
var base64Markers = []string{"client-key-data", "client-certificate-data", "-----BEGIN", "password", "token", "secret", `"auths"`}

// base64Triggers are the parts of the base64 encoding of each marker that do not depend on
// what surrounds it, at each of the three alignments a word can have in base64.
func base64Triggers(markers ...string) []string {
	var out []string
	for _, m := range markers {
		for a := 0; a < 3; a++ {
			buf := make([]byte, a+len(m)+3)
			copy(buf[a:], m)
			enc := base64.StdEncoding.EncodeToString(buf)
			// Character j holds bits 6j..6j+5: it depends on the marker alone when those bits
			// are all in bytes a..a+len(m)-1.
			first := (a*8 + 5) / 6
			last := ((a+len(m))*8 - 6) / 6
			if last-first+1 >= 6 {
				out = append(out, enc[first:last+1])
			}
		}
	}
	return out
}

// maxBase64 bounds the blob decoded: a kubeconfig is a few kilobytes.
const maxBase64 = 256 << 10

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// base64SecretAt masks the base64 blob around a marker's encoding at b[start:end] when the
// decoded blob holds a secret by any rule (decoded blobs inside it included, to a depth of
// three).
func base64SecretAt(r *Redactor, b []byte, start, end int) (span, bool) {
	s, e := start, end
	for s > 0 && isBase64(b[s-1]) && b[s-1] != '=' && start-s < maxBase64 {
		s-- // '=' is padding: it ends a blob, never starts one (KUBECONFIG_DATA=...)
	}
	for e < len(b) && isBase64(b[e]) && e-end < maxBase64 {
		e++
	}
	dec := decodeBase64(b[s:e])
	if dec == nil {
		return span{}, false
	}
	if !r.holdsSecret(dec) {
		return span{}, false
	}
	return span{start: s, end: e}, true
}

// decodeBase64 decodes a blob that may have lost its padding or its last characters (a line
// cut short); nil when it is not base64 of mostly text.
func decodeBase64(blob []byte) []byte {
	blob = bytes.TrimRight(blob, "=")
	blob = blob[:len(blob)-len(blob)%4]
	if len(blob) < 8 {
		return nil
	}
	dec := make([]byte, base64.RawStdEncoding.DecodedLen(len(blob)))
	n, err := base64.RawStdEncoding.Decode(dec, blob)
	if err != nil {
		return nil
	}
	return dec[:n]
}

// holdsSecret reports whether the text holds anything a rule masks. A blob inside it is
// decoded in turn; each is a quarter smaller, so the work stays within four times the blob.
func (r *Redactor) holdsSecret(text []byte) bool {
	sc := r.getScratch()
	defer r.putScratch(sc)
	return hasMask(r.find(text, sc))
}

// envNameBefore finds the name of an env var written as text just before its value key:
// {"name":"X","value":..., {name: X, value: ..., \"name\":\"X\",\"value\":...
var envNameBefore = regexp.MustCompile(`\bname\\?["']?[ \t]*:[ \t]*\\?["']?([A-Za-z_][A-Za-z0-9_.\-]*)\\?["']?[ \t]*,[ \t]*\\?["']?$`)

// envPairAt masks the value of an env var written as text on one line, whose "value" key is
// at b[start:end], when its name (just before) is a secret's. Any value counts, digits too,
// as in objects.
func envPairAt(r *Redactor, b []byte, start, end int) (span, bool) {
	if start > 0 && isNameChar(b[start-1]) || end < len(b) && isNameChar(b[end]) {
		return span{}, false // valueFrom, default_value
	}
	j := afterName(b, end)
	if j >= len(b) || b[j] != ':' {
		return span{}, false
	}
	from := max(0, start-200)
	m := envNameBefore.FindSubmatchIndex(b[from:start])
	if m == nil {
		return span{}, false
	}
	if _, secret := r.envRule(string(b[from+m[2] : from+m[3]])); !secret {
		return span{}, false
	}
	v, ok := rawValueAt(b, skipBlanks(b, j+1))
	if !ok || b[v.start] == '$' || bytes.HasPrefix(b[v.start:v.end], []byte(tokenPrefix)) {
		return span{}, false
	}
	return v, true
}
