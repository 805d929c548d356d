package redact

// Colour codes between a secret's name and its value ("\x1b[33mpassword\x1b[0m=\x1b[32mhunter2")
// hide the value from rules that read the bytes; a terminal shows "password=hunter2". A line
// with escape codes is redacted as shown: the rules run on the line without its escape
// sequences, and what they find is mapped back onto the line's bytes.

// findShown is find for a line that holds ESC.
func (r *Redactor) findShown(b []byte, sc *scratch) []span {
	shown, at := stripEscapes(b)
	spans := r.findPlain(shown, sc)
	for i := range spans {
		s := &spans[i]
		if s.end <= s.start {
			s.start, s.end = at[s.start], at[s.start]
			continue
		}
		s.start, s.end = at[s.start], at[s.end-1]+1
	}
	return spans
}

// stripEscapes returns b without its escape sequences (CSI "ESC [ ... final", OSC "ESC ] ...
// BEL or ESC \", and two-byte ESC sequences), and for each byte kept its index in b (with
// len(b) appended, the index of the end).
func stripEscapes(b []byte) ([]byte, []int) {
	out := make([]byte, 0, len(b))
	at := make([]int, 0, len(b)+1)
	for i := 0; i < len(b); {
		if b[i] != 0x1b || i+1 >= len(b) {
			out = append(out, b[i])
			at = append(at, i)
			i++
			continue
		}
		j := i + 1
		switch b[j] {
		case '[':
			j++
			for j < len(b) && b[j] >= 0x20 && b[j] <= 0x3f {
				j++ // parameters and intermediates
			}
			if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e {
				j++ // the final byte
			}
		case ']':
			j++
			for j < len(b) && b[j] != 0x07 && !(b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\') && j-i < 4096 {
				j++
			}
			switch {
			case j < len(b) && b[j] == 0x07:
				j++
			case j+1 < len(b):
				j += 2
			}
		default:
			j++
		}
		i = min(j, len(b))
	}
	at = append(at, len(b))
	return out, at
}
