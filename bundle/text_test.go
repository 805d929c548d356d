package bundle

import (
	"bytes"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// utf16Bytes is s in UTF-16 with a byte order mark, as PowerShell's ">" writes it.
func utf16Bytes(s string, bigEndian bool) []byte {
	var b bytes.Buffer
	if bigEndian {
		b.Write([]byte{0xfe, 0xff})
	} else {
		b.Write([]byte{0xff, 0xfe})
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b.Write([]byte{byte(u >> 8), byte(u)})
		} else {
			b.Write([]byte{byte(u), byte(u >> 8)})
		}
	}
	return b.Bytes()
}

const oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB 🔥\r\n"

// TestLogsNotInUTF8Lines: a log in UTF-16 (either byte order) or with "\r" line ends is read
// as UTF-8 lines, in a plain file, a directory bundle, a tarball and a stream alike; a binary
// file is read with a warning. Before, such logs were one long line of NULs and "unknown".
func TestLogsNotInUTF8Lines(t *testing.T) {
	want := "step 1\r\nstep 2\r\n" + oom
	cases := map[string][]byte{
		"utf16le.log": utf16Bytes(want, false),
		"utf16be.log": utf16Bytes(want, true),
		"cr.log":      []byte(strings.ReplaceAll(strings.ReplaceAll(want, "\r\n", "\n"), "\n", "\r")),
		"bom.log":     append([]byte{0xef, 0xbb, 0xbf}, want...),
	}
	wantLines := map[string]string{"cr.log": strings.ReplaceAll(want, "\r\n", "\n")}
	dir := t.TempDir()
	var paths []string
	for name, data := range cases {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		paths = append(paths, p)
	}
	b, err := OpenLogs(t.Context(), paths, nil, DefaultLimits())
	require.NoError(t, err)
	for _, f := range b.Files {
		data, err := fs.ReadFile(b.FS, f.Path)
		require.NoError(t, err)
		name := strings.TrimSuffix(strings.TrimPrefix(f.Path, "logs/_/"), "/main.log") + ".log"
		w := want
		if l, ok := wantLines[name]; ok {
			w = l
		}
		require.Equal(t, w, string(data), name)
		require.EqualValues(t, len(data), f.Size, "%s: the listed size is the decoded one", name)
	}
	require.Empty(t, b.Warnings)
	require.NoError(t, b.Close())

	// A bundle directory and its tarball, with a manifest of the bytes as they are: no
	// warning that the files differ from it.
	bdir := t.TempDir()
	var entries []entry
	m := `{"formatVersion":1,"files":[`
	i := 0
	for name, data := range cases {
		p := "logs/ml/p/" + strings.TrimSuffix(name, ".log") + ".log"
		require.NoError(t, os.MkdirAll(filepath.Join(bdir, "logs/ml/p"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bdir, p), data, 0o644))
		entries = append(entries, entry{hdr: file(p, "").hdr, data: data})
		entries[len(entries)-1].hdr.Size = int64(len(data))
		if i > 0 {
			m += ","
		}
		m += `{"path":"` + p + `","bytes":` + strconv.Itoa(len(data)) + `,"sha256":"` + sha(string(data)) + `"}`
		i++
	}
	m += "]}"
	require.NoError(t, os.WriteFile(filepath.Join(bdir, "manifest.json"), []byte(m), 0o644))
	entries = append(entries, file("manifest.json", m))
	for _, src := range []string{bdir, writeTarGz(t, entries...)} {
		b, err := Open(t.Context(), src, DefaultLimits())
		require.NoError(t, err, src)
		require.Empty(t, b.Warnings, src)
		data, err := fs.ReadFile(b.FS, "logs/ml/p/utf16le.log")
		require.NoError(t, err)
		require.Equal(t, want, string(data))
		require.NoError(t, b.Close())

		got := map[string]string{}
		s, err := Stream(t.Context(), src, DefaultLimits(), func(f File, r io.Reader) error {
			data, err := io.ReadAll(r)
			got[f.Path] = string(data)
			return err
		})
		require.NoError(t, err)
		require.Empty(t, s.Warnings)
		require.Equal(t, want, got["logs/ml/p/utf16be.log"])
		require.Equal(t, wantLines["cr.log"], got["logs/ml/p/cr.log"])
	}

	// Binary content is read, with a warning.
	bin := filepath.Join(dir, "core.log")
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(bin, append(junk, oom...), 0o644))
	b, err = OpenLogs(t.Context(), []string{bin}, nil, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Len(t, b.Warnings, 1)
	require.Contains(t, b.Warnings[0], "logs/_/core/main.log: looks like binary data, not a log (")
	require.Contains(t, b.Warnings[0], "read as text")
}

