package search

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
)

// redactHits masks the secrets of the lines a search prints, as analyze masks its report's
// text (search printed the HF_TOKEN analyze masked, issue 22): each hit with its context
// lines as one text, so what a line says of the next is seen; the tokens are keyed by the
// input's content (searchKey). It returns how many were masked, and by which rules ("hf-token 1, ...").
func redactHits(ctx context.Context, res *index.Result, b *bundle.Bundle, inputs []string) (int, string, error) {
	each := func(red *redact.Redactor) {
		for i := range res.Hits {
			h := &res.Hits[i]
			lines := make([]string, 0, len(h.Before)+1+len(h.After))
			for _, l := range h.Before {
				lines = append(lines, l.Text)
			}
			lines = append(lines, h.Text)
			for _, l := range h.After {
				lines = append(lines, l.Text)
			}
			out := diagnose.RedactWindow(red, lines)
			for j := range h.Before {
				h.Before[j].Text = out[j]
			}
			h.Text = out[len(h.Before)]
			for j := range h.After {
				h.After[j].Text = out[len(h.Before)+1+j]
			}
			h.Template = red.Line(h.Template)
		}
	}
	// Most searches show no secret: a throwaway redactor finds out before the bundle is hashed.
	probe, err := redact.New(redact.Options{})
	if err != nil {
		return 0, "", err
	}
	found := false
	for _, h := range res.Hits {
		texts := []string{h.Text, h.Template}
		for _, l := range append(append([]index.Line(nil), h.Before...), h.After...) {
			texts = append(texts, l.Text)
		}
		t := strings.Join(texts, "\n")
		if probe.Text(t) != t {
			found = true
			break
		}
	}
	if !found {
		return 0, "", nil
	}
	key, err := searchKey(ctx, b, inputs)
	if err != nil {
		return 0, "", err
	}
	red, err := redact.New(redact.Options{Key: key})
	if err != nil {
		return 0, "", err
	}
	each(red)
	total, byRule := red.Masked()
	return total, byRule, nil
}

// searchKey is the key of the tokens, from the content searched so that the same input gives
// the same output: for a tarball, its sha256 (a tarball searched through its cached index has
// not had its logs read this time, so their digest is not known); else the bundle's digest,
// as analyze's.
func searchKey(ctx context.Context, b *bundle.Bundle, inputs []string) ([]byte, error) {
	var f *os.File
	if len(inputs) == 1 && inputs[0] != "-" {
		if st, err := os.Stat(inputs[0]); err == nil && st.Mode().IsRegular() && bundle.IsBundlePath(inputs[0]) {
			if f, err = os.Open(inputs[0]); err != nil {
				return nil, err
			}
			defer f.Close()
		}
	}
	if f == nil {
		key, err := b.Digest(ctx)
		if err != nil {
			return nil, nil // a random key: nothing else to derive one from
		}
		return key, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, bundle.ContextReader(ctx, f)); err != nil {
		return nil, fmt.Errorf("%s: %w", inputs[0], err)
	}
	return h.Sum(nil), nil
}
