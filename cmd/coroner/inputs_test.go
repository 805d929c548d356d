package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInputsThatAreNotBundles: what people give coroner by mistake is an error (exit 1) with
// one line saying what was expected, never an UNKNOWN verdict with exit 0, even with
// --fail-on warning; analyze and search say the same.
func TestInputsThatAreNotBundles(t *testing.T) {
	dir := t.TempDir()
	bundles := filepath.Join(dir, "bundles")
	for _, s := range []string{"pytorchjob-nan-loss", "pytorchjob-evicted"} {
		copyDir(t, filepath.Join(samplesDir, s), filepath.Join(bundles, s))
	}
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	logsDir := filepath.Join(samplesDir, "pytorchjob-nan-loss", "logs")
	plainDir := filepath.Join(samplesDir, "logs")
	emptyLog := filepath.Join(dir, "empty.log")
	require.NoError(t, os.WriteFile(emptyLog, nil, 0o644))
	nested := filepath.Join(dir, "unpacked")
	copyDir(t, filepath.Join(samplesDir, "pytorchjob-nan-loss"), filepath.Join(nested, "pytorchjob-nan-loss"))
	handMade := filepath.Join(dir, "hand-made") // bundles without manifest.json
	for _, s := range []string{"a", "b"} {
		copyDir(t, filepath.Join(samplesDir, "pytorchjob-nan-loss", "logs"), filepath.Join(handMade, s, "logs"))
	}
	plainTar := filepath.Join(dir, "bundle.tar")
	writePlainTar(t, plainTar, map[string]string{"manifest.json": `{"formatVersion":1}`})
	zipped := filepath.Join(dir, "bundle.zip")
	writeZip(t, zipped, map[string]string{"manifest.json": `{"formatVersion":1}`})

	for _, tt := range []struct {
		name, in, stderr string
	}{
		{"a directory of bundles", bundles, bundles + " holds 2 bundles (pytorchjob-evicted, pytorchjob-nan-loss): give one of them"},
		{"an empty directory", empty, empty + ": an empty directory, 0 lines read: expected a bundle"},
		{"a bundle's logs folder", logsDir, logsDir + " looks like a bundle's logs/ folder (NAMESPACE/POD/CONTAINER.log): give the bundle, its parent directory, or the log files themselves"},
		{"a directory of log files", plainDir, plainDir + " is a directory of log files, not a bundle: give the files (coroner analyze " + plainDir + "/*.log)"},
		{"a directory of bundles made by hand", handMade, handMade + " holds 2 bundles (a, b): give one of them"},
		{"a directory holding one bundle", nested, nested + ": the bundle is in pytorchjob-nan-loss/: analyze " + filepath.Join(nested, "pytorchjob-nan-loss")},
		{"an empty file", emptyLog, emptyLog + ": 0 lines read: expected log lines, or a bundle"},
		{"an uncompressed tar", plainTar, plainTar + ": an uncompressed tar: gzip it"},
		{"a zip", zipped, zipped + ": a zip archive: extract it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireExit(t, exitError, "coroner: "+tt.stderr, "analyze", tt.in, "--fail-on", "warning")
			if tt.name != "an empty file" {
				requireExit(t, exitError, "coroner: "+tt.stderr, "search", tt.in, "x", "--no-cache")
			}
		})
	}
	t.Run("empty standard input", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), []string{"analyze", "-", "--fail-on", "warning"}, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		require.Equal(t, exitError, code)
		require.Equal(t, "coroner: standard input: 0 lines read: expected log lines, or a bundle (a directory or .tar.gz made by coroner collect)\n", errOut.String())
		require.Empty(t, out.String())
	})
}

