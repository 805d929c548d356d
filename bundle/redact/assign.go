package redact

// assignmentAt finds a value assigned to a secret-looking name whose last word ends at end:
// NAME=value, name: value, "name": "value", {\"name\": \"value\"}, --name=value and
// --name value. A password's value may be all digits. A name that is only a weak word (key,
// auth, pass, cookie) counts when its value looks random (key: 8f3a...c9), not when it reads
// like text (waiting for key: store/rank3). It looks only around end, so a line full of
// "max_tokens" costs little.
func assignmentAt(b []byte, end int) (span, bool) {
	if end < len(b) && isNameChar(b[end]) {
		return span{}, false // "tokens_per_sec": the word is not the end of the name
	}
	start := end
	for start > 0 && isNameChar(b[start-1]) {
		start--
	}
	name := b[start:end]
	strong := secretNameBytes(name)
	if !strong && !weakAlone(name) {
		return span{}, false
	}
	check := func(v span) (span, bool) {
		value := string(b[v.start:v.end])
		if strong && plausibleFor(string(name), value) || !strong && plausibleValue(value) && looksRandom(value) {
			return v, true
		}
		return span{}, false
	}
	j := afterName(b, end)
	if j < len(b) && (b[j] == ':' || b[j] == '=') {
		v, ok := rawValueAt(b, skipBlanks(b, j+1))
		if !ok {
			return v, false
		}
		return check(v)
	}
	// A flag and its value as the next word: --db-password s3cret.
	if strong && b[start] == '-' && (start == 0 || isBlank(b[start-1]) || b[start-1] == '"' || b[start-1] == '\'') &&
		end < len(b) && isBlank(b[end]) {
		v := skipBlanks(b, end)
		if v < len(b) && b[v] != '-' && b[v] != '"' && b[v] != '\'' {
			stop := v
			for stop < len(b) && !isBlank(b[stop]) && b[stop] != '"' && b[stop] != '\'' && b[stop] != '\r' && b[stop] != '\n' {
				stop++
			}
			return check(span{start: v, end: stop})
		}
	}
	return span{}, false
}

// afterName skips what may follow a name before its separator: the closing quote of a quoted
// key (escaped too, as in JSON inside a string) and blanks.
func afterName(b []byte, j int) int {
	if j < len(b) && b[j] == '\\' {
		j++
	}
	if j < len(b) && (b[j] == '"' || b[j] == '\'') {
		j++
	}
	return skipBlanks(b, j)
}

// weakAlone reports whether a name is one weak secret word and nothing else: key, auth,
// pass, cookie (any case, with leading dashes).
func weakAlone(name []byte) bool {
	for len(name) > 0 && name[0] == '-' {
		name = name[1:]
	}
	switch string(bytesToUpper(name)) {
	case "KEY", "AUTH", "PASS", "COOKIE":
		return true
	}
	return false
}

func bytesToUpper(b []byte) []byte {
	if len(b) > 8 {
		return nil
	}
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// looksRandom reports whether a value looks like a key rather than a word, a path or a
// reference: 24 hex digits or more with letters and digits, or 20 characters or more of
// base64 with upper and lower case letters and digits (resnet50-imagenet is words).
func looksRandom(v string) bool {
	if len(v) < 20 {
		return false
	}
	hex, upper, lower, digit := true, false, false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		case c >= 'g' && c <= 'z':
			lower, hex = true, false
		case c >= 'G' && c <= 'Z':
			upper, hex = true, false
		case c == '+' || c == '/' || c == '=' && i >= len(v)-2:
			hex = false
		default:
			return false
		}
	}
	if hex {
		return len(v) >= 24 && digit && (upper || lower)
	}
	return upper && lower && digit
}

// rawValueAt reads the value that starts at i, whatever it is: quoted (the quotes stay, out of
// the span) or bare up to a blank, quote, comma, semicolon or brace.
func rawValueAt(b []byte, i int) (span, bool) {
	if i >= len(b) {
		return span{}, false
	}
	var quote byte
	switch {
	case b[i] == '"' || b[i] == '\'':
		quote = b[i]
		i++
	case b[i] == '\\' && i+1 < len(b) && b[i+1] == '"':
		quote = '"'
		i += 2
	}
	stop := i
	if quote != 0 {
		for stop < len(b) && b[stop] != quote && b[stop] != '\n' && !(quote == '"' && b[stop] == '\\') {
			stop++
		}
		if stop >= len(b) || b[stop] == '\n' {
			return span{}, false
		}
	} else {
		for stop < len(b) && !bareEnd(b[stop]) && b[stop] != '}' {
			stop++
		}
	}
	if stop <= i {
		return span{}, false
	}
	return span{start: i, end: stop}, true
}

func bareEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '`', ',', ';', '&':
		return true
	}
	return false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlanks(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// secretNameBytes is SecretName without allocating for the names that are not secret.
func secretNameBytes(name []byte) bool {
	return len(name) > 0 && len(name) <= 128 && SecretName(string(name))
}
