package redact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRedact: redaction never panics, is idempotent (redacting redacted text changes
// nothing), and Copy of one line agrees with Line except inside key blocks.
func FuzzRedact(f *testing.F) {
	logs, _ := filepath.Glob("../../samples/*/logs/*/*/*.log")
	for i, p := range logs {
		if i%4 != 0 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.SplitN(string(data), "\n", 20) {
			f.Add(l)
		}
	}
	for _, s := range []string{"HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "postgres://u:p4ssw0rd@h/db", `{\"token\": \"abcdefg\"}`,
		"--password hunter22", "-----BEGIN PRIVATE KEY-----", "Authorization: Bearer abc.def.ghi", "[REDACTED:x:12345678]"} {
		f.Add(s)
	}
	r, err := New(Options{Key: []byte("fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := r.Line(s)
		if twice := r.Line(once); twice != once {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", s, once, twice)
		}
		if strings.ContainsAny(s, "\n") || strings.Contains(strings.ToUpper(s), "PRIVATE KEY") {
			return
		}
		var out bytes.Buffer
		if _, err := r.Copy(t.Context(), &out, strings.NewReader(s+"\n"), "f"); err != nil {
			t.Fatal(err)
		}
		if out.String() != once+"\n" {
			t.Fatalf("Copy and Line differ:\n%q\n%q", out.String(), once+"\n")
		}
	})
}