// TestPlainLogsKeepTheirNames: evidence, the logs table and the summary name a plain log by
// its own file name (train-plain.log:170), not by the bundle path coroner gives it; the JSON
// contract keeps its path and adds fileName.
func TestPlainLogsKeepTheirNames(t *testing.T) {
	log := filepath.Join(samplesDir, "logs", "train-plain.log")
	out := requireExit(t, exitOK, "", "analyze", log, "--no-cache")
	require.Contains(t, out, "Evidence:    train-plain.log:170\n")
	require.Contains(t, out, "plain logs: train-plain.log (207 lines read)")
	require.Contains(t, out, "in train-plain.log, rank 2\n", "the verdict names the file and the rank")
	require.NotContains(t, out, "logs/_/")

	r, _ := analyzeJSON(t, nil, log, "--no-cache")
	ev := r.RootCause.Evidence[0]
	require.Equal(t, "logs/_/train-plain/main.log", ev.File, "the contract's file is unchanged")
	require.Equal(t, "train-plain.log", ev.FileName)
	require.Equal(t, "train-plain.log:170", ev.Location())
	require.Equal(t, "train-plain.log", r.Logs[0].FileName)

	md := requireExit(t, exitOK, "", "analyze", log, "--format", "md", "--no-cache")
	require.Contains(t, md, "*train-plain.log:170*")
	require.NotContains(t, md, "logs/\\_/")

	// Two files of one name stay apart, named by the directories they were saved in (the
	// pods of logs saved per pod); an empty one among others is a warning.
	dir := t.TempDir()
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	a, b := filepath.Join(dir, "a", "train.log"), filepath.Join(dir, "b", "train.log")
	for _, p := range []string{a, b} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	empty := filepath.Join(dir, "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	r, _ = analyzeJSON(t, nil, a, b, empty, "--no-cache")
	var names []string
	for _, l := range r.Logs {
		names = append(names, l.FileName)
	}
	require.ElementsMatch(t, []string{"a/train.log", "b/train.log", "empty.log"}, names)
	require.Contains(t, r.Warnings, "empty.log: 0 lines read")
}

// TestSizesAcceptUnits: every size flag reads 10Mi, 64KiB or a plain number, and says what
// it wants when it cannot.
func TestSizesAcceptUnits(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	for _, cmd := range [][]string{{"analyze", sample, "-q"}, {"search", sample, "nan"}} {
		requireExit(t, exitOK, "", append(cmd, "--max-file-bytes", "10Mi", "--max-total-bytes", "1Gi", "--max-line-bytes", "64KiB",
			"--max-resource-bytes", "1048576", "--no-cache")...)
		requireExit(t, exitUsage, `invalid argument "lots" for "--max-file-bytes" flag: want a size such as 4096, 64Ki, 10Mi or 1Gi`,
			append(cmd, "--max-file-bytes", "lots")...)
	}
	requireExit(t, exitError, "(raise it with --max-file-bytes)", "analyze", sample, "--max-file-bytes", "1Ki", "--no-cache")
	out := filepath.Join(t.TempDir(), "r.tar.gz")
	requireExit(t, exitOK, "", "redact", sample, "-o", out, "--max-line-bytes", "1Mi")
}

// TestOutputFlagsAgree: -o is a file and --format a format, on analyze and search alike; -o
// with a format's name says so.
func TestOutputFlagsAgree(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	dir := t.TempDir()
	for _, cmd := range [][]string{{"analyze", sample}, {"search", sample, "nan"}} {
		requireExit(t, exitUsage, "-o json would write a file named \"json\"", append(cmd, "-o", "json", "--no-cache")...)
		p := filepath.Join(dir, cmd[0]+".json")
		requireExit(t, exitOK, "", append(append([]string{}, cmd...), "-o", p, "--no-cache")...)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.True(t, json.Valid(data), "%s -o x.json writes JSON", cmd[0])
		out := requireExit(t, exitOK, "", append(cmd, "--format", "json", "--no-cache")...)
		require.True(t, json.Valid([]byte(out)), "%s --format json prints JSON", cmd[0])
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	}))
}

// writePlainTar writes an uncompressed tar.
func writePlainTar(t *testing.T, p string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
}

func writeZip(t *testing.T, p string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
}
