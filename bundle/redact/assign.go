package redact

// assignmentAt finds a value assigned to a secret-looking name whose last word ends at end:
// NAME=value, name: value, "name": "value", {\"name\": \"value\"}, --name=value and
// --name value. It looks only around end, so a line full of "max_tokens" costs little.
func assignmentAt(b []byte, end int) (span, bool) {
	if end < len(b) && isNameChar(b[end]) {
		return span{}, false // "tokens_per_sec": the word is not the end of the name
	}
	start := end
	for start > 0 && isNameChar(b[start-1]) {
		start--
	}
	if !secretNameBytes(b[start:end]) {
		return span{}, false
	}
	j := end
	if j < len(b) && b[j] == '\\' {
		j++
	}
	if j < len(b) && (b[j] == '"' || b[j] == '\'') {
		j++
	}
	j = skipBlanks(b, j)
	if j < len(b) && (b[j] == ':' || b[j] == '=') {
		return valueAt(b, skipBlanks(b, j+1))
	}
	// A flag and its value as the next word: --db-password s3cret.
	if b[start] == '-' && (start == 0 || isBlank(b[start-1]) || b[start-1] == '"' || b[start-1] == '\'') &&
		end < len(b) && isBlank(b[end]) {
		v := skipBlanks(b, end)
		if v < len(b) && b[v] != '-' && b[v] != '"' && b[v] != '\'' {
			stop := v
			for stop < len(b) && !isBlank(b[stop]) && b[stop] != '"' && b[stop] != '\'' && b[stop] != '\r' && b[stop] != '\n' {
				stop++
			}
			return checkValue(b, v, stop)
		}
	}
	return span{}, false
}

// valueAt reads the value that starts at i: quoted (the quotes stay) or bare.
func valueAt(b []byte, i int) (span, bool) {
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
		for stop < len(b) && !bareEnd(b[stop]) {
			stop++
		}
	}
	return checkValue(b, i, stop)
}

func checkValue(b []byte, start, stop int) (span, bool) {
	if stop <= start || !plausibleValue(string(b[start:stop])) {
		return span{}, false
	}
	return span{start: start, end: stop}, true
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
