package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain points the index cache at a private directory: tests never touch the user's.
func TestMain(m *testing.M) {
	if os.Getenv("CORONER_TEST_RUN_MAIN") == "1" { // a test runs this binary as coroner itself
		main()
	}
	dir, err := os.MkdirTemp("", "coroner-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The go command finds its build cache through XDG_CACHE_HOME too: keep it where it was,
	// or a test that builds the binary would rebuild every dependency.
	if os.Getenv("GOCACHE") == "" {
		if base, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(base, "go-build"))
		}
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
