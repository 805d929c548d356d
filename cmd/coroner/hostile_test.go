package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// The hostile corpus: bundles built by the tests, each broken in one way. Every case ends in
// a one-line error naming the problem, or in a report with a warning and the rest analyzed.

type tarEntry struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data: data}
}

func writeTar(w io.Writer, entries []tarEntry, close bool) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, e.data); err != nil && close {
			return err
		}
	}
	if close {
		if err := tw.Close(); err != nil {
			return err
		}
	} else {
		tw.Flush()
	}
	return zw.Close()
}

func tarFile(t *testing.T, entries ...tarEntry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hostile.tar.gz")
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, writeTar(f, entries, true))
	require.NoError(t, f.Close())
	return p
}

const (
	hostileManifest = `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"p"},"files":[]}`
	hostilePod      = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, uid: u1}\nspec: {containers: [{name: c, image: i}]}\nstatus: {phase: Failed}\n"
	oomLine         = "2026-03-14T10:00:05Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB\n"
)

// good is the sound part of a hostile bundle: it must still be analyzed.
func good() []tarEntry {
	return []tarEntry{reg("manifest.json", hostileManifest), reg("resources/core/Pod/ml/p.yaml", hostilePod), reg("logs/ml/p/c.log", oomLine)}
}

func TestHostileBundlesFail(t *testing.T) {
	var cut bytes.Buffer
	require.NoError(t, writeTar(&cut, []tarEntry{reg("manifest.json", hostileManifest), {hdr: tar.Header{Name: "logs/ml/p/c.log", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4096}, data: "short"}}, false))
	var whole bytes.Buffer
	require.NoError(t, writeTar(&whole, append(good(), reg("logs/ml/p/d.log", strings.Repeat(oomLine, 2000))), true))
	bomb := strings.Repeat("A", 64<<20)
	tests := []struct {
		name  string
		input func(t *testing.T) string
		flags []string
		want  string
	}{
		{"dot-dot", func(t *testing.T) string { return tarFile(t, append(good(), reg("../../etc/cron.d/x", "boom"))...) }, nil, `../../etc/cron.d/x: path escapes the bundle ("..")`},
		{"absolute", func(t *testing.T) string { return tarFile(t, append(good(), reg("/etc/passwd", "x"))...) }, nil, "/etc/passwd: absolute path in tar"},
		{"symlink", func(t *testing.T) string {
			return tarFile(t, append(good(), tarEntry{hdr: tar.Header{Name: "logs/ml/p/e.log", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}})...)
		}, nil, "logs/ml/p/e.log: tar entry is a link"},
		{"hardlink", func(t *testing.T) string {
			return tarFile(t, append(good(), tarEntry{hdr: tar.Header{Name: "logs/ml/p/e.log", Typeflag: tar.TypeLink, Linkname: "manifest.json"}})...)
		}, nil, "logs/ml/p/e.log: tar entry is a link"},
		{"device", func(t *testing.T) string {
			return tarFile(t, append(good(), tarEntry{hdr: tar.Header{Name: "dev/mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1}})...)
		}, nil, "dev/mem: tar entry of type '3' is not a regular file"},
		{"duplicate", func(t *testing.T) string { return tarFile(t, append(good(), reg("logs/ml/p/c.log", "again"))...) }, nil, "logs/ml/p/c.log: duplicate path in tar"},
		{"gzip bomb", func(t *testing.T) string { return tarFile(t, append(good(), reg("logs/ml/p/bomb.log", bomb))...) }, []string{"--max-total-bytes", "16777216"},
			"total uncompressed size exceeds the bundle size limit of 16777216 (raise it with --max-total-bytes)"},
		{"one huge file", func(t *testing.T) string { return tarFile(t, append(good(), reg("logs/ml/p/bomb.log", bomb))...) }, []string{"--max-file-bytes", "1048576"},
			"logs/ml/p/bomb.log: size exceeds the file size limit of 1048576 (raise it with --max-file-bytes)"},
		{"truncated gzip", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "t.tar.gz")
			require.NoError(t, os.WriteFile(p, whole.Bytes()[:whole.Len()*2/3], 0o644))
			return p
		}, nil, "t.tar.gz: logs/ml/p/d.log: archive ends in the middle of this file (truncated download?)"},
		{"tar ends mid-entry", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "cut.tar.gz")
			require.NoError(t, os.WriteFile(p, cut.Bytes(), 0o644))
			return p
		}, nil, "logs/ml/p/c.log: archive ends in the middle of this file (truncated download?)"},
		{"wrong formatVersion", func(t *testing.T) string {
			return tarFile(t, reg("manifest.json", `{"formatVersion":2}`), reg("logs/ml/p/c.log", oomLine))
		}, nil, "manifest.json: formatVersion 2 is not supported (this coroner reads 1)"},
		{"empty file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "empty.tar.gz")
			require.NoError(t, os.WriteFile(p, nil, 0o644))
			return p
		}, nil, "empty.tar.gz: not a gzip file: EOF"},
		{"gzip bomb within the default limits", zeroBomb, nil,
			"MiB so far: a gzip bomb?) exceeds the expansion ratio limit of 100 (raise it with --max-expansion)"},
		{"corrupt gzip", corruptGzip, nil,
			"logs/ml/p/c.log: the archive is corrupt: its gzip checksum fails and this file's sha256 differs from manifest.json"},
		{"a million tiny files", millionFiles, []string{"--max-entries", "1000"}, "number of entries exceeds the entry count limit of 1000 (raise it with --max-entries)"},
	}
	// Cases that write or read tens of megabytes; go test -short leaves them out.
	slow := map[string]bool{"gzip bomb": true, "one huge file": true, "a million tiny files": true, "gzip bomb within the default limits": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && slow[tt.name] {
				t.Skip("tens of megabytes; skipped with -short")
			}
			for _, cmd := range []string{"analyze", "redact", "diff"} {
				args := append([]string{cmd, tt.input(t)}, tt.flags...)
				if cmd == "diff" { // the hostile input as BAD, a sound run as GOOD
					args = append([]string{cmd, "--no-cache", filepath.Join(samplesDir, "pytorchjob-succeeded"), tt.input(t)}, tt.flags...)
				}
				out := filepath.Join(t.TempDir(), "out.tar.gz")
				if cmd == "redact" {
					args = append(args, "-o", out)
				}
				requireExit(t, 1, tt.want, args...)
				_, err := os.Stat(out)
				require.True(t, os.IsNotExist(err), "redact writes nothing")
			}
		})
	}
}

