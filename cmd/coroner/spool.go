package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/internal/scratch"
)

// spoolMemory is how much of a report is held in memory before the rest goes to a file.
const spoolMemory = 16 << 20

// spoolPrefix names the temporary files of reports larger than spoolMemory.
const spoolPrefix = "coroner-report-"

// spool holds a rendered report until it is whole, so that nothing is written when rendering
// fails or is interrupted: in memory up to spoolMemory, then in a temporary file (a report of
// 200,000 findings is hundreds of megabytes).
type spool struct {
	mem bytes.Buffer
	f   *scratch.File
}

func (s *spool) Write(p []byte) (int, error) {
	if s.f == nil && s.mem.Len()+len(p) <= spoolMemory {
		return s.mem.Write(p)
	}
	if s.f == nil {
		scratch.Sweep("", spoolPrefix)
		f, err := scratch.CreateTemp("", spoolPrefix+"*")
		if err != nil {
			return 0, fmt.Errorf("holding the report: %w", err)
		}
		s.f = f
		if _, err := s.mem.WriteTo(f); err != nil {
			return 0, fmt.Errorf("holding the report: %w", err)
		}
		s.mem = bytes.Buffer{}
	}
	n, err := s.f.Write(p)
	if err != nil {
		err = fmt.Errorf("holding the report: %w", err)
	}
	return n, err
}

// WriteTo writes the report held to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	if s.f == nil {
		return io.Copy(w, bytes.NewReader(s.mem.Bytes()))
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, s.f)
}

// writeFile writes the report held to the output named path, as outfile.WriteFile does.
func (s *spool) writeFile(path string) error {
	if s.f == nil {
		return outfile.WriteFile(path, s.mem.Bytes())
	}
	out, err := outfile.Create(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := s.WriteTo(out); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Commit()
}

// Close removes the temporary file, if any.
func (s *spool) Close() {
	if s.f != nil {
		s.f.Remove()
	}
}
