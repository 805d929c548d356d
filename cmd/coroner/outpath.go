package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// checkOutput refuses an output path (given with flag) that is one of the inputs, or inside
// an input directory: writing it would replace what is being read (a tarball, a log inside
// the bundle), or add the output, or its temporary file, to the bundle it is made from. Links
// are followed on both sides; "-" (standard input) and empty names are not paths.
func checkOutput(flag, out string, inputs ...string) error {
	if out == "" || out == "-" {
		return nil
	}
	o := resolvePath(out)
	ost, oerr := os.Stat(out)
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue // the input's own error comes when it is opened
		}
		if oerr == nil && os.SameFile(ost, ist) {
			return fmt.Errorf("%s %s is the input %s: write it elsewhere", flag, out, in)
		}
		if ist.IsDir() {
			if rel, err := filepath.Rel(resolvePath(in), o); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%s %s is inside the input %s: write it elsewhere", flag, out, in)
			}
		}
	}
	return nil
}

// resolvePath makes p absolute with its links resolved, as far as it exists.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
