package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// coronerBinary builds coroner once for the tests that need a real process (signals).
func coronerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coroner-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "coroner")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = &exec.Error{Name: "go build", Err: errorString(string(out))}
		}
	})
	require.NoError(t, binErr)
	return binPath
}

type errorString string

func (e errorString) Error() string { return string(e) }

// started is a coroner process whose output and exit we wait for.
type started struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

func start(t *testing.T, tmp string, stdin *os.File, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(coronerBinary(t), args...), done: make(chan error, 1)}
	s.cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
	s.cmd.Stdin = stdin
	s.cmd.Stderr = &s.stderr
	require.NoError(t, s.cmd.Start())
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { s.cmd.Process.Kill() })
	return s
}

// exit sends sig and returns the exit code. The process must stop by itself: the test fails
// (instead of hanging) when it has not after a long grace period.
func (s *started) exit(t *testing.T, sig os.Signal) int {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after %v", sig)
	}
	return s.cmd.ProcessState.ExitCode()
}

// wait returns the exit code of a process that ends by itself; the test fails (instead of
// hanging) when it has not after a long grace period.
func (s *started) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("still running after 60 s; stderr:\n%s", s.stderr.String())
	}
	return s.cmd.ProcessState.ExitCode()
}

// pollUntil polls until cond holds; it fails the test after a long grace period.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// scratchFiles lists what coroner left in its temporary directory (the cache aside).
func scratchFiles(t *testing.T, tmp string) []string {
	t.Helper()
	es, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		if e.Name() != "cache" {
			names = append(names, e.Name())
		}
	}
	return names
}

// feedTarball writes the first part of a bundle tarball into the FIFO at p and keeps it open:
// the reader is left waiting in the middle of the archive.
func feedTarball(t *testing.T, p string) {
	t.Helper()
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		zw := gzip.NewWriter(f)
		tw := tar.NewWriter(zw)
		body := []byte(strings.Repeat("2026-03-14T10:00:00.000000000Z step 1 loss 0.5\n", 2000))
		tw.WriteHeader(&tar.Header{Name: "logs/ml/p/c.log", Mode: 0o644, Size: int64(len(body)) * 2, Typeflag: tar.TypeReg})
		tw.Write(body)
		tw.Flush()
		zw.Flush()
		time.Sleep(time.Minute) // the rest never comes; the test kills the process long before
		f.Close()
	}()
}

func TestSignalStopsEveryCommand(t *testing.T) {
	t.Run("analyze from a pipe, Ctrl-C", func(t *testing.T) {
		tmp := t.TempDir()
		out := filepath.Join(t.TempDir(), "report.html")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer w.Close()
		s := start(t, tmp, r, "analyze", "-", "-o", out)
		r.Close()
		_, err = w.Write([]byte("2026-03-14T10:00:00Z step 1 loss 0.5\n"))
		require.NoError(t, err)
		pollUntil(t, "the copy of standard input", func() bool { return len(scratchFiles(t, tmp)) > 0 })

		require.Equal(t, 130, s.exit(t, os.Interrupt), s.stderr.String())
		require.Equal(t, "coroner: interrupted; nothing written\n", s.stderr.String())
		require.NoFileExists(t, out)
		require.Empty(t, scratchFiles(t, tmp), "no temporary file is left")
	})

	t.Run("analyze from a pipe, SIGTERM", func(t *testing.T) {
		tmp := t.TempDir()
		out := filepath.Join(t.TempDir(), "report.json")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer w.Close()
		s := start(t, tmp, r, "analyze", "-", "-o", out)
		r.Close()
		pollUntil(t, "the copy of standard input", func() bool { return len(scratchFiles(t, tmp)) > 0 })

		require.Equal(t, 143, s.exit(t, syscall.SIGTERM), s.stderr.String())
		require.Equal(t, "coroner: terminated; nothing written\n", s.stderr.String())
		require.NoFileExists(t, out)
		require.Empty(t, scratchFiles(t, tmp))
	})

	// A tarball that arrives slowly (a FIFO, a slow mount): the process is waiting in the
	// middle of the archive when the signal comes.
	for _, args := range [][]string{
		{"analyze", "BUNDLE", "-o", "OUT/report.html"},
		{"search", "BUNDLE", "loss"},
		{"redact", "BUNDLE", "-o", "OUT/redacted.tar.gz"},
	} {
		t.Run(args[0]+" of a tarball that stalls", func(t *testing.T) {
			tmp, outDir := t.TempDir(), t.TempDir()
			fifo := filepath.Join(t.TempDir(), "slow.tar.gz")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			feedTarball(t, fifo)
			var argv []string
			for _, a := range args {
				a = strings.Replace(a, "BUNDLE", fifo, 1)
				argv = append(argv, strings.Replace(a, "OUT", outDir, 1))
			}
			s := start(t, tmp, nil, argv...)
			pollUntil(t, "the extraction (or, for redact, the streaming) to start", func() bool {
				es, _ := filepath.Glob(filepath.Join(tmp, "coroner-bundle-*", "bundle", "logs", "ml", "p", "c.log"))
				return len(es) > 0 || holdsSpool(s.cmd.Process.Pid)
			})

			require.Equal(t, 130, s.exit(t, os.Interrupt), s.stderr.String())
			require.Equal(t, "coroner: interrupted; nothing written\n", s.stderr.String())
			es, err := os.ReadDir(outDir)
			require.NoError(t, err)
			require.Empty(t, es, "nothing under the output name, no temporary file")
			require.Empty(t, scratchFiles(t, tmp), "the extracted files are removed")
		})
	}
}
