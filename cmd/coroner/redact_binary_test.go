package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

// binaryBundle is a bundle (a directory) whose secrets are in files the text rules cannot
// read: a gzip'd log, a nested tarball, a UTF-16 file outside logs/, a small zip, an image.
type binaryBundle struct {
	dir     string
	secrets []string
	zip     []byte
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func utf16LE(s string) []byte {
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		out = binary.LittleEndian.AppendUint16(out, u)
	}
	return out
}

func makeBinaryBundle(t *testing.T) *binaryBundle {
	t.Helper()
	bb := &binaryBundle{dir: t.TempDir()}
	write := func(rel string, data []byte) {
		f := filepath.Join(bb.dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, data, 0o644))
	}
	hf := "hf_" + fill(1, 34, alnum)
	gh := "ghp_" + fill(2, 36, alnum)
	pw := "Utf16Pw" + fill(3, 10, alnum)
	zipTok := "hf_" + fill(4, 34, alnum)
	pngTok := "hf_" + fill(5, 34, alnum)
	bb.secrets = []string{hf, gh, pw, zipTok, pngTok}

	write("logs/ml/p/c.log", []byte("2026-03-14T10:00:00Z starting\n"))
	write("logs/ml/p/c.previous.log.gz", gzipped(t, []byte("2026-03-14T09:00:00Z HF_TOKEN="+hf+" loaded\n2026-03-14T09:00:01Z epoch 1 done\n")))

	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	body := []byte("GITHUB_TOKEN=" + gh + "\n")
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "env.txt", Mode: 0o644, Size: int64(len(body))}))
	_, err := tw.Write(body)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	write("attachments/debug.tar", tb.Bytes())

	write("notes/creds.txt", utf16LE("db host: pg.internal\r\npassword="+pw+"\r\n"))

	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	zf, err := zw.CreateHeader(&zip.FileHeader{Name: "cfg.env", Method: zip.Store})
	require.NoError(t, err)
	_, err = zf.Write([]byte("HF_TOKEN=" + zipTok + "\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	bb.zip = zb.Bytes()
	write("attachments/cfg.zip", bb.zip)

	coreTok := "ghp_" + fill(6, 36, alnum)
	bb.secrets = append(bb.secrets, coreTok)
	write("logs/ml/p/dump.log", append(bytes.Repeat([]byte{0, 1, 2, 0xff}, 64), []byte(" GITHUB_TOKEN="+coreTok)...))

	write("attachments/plot.png", append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte("tEXt token "+pngTok)...))
	return bb
}

// tarFiles reads a bundle tarball's files; gzip'd ones are decompressed (they must be valid
// gzip).
func tarFiles(t *testing.T, p string) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if strings.HasSuffix(h.Name, ".gz") {
			gr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(t, err, h.Name)
			data, err = io.ReadAll(gr)
			require.NoError(t, err, h.Name)
		}
		out[h.Name] = data
	}
	return out
}

