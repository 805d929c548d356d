// Package redact masks secrets in bundle files, log lines and Kubernetes objects before they
// are written to a bundle or sent to an LLM. A secret becomes a token that names the rule and
// an HMAC of the value, "[REDACTED:hf-token:1a2b3c4d]": the same secret gives the same token
// within one Redactor (a reader can tell two values apart), and the HMAC key is random per
// Redactor and never stored, so tokens cannot be reversed by guessing.
//
// Every line is first scanned by one case-folding Aho-Corasick automaton (internal/literal,
// the one the rule prefilter uses) for the literals the rules need ("hf_", "AKIA", "://", "password"...); regular expressions run only on the lines
// that hold one, which keeps redaction near memory speed on multi-GiB logs.
package redact

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/literal"
)

// Options configure a Redactor.
type Options struct {
	// Key is the HMAC key of the tokens; nil means 32 random bytes, never stored.
	Key []byte
	// Extra are the user's rules (see LoadRules), applied before the built-in ones.
	Extra []Rule
	// KeepBinary makes Bundle copy the files it cannot read as text (archives, images,
	// binary data) as they are, unredacted, instead of leaving them out.
	KeepBinary bool
}

// Location is where a secret was masked: a file and line of a log, or a file and field of an
// object. It never holds the value.
type Location struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
	Rule  string `json:"rule"`
}

// maxLocations bounds the locations a Redactor remembers; the rest are only counted.
const maxLocations = 100_000

// Redactor masks secrets. It is safe for concurrent use.
type Redactor struct {
	key      []byte
	ms       []*matcher // by priority: the user's rules, the built-in ones, the object-level ones
	byID     map[string]int
	ac       *literal.Matcher
	trig     []trigRef // by trigger id
	always   []int32   // matchers with no trigger: they run on every line
	counts   []atomic.Int64
	envRules []int32

	scratch sync.Pool
	macs    sync.Pool

	keepBinary bool

	mu      sync.Mutex
	locs    []Location
	dropped int
	files   []bundle.RedactionFile // what Bundle did with files that are not text
}

// trigRef says what a trigger found by the automaton means.
type trigRef struct {
	m   int32 // matcher index; -1 for the start of an existing token
	lit int32 // index into the matcher's literals, or -1 when the trigger only enables its regexps
	n   int32 // the trigger's length
}

// tokenPrefix starts every token. Text already redacted is left alone, so redacting twice
// changes nothing.
const tokenPrefix = "[REDACTED:"

// New compiles the built-in rules and opts.Extra.
func New(opts Options) (*Redactor, error) {
	key := opts.Key
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("redaction key: %w", err)
		}
	}
	r := &Redactor{key: append([]byte(nil), key...), byID: map[string]int{}, keepBinary: opts.KeepBinary}
	if err := checkUnique(opts.Extra); err != nil {
		return nil, err
	}
	for _, ru := range opts.Extra {
		m, err := compileRule(ru)
		if err != nil {
			return nil, err
		}
		r.ms = append(r.ms, m)
	}
	r.ms = append(r.ms, builtins...)
	r.ms = append(r.ms, &matcher{id: ruleSecret})
	triggers := []string{tokenPrefix}
	r.trig = []trigRef{{m: -1, lit: -1}}
	for i, m := range r.ms {
		r.byID[m.id] = i
		if m.envName != nil {
			r.envRules = append(r.envRules, int32(i))
		}
		for li, l := range m.literals {
			triggers = append(triggers, l)
			r.trig = append(r.trig, trigRef{m: int32(i), lit: int32(li), n: int32(len(l))})
		}
		for _, t := range m.triggers {
			triggers = append(triggers, t)
			r.trig = append(r.trig, trigRef{m: int32(i), lit: -1, n: int32(len(t))})
		}
		if len(m.res) > 0 && len(m.triggers) == 0 {
			r.always = append(r.always, int32(i))
		}
	}
	r.ac = literal.NewMatcher(triggers)
	r.counts = make([]atomic.Int64, len(r.ms))
	r.scratch.New = func() any { return &scratch{cand: make([]bool, len(r.ms))} }
	r.macs.New = func() any { return hmac.New(sha256.New, r.key) }
	return r, nil
}

// span is a piece of a line to mask, found by matcher m (-1: an existing token, kept).
type span struct {
	start, end int
	m          int32
	// tok, when set, is the mask to write (a token that spans two lines); nocount says it was
	// counted already.
	tok     []byte
	nocount bool
}

type scratch struct {
	hits   []literal.Hit
	cand   []bool
	marked []int32
	sel    []span
	tmp    []span
	layer  []span
	out    []byte
}

func (r *Redactor) getScratch() *scratch  { return r.scratch.Get().(*scratch) }
func (r *Redactor) putScratch(s *scratch) { r.scratch.Put(s) }

