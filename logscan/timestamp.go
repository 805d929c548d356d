package logscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"time"
)

// SplitTimestamp splits the kubelet's RFC3339Nano prefix ("2026-03-14T10:02:03.123456789Z ")
// from a log line. It returns ok=false and the line unchanged when there is none. It is on
// the hot path (every line of every log), so it parses by hand instead of with time.Parse.
func SplitTimestamp(line []byte) (ts time.Time, rest []byte, ok bool) {
	sp := -1
	for i := 19; i < len(line) && i < 40; i++ {
		if line[i] == ' ' {
			sp = i
			break
		}
	}
	if sp < 0 || line[10] != 'T' {
		return time.Time{}, line, false
	}
	ts, ok = parseISO(line[:sp], true)
	if !ok {
		return time.Time{}, line, false
	}
	return ts, line[sp+1:], true
}

// LeadingTime finds a timestamp that a program printed at the start of its own line, as
// Python's logging and torchrun do ("2026-03-14 10:00:01,234 ...", "[2026-03-14 10:00:01,234] ...").
// TensorFlow's and Horovod's C++ logging put a colon right after the time ("2021-04-10
// 21:28:20.658706: W horovod/common/stall_inspector.cc:105] ...", tensorflow/tensorflow#42425,
// horovod/horovod#1890, in brackets in Horovod's), which is not part of it. It is used for
// logs without the kubelet prefix (pasted logs); a time without a zone is taken as UTC.
func LeadingTime(line []byte) (time.Time, bool) {
	if len(line) > 0 && line[0] == '[' {
		line = line[1:]
	}
	if len(line) < 19 {
		return time.Time{}, false
	}
	end := 19
	for end < len(line) && end < 35 && line[end] != ' ' && line[end] != ']' {
		end++
	}
	if end > 19 && line[end-1] == ':' {
		end--
	}
	return parseISO(line[:end], false)
}

// glog, abseil and PyTorch's c10 logging start a line with a header that has no year: a
// level letter, the month and day, the time and the thread, "E1120 10:05:00.000000 123
// ProcessGroupNCCL.cpp:1484] ..." (c10 does not pad the month: "E324" is 24 March). c10 puts
// it in brackets, after the rank when the process has one ("[rank1]:[E1120 10:05:00.000000
// 123 ProcessGroupNCCL.cpp:1484] ..."); torchrun logs with glog's own ("I0903
// 16:36:04.240921 23456247946112 torch/distributed/launcher/api.py:188] ...",
// MDIL-SNU/SevenNet#83). Such a time is read only in a log that has shown a full timestamp:
// its year is the one that puts the header nearest that time (a log that crosses New Year).
// A log of glog headers alone gets no time from them, as a log of times without a date gets
// none.

// glogPrefixes bounds the bracketed launcher prefixes ("[rank1]:", "[default0]:") skipped
// before a glog header, and glogPrefixLen each one's length.
const (
	glogPrefixes  = 2
	glogPrefixLen = 24
)

// glogTime reads the time of the glog header at the start of line (after launcher prefixes
// in brackets), as Unix nanoseconds, its year taken from near (Unix nanoseconds, not 0).
func glogTime(line []byte, near int64) (int64, bool) {
	for k := 0; ; k++ {
		if ns, ok := glogHeader(line, near); ok {
			return ns, true
		}
		if k == glogPrefixes || len(line) == 0 || line[0] != '[' {
			return 0, false
		}
		j := bytes.Index(line[:min(len(line), glogPrefixLen)], []byte("]:"))
		if j < 0 {
			return 0, false
		}
		line = line[j+2:]
	}
}

