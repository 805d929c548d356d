// Package tests3 runs a real S3-compatible server for tests: versitygw with its posix backend,
// serving a temporary directory (each subdirectory a bucket) on a free port of 127.0.0.1, with
// throwaway keys; stopped when the test ends.
//
// The binary comes from $CORONER_VERSITYGW (scripts/versitygw.sh builds it; make e2e sets it).
// Without it the tests are skipped, unless $CORONER_E2E=1 says they must run.
package tests3

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The server's keys: made up for the test, and what tests look for in logs and bundles.
const (
	AccessKey = "coroner-test-access-AKIA7Q"
	SecretKey = "coroner-test-secret-wJalrXUtnFEMI-K7MDENG"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its http:// URL; Root the directory whose subdirectories are its buckets.
	Endpoint string
	Root     string
}

// Start runs versitygw for t with the buckets named, and stops it when t ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin := os.Getenv("CORONER_VERSITYGW")
	if bin == "" {
		if os.Getenv("CORONER_E2E") == "1" {
			t.Fatal("CORONER_VERSITYGW is not set: run make e2e (scripts/versitygw.sh builds the server)")
		}
		t.Skip("no S3 server: set CORONER_VERSITYGW to versitygw's path (scripts/versitygw.sh builds it), or run make e2e")
	}
	root := t.TempDir()
	for _, b := range buckets {
		if err := os.MkdirAll(filepath.Join(root, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--port", addr, "posix", root)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	s := &Server{Endpoint: "http://" + addr, Root: root}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return s
		}
		select {
		case <-done:
			t.Fatalf("versitygw ended: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not answer on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Env sets the variables coroner reads the object store's address and keys from, for t.
func (s *Server) Env(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", s.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
}

// String names the server.
func (s *Server) String() string { return fmt.Sprintf("versitygw at %s", s.Endpoint) }