// find returns the spans of b to mask, sorted and not overlapping, in sc.sel. Where rules
// disagree, the earlier rule wins. A line with terminal escape codes is read as a terminal
// shows it (see findShown).
func (r *Redactor) find(b []byte, sc *scratch) []span {
	if bytes.IndexByte(b, 0x1b) >= 0 {
		return r.findShown(b, sc)
	}
	return r.findPlain(b, sc)
}

func (r *Redactor) findPlain(b []byte, sc *scratch) []span {
	sc.hits = literal.Append(r.ac, b, sc.hits[:0])
	sc.sel = sc.sel[:0]
	if len(sc.hits) == 0 && len(r.always) == 0 {
		return nil
	}
	sc.marked = sc.marked[:0]
	for _, m := range r.always {
		sc.cand[m] = true
		sc.marked = append(sc.marked, m)
	}
	var tokens []span
	literal := false
	for _, h := range sc.hits {
		t := r.trig[h.ID]
		switch {
		case t.m < 0:
			tokens = append(tokens, tokenSpan(b, h.End))
		case t.lit >= 0:
			literal = true
			if !sc.cand[t.m] {
				sc.cand[t.m] = true
				sc.marked = append(sc.marked, t.m)
			}
		case !sc.cand[t.m]:
			sc.cand[t.m] = true
			sc.marked = append(sc.marked, t.m)
		}
	}
	sort.Slice(sc.marked, func(i, j int) bool { return sc.marked[i] < sc.marked[j] })
	// Existing tokens come first: nothing inside them is masked again.
	sc.sel = append(sc.sel, tokens...)
	sortSpans(sc.sel)
	for _, mi := range sc.marked {
		sc.cand[mi] = false
		m := r.ms[mi]
		if literal && len(m.literals) > 0 {
			sc.layer = sc.layer[:0]
			for _, h := range sc.hits {
				t := r.trig[h.ID]
				if t.m != mi || t.lit < 0 {
					continue
				}
				l := m.literals[t.lit]
				if start := h.End - len(l); start >= 0 && string(b[start:h.End]) == l {
					sc.layer = append(sc.layer, span{start: start, end: h.End, m: mi})
				}
			}
			sortSpans(sc.layer)
			r.merge(sc, dropOverlaps(sc.layer))
		}
		if m.local != nil {
			sc.layer = sc.layer[:0]
			for _, h := range sc.hits {
				t := r.trig[h.ID]
				if t.m != mi {
					continue
				}
				if s, ok := m.local(r, b, h.End-int(t.n), h.End); ok {
					s.m = mi
					sc.layer = append(sc.layer, s)
				}
			}
			sortSpans(sc.layer)
			r.merge(sc, dropOverlaps(sc.layer))
		}
		for ri, re := range m.res {
			sc.layer = sc.layer[:0]
			for _, sm := range re.FindAllSubmatchIndex(b, -1) {
				s, ok := m.secretSpan(b, ri, sm)
				if ok {
					s.m = mi
					sc.layer = append(sc.layer, s)
				}
			}
			r.merge(sc, sc.layer)
		}
	}
	return sc.sel
}

// tokenSpan is the extent of an existing token whose "[REDACTED:" ends at end.
func tokenSpan(b []byte, end int) span {
	start := end - len(tokenPrefix)
	for i := end; i < len(b) && i < end+128; i++ {
		if b[i] == ']' {
			return span{start: start, end: i + 1, m: -1}
		}
	}
	return span{start: start, end: end, m: -1}
}

// secretSpan picks the masked part of one match, and checks its name and value.
func (m *matcher) secretSpan(b []byte, ri int, sm []int) (span, bool) {
	s := span{start: sm[0], end: sm[1]}
	for _, g := range m.groups[ri] {
		if sm[2*g] >= 0 {
			s = span{start: sm[2*g], end: sm[2*g+1]}
			break
		}
	}
	if s.end <= s.start {
		return s, false
	}
	if g := m.nameGroup[ri]; g >= 0 && m.nameOK != nil && sm[2*g] >= 0 && !m.nameOK(string(b[sm[2*g]:sm[2*g+1]])) {
		return s, false
	}
	if m.valueOK != nil && !m.valueOK(string(b[s.start:s.end])) {
		return s, false
	}
	return s, true
}