// glogHeader reads the glog header at the start of line, in brackets or not ("E1120
// 10:05:00.000000 123 ..."), as glogTime does.
func glogHeader(line []byte, near int64) (int64, bool) {
	if len(line) > 0 && line[0] == '[' {
		line = line[1:]
	}
	// "E1120 10:05:00" and a fraction, then a space. c10 does not pad the month: "E324"
	// is 24 March.
	if len(line) < 14 || !isGlogLevel(line[0]) {
		return 0, false
	}
	d := 1
	for d < 5 && line[d] >= '0' && line[d] <= '9' {
		d++
	}
	if d < 4 || d > 5 || line[d] != ' ' {
		return 0, false
	}
	date, clock := line[1:d], line[d+1:]
	if len(clock) < 9 || clock[2] != ':' || clock[5] != ':' {
		return 0, false
	}
	mon := int(date[0] - '0')
	if len(date) == 4 {
		mon = mon*10 + int(date[1]-'0')
	}
	var v [4]int
	for i, b := range [4][]byte{date[len(date)-2:], clock[0:2], clock[3:5], clock[6:8]} {
		if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
			return 0, false
		}
		v[i] = int(b[0]-'0')*10 + int(b[1]-'0')
	}
	day, hh, mm, ss := v[0], v[1], v[2], v[3]
	if mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 {
		return 0, false
	}
	nsec, i, ok := fractionAt(clock, 8)
	if !ok || i >= len(clock) || clock[i] != ' ' {
		return 0, false
	}
	year := time.Unix(0, near).UTC().Year()
	best, found := int64(0), false
	for y := year - 1; y <= year+1; y++ {
		t := time.Date(y, time.Month(mon), day, hh, mm, ss, nsec, time.UTC)
		if t.Day() != day {
			continue // no such day that year (29 February)
		}
		if ns := t.UnixNano(); !found || absDiff(ns, near) < absDiff(best, near) {
			best, found = ns, true
		}
	}
	return best, found
}

// isGlogLevel says whether c is a glog severity letter: info, warning, error, fatal.
func isGlogLevel(c byte) bool { return c == 'I' || c == 'W' || c == 'E' || c == 'F' }

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// parseISO parses YYYY-MM-DD[T ]HH:MM:SS[.,fraction][Z|±HH:MM]. With strict, the 'T'
// separator and a zone are required.
func parseISO(b []byte, strict bool) (time.Time, bool) {
	f, ok := scanISO(b, strict)
	if !ok {
		return time.Time{}, false
	}
	t := time.Date(f.year, time.Month(f.mon), f.day, f.hh, f.mm, f.ss, f.nsec, time.UTC).Add(-time.Duration(f.offset) * time.Second)
	return t, true
}

// isoFields are the fields of an ISO date and time; offset is the zone's, in seconds east of UTC.
type isoFields struct {
	year, mon, day, hh, mm, ss, nsec, offset int
}

// scanISO reads the fields parseISO makes a time of, all of b, without making the time.
func scanISO(b []byte, strict bool) (f isoFields, ok bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return f, false
	}
	if b[10] != 'T' && (strict || b[10] != ' ') {
		return f, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(b[0:4])
	mon, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hh, ok4 := num(b[11:13])
	mm, ok5 := num(b[14:16])
	ss, ok6 := num(b[17:19])
	// Before 1970 is not a log's clock but a zero value printed as a date ("0001-01-01T00:00:00Z").
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year < 1970 || mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 {
		return f, false
	}
	f = isoFields{year: year, mon: mon, day: day, hh: hh, mm: mm, ss: ss}
	i := 19
	f.nsec, i, ok = fractionAt(b, i)
	if !ok {
		return f, false
	}
	switch {
	case i == len(b):
		if strict {
			return f, false
		}
	case b[i] == 'Z' && i+1 == len(b):
	case (b[i] == '+' || b[i] == '-') && len(b)-i == 6 && b[i+3] == ':':
		oh, ok1 := num(b[i+1 : i+3])
		om, ok2 := num(b[i+4 : i+6])
		if !ok1 || !ok2 {
			return f, false
		}
		f.offset = oh*3600 + om*60
		if b[i] == '-' {
			f.offset = -f.offset
		}
	default:
		return f, false
	}
	return f, true
}

// TimeLen returns the length of the date and time at the start of line that LeadingTime reads
// (no bracket: the caller takes it off), not counting a colon right after it
// ("2021-03-10T13:22:37.443Z: "), or 0. It makes no time, so it is cheap enough for every line.
func TimeLen(line []byte) int {
	if len(line) < 19 || line[4] != '-' {
		return 0
	}
	end := 19
	for end < len(line) && end < 35 && line[end] != ' ' && line[end] != '\t' && line[end] != ']' {
		end++
	}
	if _, ok := scanISO(line[:end], false); ok {
		return end
	}
	if line[end-1] == ':' {
		if _, ok := scanISO(line[:end-1], false); ok {
			return end - 1
		}
	}
	return 0
}

// TimeParser splits kubelet timestamps like SplitTimestamp, faster: consecutive lines of a log
// share their date, so it remembers the last UTC day it parsed and reads only the hour,
// minute and seconds of lines of the same day (a cache by minute missed on every line of a
// job whose steps are minutes apart). Use one per log stream; it is not safe for concurrent
// use.
type TimeParser struct {
	day    [11]byte // "2026-03-14T" of the last line parsed the slow way
	base   int64    // that day's midnight as Unix seconds
	cached bool
}