// zeroBomb is the gzip bomb: ten logs of 1 GiB of zeros in a 10 MB tarball, within the
// default size limits. It is made of concatenated gzip members (one valid gzip stream), each
// MiB of zeros the same 1 KB member, so that making it takes no time.
func zeroBomb(t *testing.T) string {
	member := func(data []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
		return buf.Bytes()
	}
	header := func(name string, size int64) []byte {
		var buf bytes.Buffer
		require.NoError(t, tar.NewWriter(&buf).WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}))
		return buf.Bytes()
	}
	p := filepath.Join(t.TempDir(), "bomb.tar.gz")
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	bw := bufio.NewWriter(f)
	mib := member(make([]byte, 1<<20))
	bw.Write(member(header("manifest.json", int64(len(hostileManifest)))))
	bw.Write(member(append([]byte(hostileManifest), make([]byte, 512-len(hostileManifest))...)))
	for i := range 10 {
		bw.Write(member(header(fmt.Sprintf("logs/ml/p/zeros-%d.log", i), 1<<30)))
		for range 1024 {
			bw.Write(mib)
		}
	}
	bw.Write(member(make([]byte, 1024)))
	require.NoError(t, bw.Flush())
	return p
}

// corruptGzip is a bundle whose log has one byte changed after it was compressed: the gzip
// CRC-32 fails at the end of the archive, and the manifest's sha256 names the file.
func corruptGzip(t *testing.T) string {
	m := `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"p"},"files":[{"path":"logs/ml/p/c.log","bytes":` +
		fmt.Sprint(len(oomLine)) + `,"sha256":"` + fmt.Sprintf("%x", sha256.Sum256([]byte(oomLine))) + `"}]}`
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range []tarEntry{reg("logs/ml/p/c.log", oomLine), reg("manifest.json", m)} {
		require.NoError(t, tw.WriteHeader(&e.hdr))
		_, err := tw.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	compress := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	good := compress(raw.Bytes())
	flipped := bytes.Replace(raw.Bytes(), []byte("CUDA out"), []byte("CUDA 0ut"), 1)
	bad := compress(flipped)
	copy(bad[len(bad)-8:], good[len(good)-8:]) // the trailer of the original: its CRC-32 and length
	p := filepath.Join(t.TempDir(), "corrupt.tar.gz")
	require.NoError(t, os.WriteFile(p, bad, 0o644))
	return p
}

// millionFiles is a bundle of a million empty files, streamed through a named pipe: coroner
// must stop at its entry limit, not read (or extract) a million entries.
func millionFiles(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "million.tar.gz")
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for the reader
		if err != nil {
			return
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		zw := gzip.NewWriter(bw)
		tw := tar.NewWriter(zw)
		for i := range 1_000_000 {
			if tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("logs/ml/p/c%07d.log", i), Typeflag: tar.TypeReg, Mode: 0o644}) != nil {
				return // the reader stopped at its limit
			}
		}
		tw.Close()
		zw.Close()
		bw.Flush()
	}()
	t.Cleanup(func() {
		// A writer still waiting for a reader is let go by one that opens and leaves.
		for {
			if f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return p
}

// analyzeHostile analyzes a tarball and returns the JSON report.
func analyzeHostile(t *testing.T, p string, flags ...string) *report.Report {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"analyze", p, "--format", "json"}, flags...)...)
	require.Equal(t, 0, code, stderr)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	return &r
}