func sortSpans(s []span) {
	if len(s) < 2 {
		return
	}
	slices.SortFunc(s, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
}

// dropOverlaps keeps, of sorted spans, those that do not overlap an earlier one.
func dropOverlaps(s []span) []span {
	out := s[:0]
	for _, x := range s {
		if len(out) > 0 && x.start < out[len(out)-1].end {
			continue
		}
		out = append(out, x)
	}
	return out
}

// merge adds the spans of one lower-priority layer (sorted, not overlapping) to sc.sel,
// dropping those that overlap a span already selected. It is linear in both.
func (r *Redactor) merge(sc *scratch, layer []span) {
	if len(layer) == 0 {
		return
	}
	out := sc.tmp[:0]
	sel := sc.sel
	j := 0
	for _, s := range layer {
		for j < len(sel) && sel[j].end <= s.start {
			out = append(out, sel[j])
			j++
		}
		if j < len(sel) && sel[j].start < s.end {
			continue
		}
		if len(out) > 0 && out[len(out)-1].end > s.start {
			continue
		}
		out = append(out, s)
	}
	out = append(out, sel[j:]...)
	sc.tmp, sc.sel = sel[:0], out
}

// token appends the token of value, found by matcher m, to dst.
func (r *Redactor) token(dst []byte, m int32, value []byte) []byte {
	mac := r.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(value)
	var sum [sha256.Size]byte
	mac.Sum(sum[:0])
	r.macs.Put(mac)
	dst = append(dst, tokenPrefix...)
	dst = append(dst, r.ms[m].id...)
	dst = append(dst, ':')
	dst = hex.AppendEncode(dst, sum[:4])
	return append(dst, ']')
}

// apply appends b with spans masked to dst, and counts them; at, when not nil, is told each.
func (r *Redactor) apply(dst, b []byte, spans []span, at func(m int32)) []byte {
	last := 0
	for _, s := range spans {
		if s.m < 0 {
			continue
		}
		dst = append(dst, b[last:s.start]...)
		if s.tok != nil {
			dst = append(dst, s.tok...)
		} else {
			dst = r.token(dst, s.m, b[s.start:s.end])
		}
		if !s.nocount {
			r.counts[s.m].Add(1)
			if at != nil {
				at(s.m)
			}
		}
		last = s.end
	}
	return append(dst, b[last:]...)
}

// Line returns s with every secret masked. s may be one log line or any free text.
func (r *Redactor) Line(s string) string {
	sc := r.getScratch()
	defer r.putScratch(sc)
	if len(r.always) == 0 {
		// Most text holds no trigger at all: no copy, no allocation.
		sc.hits = literal.Append(r.ac, s, sc.hits[:0])
		if len(sc.hits) == 0 {
			return s
		}
	}
	b := []byte(s)
	spans := r.find(b, sc)
	if !hasMask(spans) {
		return s
	}
	return string(r.apply(nil, b, spans, nil))
}

// Text returns s, any text of one or more lines, with every secret masked as Copy masks a
// stream: with what the lines around say (a private key over several lines, a YAML value below
// its key, an env var's value on the line after its name, a token wrapped onto two lines).
// Everything that leaves the machine in pieces of text (prompts, report excerpts) goes
// through it, a whole window at once.
func (r *Redactor) Text(s string) string {
	return r.text(s, "", "")
}

// text is Text, recording the locations of what it masks as file where, field field.
func (r *Redactor) text(s, where, field string) string {
	if len(r.always) == 0 && len(r.envRules) == 0 {
		// Nothing to mask without a trigger: no copy, no allocation.
		sc := r.getScratch()
		sc.hits = literal.Append(r.ac, s, sc.hits[:0])
		none := len(sc.hits) == 0
		r.putScratch(sc)
		if none && !strings.Contains(s, "-----END ") {
			return s // (a key's END line says what the lines above it were)
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	c := &copier{r: r, where: where, field: field, w: bufio.NewWriterSize(&b, min(len(s)+16, 4<<10)), sc: r.getScratch()}
	defer r.putScratch(c.sc)
	c.copy(context.Background(), strings.NewReader(s), min(len(s)+1, readSize))
	return b.String()
}

// LineAt is Line, recording the location of what it masks as file where, field field.
func (r *Redactor) LineAt(where, field, s string) string {
	w := &walker{r: r, where: where}
	out := w.line(s, field)
	r.record(w.locs)
	return out
}

func hasMask(spans []span) bool {
	for _, s := range spans {
		if s.m >= 0 {
			return true
		}
	}
	return false
}

// Summary returns how often each rule fired, sorted by rule id; rules that never fired are
// left out.
func (r *Redactor) Summary() []bundle.RedactionRule {
	var out []bundle.RedactionRule
	for i, m := range r.ms {
		if n := r.counts[i].Load(); n > 0 {
			out = append(out, bundle.RedactionRule{ID: m.id, Count: int(n)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Masked says how many secrets were masked in all, and by which rules ("hf-token 1, ...").
func (r *Redactor) Masked() (total int, byRule string) {
	var rules []string
	for _, s := range r.Summary() {
		total += s.Count
		rules = append(rules, fmt.Sprintf("%s %d", s.ID, s.Count))
	}
	return total, strings.Join(rules, ", ")
}

// Locations returns where secrets were masked by Copy and ObjectAt, sorted, and how many
// more there were beyond the ones remembered.
func (r *Redactor) Locations() ([]Location, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Location(nil), r.locs...)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Rule < b.Rule
	})
	return out, r.dropped
}

func (r *Redactor) record(locs []Location) {
	if len(locs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	room := max(0, maxLocations-len(r.locs))
	if len(locs) > room {
		r.dropped += len(locs) - room
		locs = locs[:room]
	}
	r.locs = append(r.locs, locs...)
}
