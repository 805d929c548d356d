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
	for _, f := range b.Files {
		if !isLog(f.Path) {
			continue
		}
		sig, ok := b.walked[f.Path]
		if !ok || sig.Ino == 0 && sig.Ctime == 0 {
			return ""
		}
		line = strconv.AppendQuote(line[:0], f.Path)
		for _, n := range []int64{sig.Size, sig.Mtime, sig.Ctime, int64(sig.Ino)} {
			line = strconv.AppendInt(append(line, ' '), n, 10)
		}
		h.Write(append(line, '\n'))
	}
	return hex.EncodeToString(h.Sum(nil))
}
