package main

import (
	"fmt"
	"os"
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
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
