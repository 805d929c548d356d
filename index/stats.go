package index

// TemplateStat is one line template of one log as the index holds it: its text (variable words
// as <*>), the level its lines name, how many lines it has and where they start and end. It is
// read from the index's heads, without reading the log or the template's line list.
type TemplateStat struct {
	Text  string
	Level string
	Count int
	// FirstLine and LastLine are line numbers (1-based); First and Last are Unix nanoseconds
	// (0: the lines had no time).
	FirstLine, LastLine int
	First, Last         int64
}

// Templates lists the templates of a log of the index, in the order the scan made them (the
// first line of each, in order). Lines that have no template (their shape did not repeat, or a
// log or the index had too many shapes) are counted by Untemplated.
func (ix *Index) Templates(s *Stream) []TemplateStat {
	if s.decodeTemplates(len(ix.docs)) != nil {
		return nil // a damaged index: its searches say so
	}
	out := make([]TemplateStat, 0, len(s.templates))
	for i := range s.templates {
		t := &s.templates[i]
		out = append(out, TemplateStat{
			Text: ix.docs[t.doc].display(), Level: levels[t.level], Count: int(t.count),
			FirstLine: int(t.firstLine), LastLine: int(t.lastLine), First: t.first, Last: t.last,
		})
	}
	return out
}

// Untemplated is how many lines of the log have no template.
func (s *Stream) Untemplated() int { return s.over.count }