func warningWith(t *testing.T, r *report.Report, sub string) {
	t.Helper()
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			require.NotContains(t, w, "\n")
			return
		}
	}
	t.Fatalf("no warning contains %q: %q", sub, r.Warnings)
}

// requireOOM: the sound part of the bundle was analyzed.
func requireOOM(t *testing.T, r *report.Report) {
	t.Helper()
	require.NotNil(t, r.RootCause, "the rest of the bundle is analyzed")
	require.Equal(t, analyze.CategoryCUDAOOM, r.RootCause.Category)
}

func TestHostileBundlesWarn(t *testing.T) {
	t.Run("100 MB single log line", func(t *testing.T) {
		if testing.Short() {
			t.Skip("100 MB; skipped with -short")
		}
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "resources/core/Pod/ml"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "resources/core/Pod/ml/p.yaml"), []byte(hostilePod), 0o644))
		f, err := os.Create(filepath.Join(dir, "logs/ml/p/c.log"))
		require.NoError(t, err)
		chunk := strings.Repeat("progress ", 1<<17)
		for range (100 << 20) / len(chunk) {
			_, err = f.WriteString(chunk)
			require.NoError(t, err)
		}
		_, err = f.WriteString("\n" + oomLine)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		r := analyzeHostile(t, dir)
		warningWith(t, r, "logs/ml/p/c.log: 1 line(s) longer than the line length limit of 1048576 bytes were cut")
		requireOOM(t, r)
		require.Equal(t, 2, r.Logs[0].Lines)

		// Redaction streams it in bounded pieces and keeps it whole.
		out := filepath.Join(t.TempDir(), "r.tar.gz")
		code, _, stderr := run(t, "redact", dir, "-o", out)
		require.Equal(t, 0, code, stderr)
		requireOOM(t, analyzeHostile(t, out))
	})

	t.Run("invalid UTF-8, NUL, ANSI, progress bars, CRLF", func(t *testing.T) {
		log := "2026-03-14T10:00:01Z \x1b[32mINFO\x1b[0m starting\r\n" +
			"2026-03-14T10:00:02Z bad bytes \xff\xfe and a NUL \x00 here\r\n" +
			"2026-03-14T10:00:03Z  10%|█         | 1/10\r 50%|█████     | 5/10\r100%|██████████| 10/10\r\n" +
			"2026-03-14T10:00:05Z \x1b[31mtorch.OutOfMemoryError: CUDA out of memory.\x1b[0m Tried to allocate 2.00 GiB\x00\xff\r\n"
		r := analyzeHostile(t, tarFile(t, reg("manifest.json", hostileManifest), reg("resources/core/Pod/ml/p.yaml", hostilePod), reg("logs/ml/p/c.log", log)))
		requireOOM(t, r)
		ev := r.RootCause.Evidence[0]
		require.Equal(t, 4, ev.Line)
		require.Equal(t, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\uFFFD", ev.Text, "readable: no escapes, NUL or CR")
		for _, c := range append(ev.Before, ev.After...) {
			require.True(t, utf8.ValidString(c.Text))
			require.NotContains(t, c.Text, "\x1b")
			require.NotContains(t, c.Text, "\x00")
			require.NotContains(t, c.Text, "\r")
		}
		require.Equal(t, "100%|██████████| 10/10", ev.Before[2].Text, "the last frame of a progress bar")
	})

	t.Run("billion laughs and deep nesting", func(t *testing.T) {
		var laughs strings.Builder
		laughs.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol, namespace: ml}\ndata:\n  a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
		for i := 1; i < 10; i++ {
			fmt.Fprintf(&laughs, "  a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ","))
		}
		deep := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat("[", 50000) + strings.Repeat("]", 50000) + "}"
		r := analyzeHostile(t, tarFile(t, append(good(), reg("resources/core/ConfigMap/ml/lol.yaml", laughs.String()), reg("resources/core/ConfigMap/ml/deep.json", deep))...))
		warningWith(t, r, "resources/core/ConfigMap/ml/lol.yaml: expands to more than 33554432 bytes through YAML aliases, over twice the resource size limit of 16777216; skipped")
		warningWith(t, r, "resources/core/ConfigMap/ml/deep.json: invalid YAML: yaml: exceeded max depth of 10000; skipped")
		requireOOM(t, r)
		require.Equal(t, "Failed", r.Job.Status, "the pod was read")
	})

	t.Run("resource over the limit", func(t *testing.T) {
		big := hostilePod + "# " + strings.Repeat("x", 4096) + "\n"
		r := analyzeHostile(t, tarFile(t, reg("manifest.json", hostileManifest), reg("resources/core/Pod/ml/p.yaml", big), reg("logs/ml/p/c.log", oomLine)), "--max-resource-bytes", "1024")
		warningWith(t, r, fmt.Sprintf("resources/core/Pod/ml/p.yaml: %d bytes exceeds the resource size limit of 1024; skipped", len(big)))
		requireOOM(t, r)
	})

	t.Run("manifest that lies", func(t *testing.T) {
		m := `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"p"},"files":[` +
			`{"path":"logs/ml/p/c.log","bytes":` + fmt.Sprint(len(oomLine)) + `,"sha256":"` + strings.Repeat("0", 64) + `"},` +
			`{"path":"resources/core/Pod/ml/p.yaml","bytes":3},{"path":"logs/ml/p/gone.log","bytes":1}]}`
		r := analyzeHostile(t, tarFile(t, reg("manifest.json", m), reg("resources/core/Pod/ml/p.yaml", hostilePod), reg("logs/ml/p/c.log", oomLine)))
		warningWith(t, r, "logs/ml/p/c.log: sha256 differs from manifest.json (edited after collection?)")
		warningWith(t, r, fmt.Sprintf("resources/core/Pod/ml/p.yaml: %d bytes, manifest.json says 3 (edited after collection?)", len(hostilePod)))
		warningWith(t, r, "manifest.json lists logs/ml/p/gone.log but the bundle does not hold it")
		requireOOM(t, r)
		// The HTML report shows the warnings too.
		code, html, _ := run(t, "analyze", tarFile(t, reg("manifest.json", m), reg("logs/ml/p/c.log", oomLine)), "--format", "html")
		require.Equal(t, 0, code)
		require.Contains(t, html, "logs/ml/p/c.log: sha256 differs from manifest.json")
	})

	t.Run("empty bundle", func(t *testing.T) {
		// Nothing to analyze is an error, not an UNKNOWN verdict, even with --fail-on.
		for in, what := range map[string]string{tarFile(t): "an empty archive", t.TempDir(): "an empty directory"} {
			requireExit(t, exitError, in+": "+what+", 0 lines read", "analyze", in, "--fail-on", "warning")
		}
	})
}

