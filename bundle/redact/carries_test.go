package redact

import (
	"bufio"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// carryPool is lines of every kind the copier reads: ordinary log lines, one-line secrets,
// the lines of multi-line ones (keys, YAML and env values, announced values, wrapped tokens)
// and what looks like them.
func carryPool(t *testing.T) []string {
	pool := []string{
		"2026-03-14T10:00:01.123Z [rank3] step=1200 loss=2.3456 lr=1.0e-04",
		"Epoch 3/10: 100%|##########| 500/500 [01:02<00:00]",
		"[rank0]: Traceback (most recent call last):",
		"  File \"train.py\", line 12, in <module>",
		"RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error",
		"",
		"   ",
		"done",
		"Starting",
		"----------------------------------------",
		"export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		"HF_TOKEN=hf_AbCdEfGhIjKlMn",
		"OpQrStUvWxYz0123456789 set",
		"token ghp_0123456789abcdefghijABCDEFGHIJ0123",
		"45AbCdEf",
		"curl -H 'Authorization: Bearer",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc rest",
		"login --password",
		"s3cr3t-value-here",
		"DB_PASSWORD=",
		"config:",
		"  password: |",
		"    hunter2-is-not-a-good-one",
		"    second-line-of-it",
		"env:",
		"- name: PGPASSWORD",
		"  value: pg-secret-1",
		"Password:",
		"\"api_key\": >-",
		"2026-03-14T10:00:01.000000000Z MIIEowIBAAKCAQEA1234567890abcdef",
		"url https://example.com/x?sig=AbCdEfGhIjKlMnOpQrStUv%2B0123&se=2026",
	}
	pool = append(pool, pemLines(t, "RSA PRIVATE KEY")...)
	pool = append(pool, stamped(pemLines(t, "EC PRIVATE KEY"))...)
	return pool
}

// idle reports whether the copier keeps nothing for the next line but, maybe, the line itself
// (a token that may be wrapped).
func (c *copier) idle() bool {
	return !c.inBlock && len(c.cand) == 0 && c.yb == nil && c.pend.kind == pendNone
}

// A line for which Carries is false leaves the copier as it found it, idle or holding only a
// line, whatever it held; a line that starts a multi-line secret Carries.
func TestCarries(t *testing.T) {
	r := newTest(t)
	pool := carryPool(t)
	for _, a := range pool {
		for _, b := range pool {
			if r.Carries([]byte(b)) {
				continue
			}
			var sink strings.Builder
			c := &copier{r: r, w: bufio.NewWriter(&sink), sc: r.getScratch()}
			if !r.Carries([]byte(a)) {
				c.line([]byte(a+"\n"), 1)
				require.True(t, c.idle(), "%q", a)
			}
			c.line([]byte(b+"\n"), 2)
			require.True(t, c.idle(), "%q then %q left state", a, b)
			r.putScratch(c.sc)
		}
	}
	for _, l := range []string{"-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA1234567890abcdef", "  password: |",
		"- name: PGPASSWORD", "DB_PASSWORD=", "login --password", "curl -H 'Authorization: Bearer", "45AbCdEf",
		"2026-03-14T10:00:01.000000000Z hf_AbCdEf-0123_xyz"} {
		require.True(t, r.Carries([]byte(l)), "%q", l)
	}
	for _, l := range []string{"2026-03-14T10:00:01.123Z [rank3] step=1200 loss=2.3456", "config:", "",
		"RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error"} {
		require.False(t, r.Carries([]byte(l)), "%q", l)
	}
}

// A window whose lead holds no line that Carries is masked, and its masks counted, as with its
// lead cut to its last line: leads and windows drawn from the pool.
func TestWindowLeadCut(t *testing.T) {
	pool := carryPool(t)
	rnd := rand.New(rand.NewPCG(1, 28))
	plain := newTest(t)
	cut := 0
	for range 4000 {
		lead := make([]string, 1+rnd.IntN(6))
		for i := range lead {
			lead[i] = pool[rnd.IntN(len(pool))]
		}
		carries := false
		for _, l := range lead[:len(lead)-1] {
			carries = carries || plain.Carries([]byte(l))
		}
		if carries {
			continue
		}
		cut++
		lines := make([]string, 1+rnd.IntN(4))
		for i := range lines {
			lines[i] = pool[rnd.IntN(len(pool))]
		}
		full, short := newTest(t), newTest(t)
		require.Equal(t, full.Window(lead, lines), short.Window(lead[len(lead)-1:], lines), "lead %q", lead)
		require.Equal(t, full.Summary(), short.Summary(), "lead %q, lines %q", lead, lines)
	}
	require.Greater(t, cut, 500, "too few leads without a line that carries")
}

// TestHasBegin: the look at each dash finds what bytes.Contains finds.
func TestHasBegin(t *testing.T) {
	for _, s := range []string{"", "-", "-----BEGIN", "----BEGIN", "x------BEGIN RSA", "a-b--c---d----e-----BEGI",
		"lr 3.00e-04 -----BEGIN OPENSSH PRIVATE KEY-----", strings.Repeat("-", 40), strings.Repeat("-", 40) + "BEGIN"} {
		require.Equal(t, strings.Contains(s, "-----BEGIN"), hasBegin([]byte(s)), "%q", s)
	}
}

// TestNeverCarries: whenever NeverCarries says no line of some parts carries, no line made of
// them does, whatever its variable words: random parts of the bytes and words each check of
// Carries looks for, with random words of digits and letters between them.
func TestNeverCarries(t *testing.T) {
	r := newTest(t)
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"[", "]", "(", "|", "*", ",", "@", "<", " ", "  ", "\t", "-", "--", "-----", "-----BEGIN",
		"#", ":", "=", ">", "+", "a", "B", "x", "n", "name:", " name: ", " bearer", " Bearer", " --token", "password:",
		"HF_TOKEN=", " step ", " | loss ", ".", "GiB", " ms", "T", "2026-03-14T", "]: ", "_", "/"}
	words := []string{"0", "7", "42", "2026", "x1", "1b", "0xdeadbeef", "3GiB", "rank5", "12345678901234567890"}
	never := 0
	for round := 0; round < 20000; round++ {
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			var sb strings.Builder
			if i == 0 && rng.IntN(2) == 0 {
				sb.WriteString("[")
			}
			for k := rng.IntN(4); k > 0; k-- {
				sb.WriteString(pieces[rng.IntN(len(pieces))])
			}
			parts[i] = sb.String()
		}
		if !NeverCarries(parts) {
			continue
		}
		never++
		for k := 0; k < 20; k++ {
			var sb strings.Builder
			sb.WriteString(parts[0])
			for _, p := range parts[1:] {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteString(p)
			}
			line := sb.String()
			require.False(t, r.Carries([]byte(line)), "parts %q: %q carries", parts, line)
		}
	}
	require.Greater(t, never, 1000)
	require.True(t, NeverCarries([]string{"[rank", "]: step ", " | loss ", ".", " | lr ", ".", "e-", " | mem ", ".", "GiB"}))
}
