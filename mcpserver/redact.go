package mcpserver

import (
	"context"
	"slices"

	"github.com/coroner-dev/coroner/bundle/redact"
)

// mask redacts lines the bundle holds (a log window, an object's YAML) as reports are
// redacted: as one window, with lead, the lines above it in the same file, read first so that
// a window that starts inside a key is masked as the whole file is. The tokens are keyed by
// the bundle's digest, as the report's are: the same secret gives the same token in every
// answer and in the report. Most windows hold no secret: a throwaway key finds out before the
// bundle is hashed. The caller holds b.mu.
func (s *Server) mask(ctx context.Context, b *openBundle, lead, lines []string) ([]string, error) {
	if s.opts.Diagnose.KeepSecrets || len(lines) == 0 {
		return lines, nil
	}
	extra := s.opts.Diagnose.RedactRules
	probe, err := redact.New(redact.Options{Extra: extra})
	if err != nil {
		return nil, err
	}
	if slices.Equal(probe.Window(lead, lines), lines) {
		return lines, nil
	}
	if b.key == nil {
		if b.key, err = b.d.Bundle.Digest(ctx); err != nil {
			return nil, err
		}
	}
	red, err := redact.New(redact.Options{Key: b.key, Extra: extra})
	if err != nil {
		return nil, err
	}
	return red.Window(lead, lines), nil
}