// TestHostileYAMLIsBoundedWhileDecoding: the YAML that took gigabytes. One 1 MiB
// string aliased 3,000 times (3 GB expanded: it crashed with "out of memory") and 15 MiB of
// one-character values (1.4 GB of parser nodes) are each skipped with a warning, by analyze
// and by redact, and the rest of the bundle is read.
func TestHostileYAMLIsBoundedWhileDecoding(t *testing.T) {
	if testing.Short() {
		t.Skip("16 MB of YAML; skipped with -short")
	}
	var bomb strings.Builder
	bomb.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: ml}\ndata:\n  big: &a \"" + strings.Repeat("x", 1<<20) + "\"\nitems: [")
	bomb.WriteString(strings.Repeat("*a, ", 2999) + "*a]\n")
	tiny := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tiny, namespace: ml}\ndata:\n  n: [" + strings.Repeat("1, ", 5<<20) + "1]\n"
	p := tarFile(t, append(good(), reg("resources/core/ConfigMap/ml/bomb.yaml", bomb.String()), reg("resources/core/ConfigMap/ml/tiny.yaml", tiny))...)
	r := analyzeHostile(t, p)
	warningWith(t, r, "resources/core/ConfigMap/ml/bomb.yaml: expands to more than 33554432 bytes through YAML aliases, over twice the resource size limit of 16777216; skipped")
	warningWith(t, r, "resources/core/ConfigMap/ml/tiny.yaml: holds more than 1048576 YAML values (one per 16 bytes of the resource size limit of 16777216); skipped")
	requireOOM(t, r)

	out := filepath.Join(t.TempDir(), "r.tar.gz")
	code, _, stderr := run(t, "redact", p, "-o", out)
	require.Equal(t, 0, code, stderr)
	requireOOM(t, analyzeHostile(t, out))
}

