package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// A FormMemo remembers the directory bundles whose logs were all plain text (UTF-8, "\n" line
// ends, none that looks binary) when last opened, by the logs' signatures (PlainLogsDigest).
// Opening such a bundle again with the same signatures skips looking at each log's head:
// at 16,384 ranks that was an open and a read of every log. The index cache is one.
type FormMemo interface {
	// AllPlain reports whether the logs of b, whose signatures give digest, were all plain
	// text when last seen.
	AllPlain(b *Bundle, digest string) bool
}

type formMemoKey struct{}

// WithFormMemo returns a context under which Open consults m.
func WithFormMemo(ctx context.Context, m FormMemo) context.Context {
	return context.WithValue(ctx, formMemoKey{}, m)
}

func formMemo(ctx context.Context) FormMemo {
	m, _ := ctx.Value(formMemoKey{}).(FormMemo)
	return m
}

type sizesOnlyKey struct{}

// WithManifestSizesOnly returns a context under which Open checks a directory bundle's files
// against manifest.json's sizes but not its SHA-256 sums, which read every file whole: for a
// caller that shows none of the bundle's warnings (search), whose warm search of a collected
// bundle read and hashed every log and resource for them.
func WithManifestSizesOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, sizesOnlyKey{}, true)
}

func manifestSizesOnly(ctx context.Context) bool {
	v, _ := ctx.Value(sizesOnlyKey{}).(bool)
	return v
}

// PlainLogsDigest names the logs of a directory bundle by their signatures (path, size,
// modification and change times, inode: a rewritten file never keeps them) when every log is
// read as it is, plain text; "" otherwise, or when the signatures are not known (a tarball,
// a system without change times).
func (b *Bundle) PlainLogsDigest() string {
	if !b.plainLogs {
		return ""
	}
	return b.logsDigest()
}

// PlainLogsDigestOf is PlainLogsDigest when logs, in order, are the walk's logs, each once;
// "" otherwise. It is then the same bytes a cache's digest of those logs' walk signatures, in
// that order, hashes (index.sigsHash), which need not be hashed twice: at 200,000 files each
// hash was 4% of a warm search.
func (b *Bundle) PlainLogsDigestOf(logs []LogStream) string {
	d := b.PlainLogsDigest()
	if d == "" {
		return ""
	}
	i := 0
	for _, f := range b.walked {
		if !isLog(f.path) {
			continue
		}
		if i == len(logs) || logs[i].Path != f.path {
			return ""
		}
		i++
	}
	if i != len(logs) {
		return ""
	}
	return d
}

// logsDigest hashes the walk's signatures of the files decodeLogs looks at; "" when one is
// missing. It is computed once: the walk's signatures do not change.
func (b *Bundle) logsDigest() string {
	if b.digest == nil {
		d := b.hashWalked()
		b.digest = &d
	}
	return *b.digest
}

func (b *Bundle) hashWalked() string {
	h := sha256.New()
	var line []byte
	if len(b.walked) == 0 {
		return ""
	}
	for _, f := range b.walked { // every file of the bundle, in path order
		if !isLog(f.path) {
			continue
		}
		sig := f.sig
		if sig.Ino == 0 && sig.Ctime == 0 {
			return ""
		}
		// The bytes of fmt's "%q %d %d %d %d\n", as index.sigsHash writes them.
		line = AppendQuoted(line[:0], f.path)
		for _, n := range []int64{sig.Size, sig.Mtime, sig.Ctime} {
			line = strconv.AppendInt(append(line, ' '), n, 10)
		}
		line = strconv.AppendUint(append(line, ' '), sig.Ino, 10)
		h.Write(append(line, '\n'))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AppendQuoted appends strconv.Quote(p): a path of printable ASCII without a quote or a
// backslash, as most are, is its own quoting (strconv escapes rune by rune: a warm search of
// 200,000 files quotes every path twice).
func AppendQuoted(b []byte, p string) []byte {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, p)
		}
	}
	b = append(b, '"')
	b = append(b, p...)
	return append(b, '"')
}