// TestRedactFilesThatAreNotText: gzip is redacted inside, UTF-16 is decoded and redacted, and
// what cannot be read as text is left out and said so, unless the user insists.
func TestRedactFilesThatAreNotText(t *testing.T) {
	bb := makeBinaryBundle(t)
	out := filepath.Join(t.TempDir(), "redacted.tar.gz")
	code, stdout, stderr := run(t, "redact", bb.dir, "-o", out)
	require.Equal(t, 0, code, stderr)

	raw := rawTar(t, out)
	files := tarFiles(t, out)
	for _, s := range bb.secrets {
		require.NotContains(t, string(raw), s)
		require.NotContains(t, string(raw), string(utf16LE(s)[2:]))
		for name, data := range files {
			require.NotContains(t, string(data), s, name)
		}
	}

	gz := string(files["logs/ml/p/c.previous.log.gz"])
	require.Contains(t, gz, "HF_TOKEN=[REDACTED:hf-token:")
	require.Contains(t, gz, "epoch 1 done", "the rest of the gzip'd log is kept")
	notes := string(files["notes/creds.txt"])
	require.Contains(t, notes, "db host: pg.internal\r\npassword=[REDACTED:secret-assignment:", "UTF-16 decoded and redacted, written as UTF-8")

	for _, p := range []string{"attachments/cfg.zip", "attachments/plot.png", "attachments/debug.tar"} {
		require.NotContains(t, files, p, "withheld")
	}
	require.Equal(t, []string{
		"withheld: attachments/cfg.zip: a zip archive cannot be redacted; left out of " + out + " (--keep-unredacted-binaries keeps it as it is)",
		"withheld: attachments/debug.tar: a tar archive cannot be redacted; left out of " + out + " (--keep-unredacted-binaries keeps it as it is)",
		"withheld: attachments/plot.png: an image cannot be redacted; left out of " + out + " (--keep-unredacted-binaries keeps it as it is)",
		"withheld: logs/ml/p/dump.log: binary data cannot be redacted; left out of " + out + " (--keep-unredacted-binaries keeps it as it is)",
	}, withheldLines(stderr), stderr)
	require.NotContains(t, stderr, "read as text", "a withheld log is not said to be read")
	require.Contains(t, stdout, "Redacted 2 secret(s) in 3 file(s)")

	b, err := bundle.Open(t.Context(), out, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []bundle.RedactionFile{
		{Path: "attachments/cfg.zip", Action: "withheld", Reason: "a zip archive"},
		{Path: "attachments/debug.tar", Action: "withheld", Reason: "a tar archive"},
		{Path: "attachments/plot.png", Action: "withheld", Reason: "an image"},
		{Path: "logs/ml/p/dump.log", Action: "withheld", Reason: "binary data"},
	}, b.Manifest.Redaction.Files)

	// Redacting the redacted bundle again keeps the notes of what the first run left out.
	again := filepath.Join(t.TempDir(), "again.tar.gz")
	code, _, stderr = run(t, "redact", out, "-o", again)
	require.Equal(t, 0, code, stderr)
	b2, err := bundle.Open(t.Context(), again, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b2.Close()
	require.Equal(t, b.Manifest.Redaction.Files, b2.Manifest.Redaction.Files)
}

func withheldLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "withheld: ") {
			out = append(out, l)
		}
	}
	return out
}

// TestRedactKeepUnredactedBinaries: the user insists; binaries are copied byte for byte, and
// each is named on stderr and in the manifest.
func TestRedactKeepUnredactedBinaries(t *testing.T) {
	bb := makeBinaryBundle(t)
	out := filepath.Join(t.TempDir(), "kept.tar.gz")
	code, _, stderr := run(t, "redact", bb.dir, "-o", out, "--keep-unredacted-binaries", "-q")
	require.Equal(t, 0, code, stderr)
	files := tarFiles(t, out)
	require.Equal(t, bb.zip, files["attachments/cfg.zip"], "not corrupted by the text rules")
	require.Contains(t, stderr, "warning: attachments/cfg.zip: a zip archive copied unredacted (--keep-unredacted-binaries): it may hold secrets")
	require.Contains(t, string(files["logs/ml/p/c.previous.log.gz"]), "[REDACTED:hf-token:", "text is still redacted")
	m, err := bundle.ParseManifest(files["manifest.json"])
	require.NoError(t, err)
	require.Len(t, m.Redaction.Files, 4)
	for _, f := range m.Redaction.Files {
		require.Equal(t, "kept unredacted", f.Action, f.Path)
	}
}

// TestRedactGzipBombInBundle: a gzip'd file is bounded as the bundle is.
func TestRedactGzipBombInBundle(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "logs/ml/p/c.log.gz")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, gzipped(t, bytes.Repeat([]byte("0123456789abcdef\n"), 256<<10)), 0o644))
	out := filepath.Join(t.TempDir(), "x.tar.gz")
	code, _, stderr := run(t, "redact", dir, "-o", out, "--max-file-bytes", "1048576")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "logs/ml/p/c.log.gz: decompressed size exceeds the file size limit")
	require.Contains(t, stderr, "--max-file-bytes")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "nothing written")
}