// TestTextReadersAcrossReads: the decoders hold a surrogate pair, an odd byte and a "\r" that
// end one read until the next, reading one byte at a time.
func TestTextReadersAcrossReads(t *testing.T) {
	s := "a𝄞b\r\nc\rd\r"
	for _, be := range []bool{false, true} {
		data := utf16Bytes(s, be)[2:]
		got, err := io.ReadAll(&utf16Reader{r: iotest.OneByteReader(bytes.NewReader(data)), be: be})
		require.NoError(t, err)
		require.Equal(t, s, string(got))
		got, err = io.ReadAll(&utf16Reader{r: bytes.NewReader(append(data, 0x41)), be: be})
		require.NoError(t, err)
		require.Equal(t, s+"\uFFFD", string(got), "a last odd byte")
	}
	got, err := io.ReadAll(&crReader{r: iotest.OneByteReader(strings.NewReader(s))})
	require.NoError(t, err)
	require.Equal(t, "a𝄞b\r\nc\nd\n", string(got))
}

// TestSniffCountsEveryByte: sniff's eight-bytes-at-a-time skip of printable ASCII counts the
// same line ends and bad bytes as a look at every byte, wherever they fall in a word.
func TestSniffCountsEveryByte(t *testing.T) {
	slow := func(head []byte) (bad, crs, lfs int) {
		for i := 0; i < len(head); {
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
		return bad, crs, lfs
	}
	specials := []byte{0, 1, '\t', '\n', '\r', 0x1b, 0x1f, ' ', '~', 0x7f, 0x80, 0xc3, 0xa9, 0xff}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		head := make([]byte, rnd.IntN(80))
		sparse := 2 + rnd.IntN(30) // one special byte in this many, near or far apart
		for i := range head {
			head[i] = byte('a' + rnd.IntN(26))
			if rnd.IntN(sparse) == 0 {
				head[i] = specials[rnd.IntN(len(specials))]
			}
		}
		bad, crs, lfs := slow(head)
		form, share := sniff(head)
		wantForm := formPlain
		if lfs == 0 && crs >= 2 {
			wantForm = formCR
		}
		if len(head) >= 2 && head[0] == 0xff && head[1] == 0xfe {
			continue // UTF-16: not counted
		}
		if form == formUTF8BOM || wantForm != form {
			t.Fatalf("%q: form %v, want %v", head, form, wantForm)
		}
		if want := float64(bad) / float64(max(len(head), 1)); share != want {
			t.Fatalf("%q: bad share %v, want %v", head, share, want)
		}
	}
}

// BenchmarkSniff: the head of a training log of 16 KiB, lines of about 120 bytes.
func BenchmarkSniff(b *testing.B) {
	var head []byte
	for step := 1; len(head) < 16<<10; step++ {
		head = append(head, "2026-03-14T08:05:28.285714285Z [rank3482]: step "...)
		head = strconv.AppendInt(head, int64(step), 10)
		head = append(head, " | loss 3.3525 | lr 3.00e-04 | grad_norm 0.705 | tokens/s 40314 | mem 65.4GiB\n"...)
	}
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		sniff(head)
	}
}
