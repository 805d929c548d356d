package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Page says which part of a list an answer holds and how to get the rest.
type Page struct {
	// Total is how many items the query has; Offset the first one shown (from 0).
	Total  int `json:"total"`
	Offset int `json:"offset"`
	// NextCursor, when set, is the cursor of the next page: call the tool again with the same
	// arguments and this cursor.
	NextCursor string `json:"nextCursor,omitempty"`
	// Truncated is true when the answer stopped at its size limit before its item limit.
	Truncated bool `json:"truncated,omitempty"`
	// Note says it in words, for a reader that skips the fields.
	Note string `json:"note,omitempty"`
}

// pageOverhead is what an answer holds besides its list: a page is filled to the size limit
// less this much.
const pageOverhead = 2 << 10

// cursor is where a page starts, bound to the query it pages: a cursor from another query
// (or another tool) is refused instead of paging something else.
type cursor struct {
	tool string
	args any // the tool's arguments without their cursor
}

func (c cursor) fingerprint() string {
	b, _ := json.Marshal(c.args)
	h := sha256.Sum256(append([]byte(c.tool+"\x00"), b...))
	return hex.EncodeToString(h[:4])
}

// offset reads a cursor given back: "" is the start.
func (c cursor) offset(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, fp, ok := strings.Cut(s, ".")
	off, err := strconv.Atoi(n)
	if !ok || err != nil || off < 0 {
		return 0, fmt.Errorf("cursor %q is not one this server gave: leave it out to start from the first page", s)
	}
	if fp != c.fingerprint() {
		return 0, fmt.Errorf("cursor %q belongs to other arguments: page with the arguments that gave it, or leave it out", s)
	}
	return off, nil
}

func (c cursor) at(off int) string { return strconv.Itoa(off) + "." + c.fingerprint() }

// page takes the items of one answer from items: from the cursor's offset, at most limit,
// and no more than fit in maxBytes of JSON (at least one, so that a large item is never
// skipped). what names the items in the note ("findings").
func page[T any](items []T, c cursor, cur string, limit, maxBytes int, what string) ([]T, Page, error) {
	off, err := c.offset(cur)
	if err != nil {
		return nil, Page{}, err
	}
	pg := Page{Total: len(items), Offset: off}
	if off > len(items) {
		return nil, pg, fmt.Errorf("cursor %q is past the end (%d %s)", cur, len(items), what)
	}
	budget := maxBytes - pageOverhead
	out := []T{}
	size := 0
	i := off
	for ; i < len(items) && len(out) < limit; i++ {
		b, err := json.Marshal(items[i])
		if err != nil {
			return nil, pg, err
		}
		if len(out) > 0 && size+len(b)+1 > budget {
			pg.Truncated = true
			break
		}
		size += len(b) + 1
		out = append(out, items[i])
	}
	if i < len(items) {
		pg.NextCursor = c.at(i)
		why := ""
		if pg.Truncated {
			why = fmt.Sprintf(" (truncated at the %s answer limit)", sizeText(maxBytes))
		}
		pg.Note = fmt.Sprintf("%d-%d of %d %s%s; ask for the next page with cursor %q", off+1, i, len(items), what, why, pg.NextCursor)
	}
	return out, pg, nil
}

func sizeText(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d-byte", n)
}

// maxLineBytes bounds one line of text in an answer (a log line, a hit, a YAML line): a
// tensor printed on one line must not fill a page.
const maxLineBytes = 2 << 10

// cut shortens s to at most n bytes, between runes, saying how much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + fmt.Sprintf(" … [%d more bytes]", len(s)-k)
}

// clamp keeps n within [lo, hi], with def for 0.
func clamp(n, def, lo, hi int) int {
	if n == 0 {
		n = def
	}
	return max(lo, min(n, hi))
}
