// Package testpg runs a throwaway PostgreSQL server for tests: a cluster made by initdb in a
// temporary directory, listening only on a unix socket there (no TCP port), stopped and
// removed when the test ends. The server refuses to run as root, so as root it runs as the
// postgres user (Debian's postgresql package creates it).
//
// The binaries come from $CORONER_PG_BIN, else the PATH, else /usr/lib/postgresql/*/bin.
// Without them the tests are skipped under -short, and fail otherwise (CI installs them).
package testpg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running PostgreSQL server.
type Server struct {
	bin, dir, data, sock string
	asUser               string // "" runs as the current user
	n                    atomic.Int64
}

// BinDir finds the directory of initdb and pg_ctl ("" when there is none).
func BinDir() string {
	if d := os.Getenv("CORONER_PG_BIN"); d != "" {
		return d
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // a link to Debian's directory, which has psql too
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	return ""
}

// Start makes and starts a server for t, stopped and removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server; skipped with -short (make test and CI run it)")
	}
	s, err := New()
	if err != nil {
		if err == ErrNoBinaries && testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// ErrNoBinaries says that no PostgreSQL server is installed.
var ErrNoBinaries = fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql, or set CORONER_PG_BIN to their directory")

// New makes and starts a server; Close stops and removes it (for a TestMain that shares one
// server between a package's tests).
func New() (*Server, error) {
	bin := BinDir()
	if bin == "" {
		return nil, ErrNoBinaries
	}
	s := &Server{bin: bin}
	dir, err := os.MkdirTemp("", "coroner-pg-")
	if err != nil {
		return nil, err
	}
	s.dir, s.data, s.sock = dir, filepath.Join(dir, "data"), dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("PostgreSQL refuses to run as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.asUser = "postgres"
	}
	if out, err := s.run("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		s.Close()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// run runs one of the server's programs, as the postgres user when we are root.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(s.bin, prog)
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// Start starts the server (again, after Stop).
func (s *Server) Start() error {
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c full_page_writes=off -c max_connections=50", s.sock)
	out, err := s.run("pg_ctl", "-D", s.data, "-o", opts, "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server at once (fast: open sessions are ended), as an outage would.
func (s *Server) Stop() error {
	if out, err := s.run("pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	if _, err := os.Stat(filepath.Join(s.data, "postmaster.pid")); err == nil {
		s.run("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop") //nolint:errcheck // removed below either way
	}
	os.RemoveAll(s.dir)
}

// DSN is the address of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=%s port=5432 user=postgres dbname=%s sslmode=disable", s.sock, db)
}

// NewDatabase creates an empty database for t and returns its DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", s.n.Add(1))
	if out, err := s.run("psql", "-h", s.sock, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v\n%s", name, err, out)
	}
	return s.DSN(name)
}
