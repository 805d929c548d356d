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
		"--password hunter22", "-----BEGIN PRIVATE KEY-----", "Authorization: Bearer abc.def.ghi", "[REDACTED:x:12345678]",
		"+ docker login -u r -p 'Rb0t pw' reg", "sshpass -pN0d3R00t ssh x", "curl --user=ci:'p w' -O u", "sk_live_4eC39HqLyjWDarjtT1zd",
		"bot7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7/x", "\x1b[1;33mpassword\x1b[0m=\x1b[32mC0l0ur\x1b[0m\x1b]0;t\x07", "\x1b[", "\x1b"} {
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

// FuzzText: the stateful redaction of multi-line text (YAML values below their keys, env
// items, values on the next line, wrapped tokens, key blocks) never panics, keeps the line
// count, and is idempotent.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"env:\n- name: PGPASSWORD\n  value: \"1234\"\n",
		"db:\n  password: |\n    hunter2\n    more\n  host: x\n",
		"export HF_TOKEN=hf_AbCdEfGhIjKl\nMnOpQrStUvWxYz0123456789 set\n",
		"export WANDB_API_KEY=\n0a1b2c3d4e5f60718293a4b5c6d7e8f901234567\n",
		"key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n",
		"curl -H 'Authorization: Bearer\n0a1b2c3d4e5f6a7b8c9d0e1f\n",
		"2026-03-14T10:00:01Z   password:\n2026-03-14T10:00:01Z     s3cret\n",
		"Password:\nPr0mpted\nok\n", "[sudo] password for u:\n  Sud0Pw\n", "\x1b[36mpassword:\x1b[0m\n\x1b[1mhunter2x\x1b[0m\n",
	} {
		f.Add(s)
	}
	r, err := New(Options{Key: []byte("fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := r.Text(s)
		if strings.Count(once, "\n") != strings.Count(s, "\n") {
			t.Fatalf("line count changed:\n%q\n%q", s, once)
		}
		if twice := r.Text(once); twice != once {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", s, once, twice)
		}
	})
}
