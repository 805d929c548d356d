package redact

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pemLines is a real PEM block of the given type, as its lines.
func pemLines(t *testing.T, typ string) []string {
	t.Helper()
	var der []byte
	switch typ {
	case "RSA PRIVATE KEY":
		k, err := rsa.GenerateKey(rand.Reader, 1024)
		require.NoError(t, err)
		der = x509.MarshalPKCS1PrivateKey(k)
	case "EC PRIVATE KEY", "PUBLIC KEY":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		if typ == "PUBLIC KEY" {
			der, err = x509.MarshalPKIXPublicKey(&k.PublicKey)
		} else {
			der, err = x509.MarshalECPrivateKey(k)
		}
		require.NoError(t, err)
	}
	return strings.Split(strings.TrimSuffix(string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})), "\n"), "\n")
}

func stamped(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "2026-03-14T10:00:01.000000000Z " + l
	}
	return out
}

// requireNoBody fails when any base64 line of the key shows in out.
func requireNoBody(t *testing.T, key []string, out string) {
	t.Helper()
	for _, l := range key {
		if !strings.HasPrefix(l, "-----") {
			require.NotContains(t, out, l)
		}
	}
}

// Issue 22: a text that starts in the middle of a key (a window read from a log, a log cut in
// the middle) holds its body and END line but no BEGIN. The END line says what it was.
func TestKeyBodyWithoutBegin(t *testing.T) {
	r := newTest(t)
	for _, typ := range []string{"RSA PRIVATE KEY", "EC PRIVATE KEY"} {
		key := pemLines(t, typ)
		for _, lines := range [][]string{key[1:], stamped(key[2:]), key[len(key)-2:]} {
			in := "loading the key:\n" + strings.Join(lines, "\n") + "\ntorch.OutOfMemoryError: CUDA out of memory\n"
			out := r.Text(in)
			requireNoBody(t, key, out)
			require.Equal(t, strings.Count(in, "\n"), strings.Count(out, "\n"), "one line for one")
			require.Contains(t, out, "torch.OutOfMemoryError: CUDA out of memory\n")
			require.True(t, strings.HasPrefix(out, "loading the key:\n"))
			require.Equal(t, []string{"private-key"}, uniq(rulesIn(out)))

			var buf bytes.Buffer
			_, err := r.Copy(context.Background(), &buf, strings.NewReader(in), "")
			require.NoError(t, err)
			require.Equal(t, out, buf.String(), "a stream is masked as a text")
		}
	}
	// Public blocks and text that only looks like base64 are left alone.
	pub := strings.Join(pemLines(t, "PUBLIC KEY")[1:], "\n")
	require.Equal(t, pub, r.Text(pub))
	plain := "Epoch\n3\nDone\n-----END OF LOG-----\nok"
	require.Equal(t, plain, r.Text(plain))
}

func uniq(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// A window is masked as the whole log is: what the lines above it say (a key's BEGIN, a YAML
// key whose value goes on) counts, and what they hold is neither returned nor counted.
func TestWindowWithLead(t *testing.T) {
	key := pemLines(t, "RSA PRIVATE KEY")
	log := append([]string{"loading credentials"}, key...)
	log = append(log, "config:", "  password: |", "    hunter2-is-not-a-good-one", "    second-line-of-it", "training step 1")
	whole := strings.Split(newTest(t).Text(strings.Join(log, "\n")), "\n")
	for cut := 1; cut < len(log); cut++ {
		r := newTest(t)
		got := r.Window(log[:cut], log[cut:])
		require.Equal(t, whole[cut:], got, "window from line %d", cut+1)
		n := 0
		for _, s := range r.Summary() {
			n += s.Count
		}
		want := 0
		if cut < len(key)+1 {
			want++ // the key shows in the window
		}
		if cut < len(log)-1 {
			want++ // the password's lines do
		}
		require.Equal(t, want, n, "masks counted for the window from line %d: %v %q", cut+1, r.Summary(), got)
	}
}
