package bundle

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A log is read as UTF-8 lines ended by "\n". What a stranger hands over may be neither: a log
// saved by PowerShell's ">" is UTF-16 with a byte order mark, one from an old Mac tool ends its
// lines with "\r" alone, and a file named .log may be binary. Open and Stream hand such logs
// to readers as UTF-8 with "\n" line ends, and warn about binary content.

// textForm is how a log's bytes are turned into UTF-8 lines.
type textForm int

const (
	formPlain   textForm = iota
	formUTF8BOM          // a UTF-8 byte order mark: dropped
	formUTF16LE
	formUTF16BE
	formCR // lines ended by "\r" alone: each becomes "\n"
)

func (f textForm) String() string {
	switch f {
	case formUTF8BOM:
		return "UTF-8 with a byte order mark"
	case formUTF16LE:
		return "UTF-16 (little-endian)"
	case formUTF16BE:
		return "UTF-16 (big-endian)"
	case formCR:
		return `lines ended by "\r"`
	}
	return "UTF-8"
}

// sniffSize is how much of a log is looked at to tell its form.
const sniffSize = 64 << 10

// isLog reports whether a bundle path is a container log.
func isLog(p string) bool {
	return strings.HasPrefix(p, "logs/") && strings.HasSuffix(p, ".log")
}

// sniff tells a log's form from its first bytes, and how many of them are not text (NUL and
// control characters other than tab, line ends, form feed and escape; invalid UTF-8), as a
// fraction.
func sniff(head []byte) (textForm, float64) {
	switch {
	case len(head) >= 2 && head[0] == 0xff && head[1] == 0xfe:
		return formUTF16LE, 0
	case len(head) >= 2 && head[0] == 0xfe && head[1] == 0xff:
		return formUTF16BE, 0
	}
	form := formPlain
	if len(head) >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf {
		form, head = formUTF8BOM, head[3:]
	}
	bad, crs, lfs := 0, 0, 0
	for i := 0; i < len(head); {
		// Eight printable ASCII bytes at a time (no byte below 0x20, none 0x7f or above) need
		// no look: most of a log is such text. In a word that holds another byte, the lowest
		// flagged byte is the first such (a borrow runs only up from it), and the bytes
		// before it need no look either: a line end costs one look, not eight.
		if i+8 <= len(head) {
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			x := binary.LittleEndian.Uint64(head[i:])
			m := (x | (x - 0x20*ones) | ((x ^ 0x7f*ones) - ones)) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := head[i]
		switch {
		case c == '\n':
			lfs++
		case c == '\r':
			crs++
		case c == '\t' || c == '\f' || c == 0x1b:
		case c < 0x20 || c == 0x7f:
			bad++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(head[i:])
			if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
				bad++
			}
			i += n
			continue
		}
		i++
	}
	if form == formPlain && lfs == 0 && crs >= 2 {
		form = formCR
	}
	if len(head) == 0 {
		return form, 0
	}
	return form, float64(bad) / float64(len(head))
}

// binaryShare is the share of non-text bytes from which a log is said to be binary.
const binaryShare = 0.10

// textLog wraps a log's reader: it sniffs the log's head and returns a reader of its text as
// UTF-8 with "\n" line ends, its form, and a warning when it looks binary ("" otherwise).
func textLog(name string, r io.Reader) (io.Reader, textForm, string) {
	br := bufio.NewReaderSize(r, sniffSize)
	head, _ := br.Peek(sniffSize)
	form, bad := sniff(head)
	warning := ""
	if form != formUTF16LE && form != formUTF16BE && bad >= binaryShare {
		warning = fmt.Sprintf("%s: looks like binary data, not a log (%.0f%% of its first %d bytes are not text); read as text", name, 100*bad, len(head))
	}
	switch form {
	case formUTF8BOM:
		br.Discard(3)
		return br, form, warning
	case formUTF16LE, formUTF16BE:
		br.Discard(2)
		return &utf16Reader{r: br, be: form == formUTF16BE}, form, warning
	case formCR:
		return &crReader{r: br}, form, warning
	}
	return br, form, warning
}

// copyText copies a log into w as textLog reads it, and returns the size written, the size
// and sha256 of the original bytes, its form and a warning.
func copyText(w io.Writer, name string, r io.Reader) (written, raw int64, sum string, form textForm, warning string, err error) {
	h := sha256.New()
	cr := &countReader{r: io.TeeReader(r, h)}
	tr, form, warning := textLog(name, cr)
	written, err = io.Copy(w, tr)
	if err == nil {
		// What the text reader left unread (a trailing odd byte) still counts in the sum.
		_, err = io.Copy(io.Discard, cr)
	}
	return written, cr.n, hex.EncodeToString(h.Sum(nil)), form, warning, err
}

// utf16Reader decodes UTF-16 into UTF-8. A lone surrogate or a last odd byte becomes U+FFFD.
type utf16Reader struct {
	r   io.Reader
	be  bool
	in  [16 << 10]byte
	n   int // bytes carried in in
	out []byte
	err error
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.err != nil {
			if u.n > 0 { // an odd byte, or a high surrogate, at the end
				u.n = 0
				u.out = utf8.AppendRune(u.out, utf8.RuneError)
				continue
			}
			return 0, u.err
		}
		m, err := u.r.Read(u.in[u.n:])
		u.n += m
		u.err = err
		u.decode()
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// decode turns the whole code units in u.in into UTF-8, keeping an odd byte and a high
// surrogate whose low one has not come yet.
func (u *utf16Reader) decode() {
	unit := func(i int) rune {
		if u.be {
			return rune(u.in[i])<<8 | rune(u.in[i+1])
		}
		return rune(u.in[i+1])<<8 | rune(u.in[i])
	}
	i := 0
	u.out = u.out[:0]
	for ; i+1 < u.n; i += 2 {
		r := unit(i)
		if utf16.IsSurrogate(r) && r < 0xdc00 {
			if i+3 >= u.n {
				if u.err == nil {
					break // its low surrogate is in the next read
				}
				u.out = utf8.AppendRune(u.out, utf8.RuneError)
				continue
			}
			if d := utf16.DecodeRune(r, unit(i+2)); d != utf8.RuneError {
				u.out = utf8.AppendRune(u.out, d)
				i += 2
				continue
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		u.out = utf8.AppendRune(u.out, r)
	}
	u.n = copy(u.in[:], u.in[i:u.n])
}

// crReader turns each "\r" that does not start "\r\n" into "\n".
type crReader struct {
	r    io.Reader
	held bool // a "\r" ended the last read: the next byte says what it was
	buf  []byte
	err  error
}

func (c *crReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(c.buf) == 0 {
		if c.err != nil {
			if c.held {
				c.held = false
				c.buf = append(c.buf, '\n')
				continue
			}
			return 0, c.err
		}
		in := make([]byte, len(p))
		n, err := c.r.Read(in)
		c.err = err
		in = in[:n]
		out := c.buf[:0]
		if c.held && n > 0 {
			c.held = false
			if in[0] == '\n' {
				out = append(out, '\r')
			} else {
				out = append(out, '\n')
			}
		}
		for i, b := range in {
			if b != '\r' {
				out = append(out, b)
				continue
			}
			switch {
			case i+1 == len(in):
				c.held = true
			case in[i+1] == '\n':
				out = append(out, '\r')
			default:
				out = append(out, '\n')
			}
		}
		c.buf = out
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}
