package bundle

import "io"

// DecodeText returns r read as Open reads a log: UTF-8 with "\n" line ends (a UTF-16 or
// UTF-8 byte order mark and "\r" line ends decoded), the form its bytes were in ("UTF-8",
// "UTF-16 (little-endian)"...) and whether its head looks binary rather than text. Redaction
// reads the files outside logs/ through it.
func DecodeText(r io.Reader) (io.Reader, string, bool) {
	tr, form, warning := textLog("", r)
	return tr, form.String(), warning != ""
}

// ExpansionFloor is how far an archive (or a compressed file in one) may expand before its
// expansion ratio (Limits.MaxExpansion) is checked.
const ExpansionFloor = expansionFloor