// TestLogsThatAreNotUTF8Lines: a log saved by PowerShell (UTF-16 with a byte order mark) or
// with "\r" line ends gave "unknown" with no warning; it is decoded and analyzed. A binary
// file is analyzed with a warning.
func TestLogsThatAreNotUTF8Lines(t *testing.T) {
	lines := "2026-03-14T10:00:01Z step 1 loss 2.5\r\n" + oomLine + "2026-03-14T10:00:06Z step 2 done\r\n"
	var le bytes.Buffer
	le.Write([]byte{0xff, 0xfe})
	for _, u := range utf16.Encode([]rune(lines)) {
		le.Write([]byte{byte(u), byte(u >> 8)})
	}
	dir := t.TempDir()
	ps := filepath.Join(dir, "powershell.log")
	require.NoError(t, os.WriteFile(ps, le.Bytes(), 0o644))
	cr := filepath.Join(dir, "mac.log")
	require.NoError(t, os.WriteFile(cr, []byte(strings.ReplaceAll(strings.ReplaceAll(lines, "\r\n", "\n"), "\n", "\r")), 0o644))
	for _, p := range []string{ps, cr} {
		r := analyzeHostile(t, p)
		requireOOM(t, r)
		require.Empty(t, r.Warnings)
		require.Equal(t, 2, r.RootCause.Evidence[0].Line)
		require.Equal(t, "2026-03-14T10:00:05Z", r.RootCause.Time.Format(time.RFC3339))
	}
	bin := filepath.Join(dir, "core.log")
	junk := make([]byte, 8192)
	for i := range junk {
		junk[i] = byte(i*31 + 7)
	}
	require.NoError(t, os.WriteFile(bin, append(junk, "\n"+oomLine...), 0o644))
	r := analyzeHostile(t, bin)
	warningWith(t, r, "looks like binary data, not a log")
}

// TestNodeNotReadyNamesItsPods: a job whose node went NotReady has that for its root cause,
// and the root cause names the pods that were on the node (its pod was empty).
func TestNodeNotReadyNamesItsPods(t *testing.T) {
	m := `{"formatVersion":1,"target":{"apiVersion":"batch/v1","kind":"Job","namespace":"ml","name":"j"},"files":[]}`
	job := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml, uid: j1}\nspec: {parallelism: 3}\nstatus: {failed: 3}\n"
	pod := func(name, node string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ml, uid: " + name + ", labels: {job-name: j}, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: j1}]}\n" +
			"spec: {nodeName: " + node + ", containers: [{name: c, image: i}]}\nstatus: {phase: Unknown}\n"
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-7}\nstatus:\n  conditions:\n  - {type: Ready, status: Unknown, reason: NodeStatusUnknown, message: Kubelet stopped posting node status., lastTransitionTime: \"2026-03-14T10:05:00Z\"}\n"
	r := analyzeHostile(t, tarFile(t, reg("manifest.json", m), reg("resources/batch/Job/ml/j.yaml", job),
		reg("resources/core/Pod/ml/j-b.yaml", pod("j-b", "gpu-7")), reg("resources/core/Pod/ml/j-a.yaml", pod("j-a", "gpu-7")),
		reg("resources/core/Pod/ml/j-c.yaml", pod("j-c", "gpu-1")), reg("resources/core/Node/_cluster/gpu-7.yaml", node)))
	require.NotNil(t, r.RootCause)
	require.Equal(t, "preempted-evicted/node-not-ready", r.RootCause.RuleID)
	require.Equal(t, "j-a", r.RootCause.Pod, "the first pod on the node")
	require.Contains(t, r.RootCause.Evidence[0].Text, "pods on the node: j-a, j-b")
	require.NotContains(t, r.RootCause.Evidence[0].Text, "j-c", "a pod on another node")
}
