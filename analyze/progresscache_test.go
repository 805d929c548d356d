package analyze

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProgressMemoAnswersAsThePatterns: a scan worker's memo of the progress patterns'
// answers by masked line says what the patterns say, the step included, for every progress
// example and for the same lines with other digits, whichever of them it saw first.
func TestProgressMemoAnswersAsThePatterns(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	require.True(t, rs.progBlind, "a progress pattern or literal tells digits apart: the memo is off")
	var lines []string
	for _, r := range rs.progress {
		for _, e := range append(r.Examples.Match, r.Examples.NotMatch...) {
			lines = append(lines, strings.Split(e.Text, "\n")...)
		}
	}
	require.NotEmpty(t, lines)
	shift := func(s string, by byte) string {
		b := []byte(s)
		for i, c := range b {
			if c >= '0' && c <= '9' {
				b[i] = '0' + (c-'0'+by)%10
			}
		}
		return string(b)
	}
	var all []string
	for _, l := range lines {
		all = append(all, l, shift(l, 1), shift(l, 7), shift(l, 9))
	}
	for _, order := range [][]string{all, reversed(all)} {
		s := &logScanner{rs: rs, sc: rs.NewScratch()}
		for _, l := range order {
			wantOK, wantStep := rs.matchProgress([]byte(l), rs.NewScratch())
			ok, step := s.matchProgress([]byte(l))
			require.Equal(t, wantOK, ok, "%q", l)
			require.Equal(t, wantStep, step, "%q", l)
		}
		require.Positive(t, s.sc.progAnswered, "lines alike but for their digits are answered by the memo")
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestDigitBlind: an expression or literal that tells one digit from another turns the
// memo off.
func TestDigitBlind(t *testing.T) {
	for _, c := range []struct {
		re   string
		lits []string
		want bool
	}{
		{`(?i)\bstep\s*(?P<step>\d+)\b[^\n]{0,80}?\bloss\b`, []string{"step", "loss"}, true},
		{`\w+ [^|]+ .`, nil, true},
		{`step 1\d`, nil, false},
		{`epoch [0-5]`, nil, false},
		{`[a-f\d]+`, nil, true},
		{`iter \d+`, []string{"x86"}, false},
	} {
		require.Equal(t, c.want, digitBlind([]*regexp.Regexp{regexp.MustCompile(c.re)}, c.lits), c.re)
	}
}