// Split returns the timestamp as Unix nanoseconds and the rest of the line, or ok=false and
// the line unchanged when it has no kubelet prefix.
func (p *TimeParser) Split(line []byte) (unixNano int64, rest []byte, ok bool) {
	if p.cached && len(line) > 20 && string(line[:11]) == string(p.day[:]) {
		if hm, ok := hourMinute(line[11:17]); ok {
			// The space after the zone is where SplitTimestamp looks for it: before byte 40.
			if s, n, ok := secondsZ(line[17:]); ok && 17+n.width+1 < 40 {
				return (p.base+int64(hm+s))*1e9 + int64(n.nsec), line[17+n.width+2:], true
			}
		}
	}
	ts, rest, ok := SplitTimestamp(line)
	if !ok {
		return 0, line, false
	}
	if sp := len(line) - len(rest) - 1; line[sp-1] == 'Z' {
		// The day's base is taken from the line's own fields, not ts's clock: a leap second
		// ("23:59:60") or a day past the month's end makes a ts that time.Date moved on.
		if hm, ok := hourMinute(line[11:17]); ok {
			ss := int(line[17]-'0')*10 + int(line[18]-'0')
			copy(p.day[:], line[:11])
			p.base = ts.Unix() - int64(hm+ss)
			p.cached = true
		}
	}
	return ts.UnixNano(), rest, true
}

// hourMinute reads "HH:MM:" as seconds since midnight, with scanISO's bounds (hour 23,
// minute 59).
func hourMinute(b []byte) (int, bool) {
	for _, i := range [...]int{0, 1, 3, 4} {
		if b[i] < '0' || b[i] > '9' {
			return 0, false
		}
	}
	if b[2] != ':' || b[5] != ':' {
		return 0, false
	}
	h, m := int(b[0]-'0')*10+int(b[1]-'0'), int(b[3]-'0')*10+int(b[4]-'0')
	if h > 23 || m > 59 {
		return 0, false
	}
	return h*3600 + m*60, true
}

type fraction struct {
	nsec  int
	width int // offset of the 'Z' from the seconds' first digit
}

// secondsZ parses "SS[.fraction]Z " at the start of b.
func secondsZ(b []byte) (int, fraction, bool) {
	if len(b) < 4 || b[0] < '0' || b[0] > '6' || b[1] < '0' || b[1] > '9' {
		return 0, fraction{}, false
	}
	s := int(b[0]-'0')*10 + int(b[1]-'0')
	nsec, i, ok := fractionAt(b, 2)
	if !ok {
		return 0, fraction{}, false
	}
	if s > 60 || i+1 >= len(b) || b[i] != 'Z' || b[i+1] != ' ' {
		return 0, fraction{}, false
	}
	return s, fraction{nsec: nsec, width: i}, true
}

// fractionAt reads an optional ".123" or ",123" fraction of a second at b[i:], as nanoseconds
// (digits past the ninth are ignored), and returns the index after it. The first eight digits
// are read at once (every line's kubelet time has nine).
func fractionAt(b []byte, i int) (nsec, next int, ok bool) {
	if i >= len(b) || (b[i] != '.' && b[i] != ',') {
		return 0, i, true
	}
	i++
	digits := 0
	if i+8 <= len(b) {
		v, n := leadingDigits(binary.LittleEndian.Uint64(b[i:]))
		nsec, digits, i = int(v), n, i+n
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if digits < 9 {
			nsec = nsec*10 + int(b[i]-'0')
			digits++
		}
		i++
	}
	if digits == 0 {
		return 0, i, false
	}
	return nsec * pow10[9-digits], i, true
}

// pow10 holds the powers of ten that scale a fraction of 1 to 9 digits to nanoseconds.
var pow10 = [...]int{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// leadingDigits reads the ASCII digits that start the 8 bytes of x (little endian: the first
// byte lowest): their value and how many (8 when all are), without a branch per digit.
func leadingDigits(x uint64) (uint64, int) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x ^= 0x30 * ones // a digit's byte is now its value, 0-9; any other byte is 10 or more
	n := bits.TrailingZeros64((((x&^highs)+0x76*ones)|x)&highs) >> 3
	if n == 0 {
		return 0, 0
	}
	x <<= 8 * (8 - n) // the digits in the high bytes, zeros before them
	x = (x*10 + x>>8) & 0x00ff00ff00ff00ff
	x = (x*100 + x>>16) & 0x0000ffff0000ffff
	x = (x*10000 + x>>32) & 0xffffffff
	return x, n
}
