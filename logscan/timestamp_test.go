package logscan

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSplitTimestamp(t *testing.T) {
	tests := []struct {
		line   string
		want   time.Time
		rest   string
		wantOK bool
	}{
		{"2026-03-14T10:02:03.123456789Z hello world", time.Date(2026, 3, 14, 10, 2, 3, 123456789, time.UTC), "hello world", true},
		{"2026-03-14T10:02:03Z x", time.Date(2026, 3, 14, 10, 2, 3, 0, time.UTC), "x", true},
		{"2026-03-14T12:02:03.5+02:00 x", time.Date(2026, 3, 14, 10, 2, 3, 500000000, time.UTC), "x", true},
		{"2026-03-14 10:02:03,123 INFO x", time.Time{}, "2026-03-14 10:02:03,123 INFO x", false},
		{"Traceback (most recent call last):", time.Time{}, "Traceback (most recent call last):", false},
		{"2026-13-14T10:02:03Z x", time.Time{}, "2026-13-14T10:02:03Z x", false},
		{"", time.Time{}, "", false},
		{"2026-03-14T10:02:03.123456789Z", time.Time{}, "2026-03-14T10:02:03.123456789Z", false},
	}
	for _, tt := range tests {
		ts, rest, ok := SplitTimestamp([]byte(tt.line))
		if ok != tt.wantOK || !ts.Equal(tt.want) || string(rest) != tt.rest {
			t.Errorf("SplitTimestamp(%q) = %v, %q, %v; want %v, %q, %v", tt.line, ts, rest, ok, tt.want, tt.rest, tt.wantOK)
		}
	}
}

func TestLeadingTime(t *testing.T) {
	tests := []struct {
		line string
		want time.Time
		ok   bool
	}{
		{"[2026-03-14 10:00:01,234] torch.distributed.run: [WARNING] ", time.Date(2026, 3, 14, 10, 0, 1, 234000000, time.UTC), true},
		{"2026-03-14 10:00:01 - INFO - step 1", time.Date(2026, 3, 14, 10, 0, 1, 0, time.UTC), true},
		{"2026-03-14T10:00:01.5Z ok", time.Date(2026, 3, 14, 10, 0, 1, 500000000, time.UTC), true},
		// TensorFlow's and Horovod's headers: a colon after the time, in brackets or not.
		{"2021-04-10 21:28:20.658706: W tensorflow/core/x.cc:105] slow", time.Date(2021, 4, 10, 21, 28, 20, 658706000, time.UTC), true},
		{"[2021-04-10 21:28:20.658706: W horovod/common/stall_inspector.cc:105] One or more", time.Date(2021, 4, 10, 21, 28, 20, 658706000, time.UTC), true},
		{"2021-04-10 21:28:20: W x", time.Date(2021, 4, 10, 21, 28, 20, 0, time.UTC), true},
		{"2021-04-10 21:28:2: W x", time.Time{}, false},
		{"step 1200 | loss 2.34", time.Time{}, false},
		{"[rank3]:[E314 10:12:04.182731 ProcessGroupNCCL.cpp:616]", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := LeadingTime([]byte(tt.line))
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("LeadingTime(%q) = %v, %v; want %v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestTimeParserAgreesWithSplitTimestamp: the cached fast path gives the same times and rests
// as the full parser, across minute, hour and day changes, zones and malformed lines.
func TestTimeParserAgreesWithSplitTimestamp(t *testing.T) {
	lines := []string{
		"2026-03-14T10:02:03.123456789Z a",
		"2026-03-14T10:02:04.5Z b",
		"2026-03-14T10:02:59Z c",
		"2026-03-14T10:02:60Z leap",
		"2026-03-14T10:03:00.000000001Z d",
		"2026-03-14T10:03:0xZ bad seconds",
		"2026-03-14T10:03:01Z",
		"2026-03-14T12:03:02.5+02:00 zone",
		"2026-03-14T10:03:03,25Z comma",
		"2026-03-14T10:03:04.Z no fraction digits",
		"plain line",
		"2026-03-14T10:03:05.1234567891234Z long fraction",
		"2026-03-14T10:03:05.123456789012345678901Z too long for the space's bound",
		"2026-03-14T13:58:30.702441456Z step lines minutes apart",
		"2026-03-14T14:10:00.000000000Z",
		"2026-03-14T14:10:00.000000000Z watchdog",
		"2026-03-14T23:59:60Z leap second at the day's end",
		"2026-03-14T23:59:59.5Z e",
		"2026-03-14T24:00:00Z hour out of range",
		"2026-03-14T09:60:00Z minute out of range",
		"2026-03-14T09:5a:00Z not a digit",
		"2026-03-14T09 50:00Z space",
		"2026-03-15T00:00:01Z next day",
		"2026-02-31T10:00:00Z past the month's end",
		"2026-02-31T11:30:00Z f",
		"2026-03-14T10:02:03.1Z back a day",
	}
	var p TimeParser
	for _, l := range lines {
		wantTS, wantRest, wantOK := SplitTimestamp([]byte(l))
		ns, rest, ok := p.Split([]byte(l))
		if ok != wantOK || string(rest) != string(wantRest) || (ok && ns != wantTS.UnixNano()) {
			t.Errorf("Split(%q) = %d, %q, %v; want %d, %q, %v", l, ns, rest, ok, wantTS.UnixNano(), wantRest, wantOK)
		}
	}
}

// TestZeroTimeIsNotATimestamp is the fuzzer's find (testdata/fuzz/FuzzTimestamps): a zero
// time printed as a date was taken for a timestamp, and gave ok with a zero time.
func TestZeroTimeIsNotATimestamp(t *testing.T) {
	for _, s := range []string{"0001-01-01T00:00:00+00:00 x", "0001-01-01T00:00:00Z x", "1969-12-31T23:59:59Z x"} {
		if _, _, ok := SplitTimestamp([]byte(s)); ok {
			t.Errorf("SplitTimestamp(%q) ok", s)
		}
		if _, ok := LeadingTime([]byte(s)); ok {
			t.Errorf("LeadingTime(%q) ok", s)
		}
	}
}

// FuzzTimestamps: the timestamp parsers never panic, what they split off is a prefix, and
// TimeParser's cached day gives what SplitTimestamp does.
func FuzzTimestamps(f *testing.F) {
	for _, s := range []string{"2026-03-14T10:02:03.123456789Z hello", "2026-03-14 10:02:03,123 INFO x", "[2026-03-14 10:02:03] x",
		"2026-03-14T12:02:03.5+02:00 x", "2026-03-14T10:02:03Z", "0000-00-00T00:00:00Z "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ts, rest, ok := SplitTimestamp(line)
		if ok {
			if !bytes.HasSuffix(line, rest) || len(rest) >= len(line) {
				t.Fatalf("rest %q is not what follows the timestamp in %q", rest, line)
			}
			if ts.IsZero() {
				t.Fatalf("ok with a zero time for %q", line)
			}
		} else if !bytes.Equal(rest, line) {
			t.Fatalf("not ok, but the line changed: %q -> %q", line, rest)
		}
		LeadingTime(line)
		// A TimeParser that has cached the fuzzed line's day (when it has one) agrees.
		var p TimeParser
		if len(line) >= 11 {
			p.Split(append(line[:11:11], "00:00:00Z x"...))
		}
		ns, prest, pok := p.Split(line)
		if pok != ok || !bytes.Equal(prest, rest) || (ok && ns != ts.UnixNano()) {
			t.Fatalf("TimeParser.Split(%q) = %d, %q, %v; SplitTimestamp %d, %q, %v", line, ns, prest, pok, ts.UnixNano(), rest, ok)
		}
	})
}

// TestTimeLen: the length of the time LeadingTime reads at a line's start, a colon after it
// left out; nothing when it is no time LeadingTime would read.
func TestTimeLen(t *testing.T) {
	for line, want := range map[string]int{
		"2021-03-10T13:22:37.443Z: [1,0]<stderr>:x": 24,
		"2024-01-02 03:04:05,123 ValueError: x":     23,
		"2024-05-01T08:00:00+02:00\tworker-1: x":    25,
		"2026-03-14 10:00:00] INFO":                 19,
		"2021-13-10T13:22:37Z x":                    0, // month 13
		"2021-03-10T13:22:37Zulu time":              0,
		"step 2021-03-10":                           0,
	} {
		if got := TimeLen([]byte(line)); got != want {
			t.Errorf("TimeLen(%q) = %d, want %d", line, got, want)
		}
	}
}

// TestLeadingDigits: the branch-free read of leading digits gives what reading them one at a
// time gives, for every run length and any byte after it.
func TestLeadingDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b [8]byte
		n := rng.IntN(9)
		for k := range b {
			if k < n {
				b[k] = '0' + byte(rng.IntN(10))
			} else {
				b[k] = byte(rng.IntN(256))
			}
		}
		var want uint64
		wn := 0
		for wn < 8 && b[wn] >= '0' && b[wn] <= '9' {
			want = want*10 + uint64(b[wn]-'0')
			wn++
		}
		got, gn := leadingDigits(binary.LittleEndian.Uint64(b[:]))
		if got != want || gn != wn {
			t.Fatalf("%q: got %d (%d digits), want %d (%d)", b, got, gn, want, wn)
		}
	}
}

// TestFractionAt: a fraction of any length, cut anywhere, reads as it does a digit at a time.
func TestFractionAt(t *testing.T) {
	slow := func(b []byte, i int) (nsec, next int, ok bool) {
		if i >= len(b) || (b[i] != '.' && b[i] != ',') {
			return 0, i, true
		}
		i++
		digits := 0
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
		for ; digits < 9; digits++ {
			nsec *= 10
		}
		return nsec, i, true
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		b := []byte{"01.,"[rng.IntN(4)], "01.,"[rng.IntN(4)]}
		for range rng.IntN(14) {
			b = append(b, '0'+byte(rng.IntN(10)))
		}
		for range rng.IntN(10) {
			b = append(b, "Z 9x.,"[rng.IntN(6)])
		}
		for i := range 3 {
			n1, i1, ok1 := fractionAt(b, i)
			n2, i2, ok2 := slow(b, i)
			if n1 != n2 || i1 != i2 || ok1 != ok2 {
				t.Fatalf("%q at %d: got %d %d %v, want %d %d %v", b, i, n1, i1, ok1, n2, i2, ok2)
			}
		}
	}
}

// TestGlogTime: a glog or c10 header's time, which has no year, takes the year that puts it
// nearest the log's last full timestamp, behind launcher prefixes; other lines have none.
func TestGlogTime(t *testing.T) {
	near := time.Date(2026, 11, 20, 10, 0, 1, 0, time.UTC).UnixNano()
	tests := []struct {
		line string
		want time.Time
		ok   bool
	}{
		// The c10 header of PyTorch 2.4+, behind its rank (the NCCL watchdog's line).
		{"[rank1]:[E1120 10:05:00.000000 123 ProcessGroupNCCL.cpp:1484] [PG 0 Rank 1] Process group watchdog thread terminated with exception", time.Date(2026, 11, 20, 10, 5, 0, 0, time.UTC), true},
		// torchrun's launcher, glog's own header (MDIL-SNU/SevenNet#83).
		{"I1120 16:36:04.240921 23456247946112 torch/distributed/launcher/api.py:188] Starting elastic_operator with launch configs:", time.Date(2026, 11, 20, 16, 36, 4, 240921000, time.UTC), true},
		// torchrun's tee prefix before the rank's; c10 does not pad the month (9 January).
		{"[default0]:[rank0]:[W1205 13:46:07.434464 ProcessGroupNCCL.cpp:1250] warning", time.Date(2026, 12, 5, 13, 46, 7, 434464000, time.UTC), true},
		{"[rank0]:[W1205 13:46:07.434464 ProcessGroupNCCL.cpp:1250] warning", time.Date(2026, 12, 5, 13, 46, 7, 434464000, time.UTC), true},
		{"[rank1]:[E109 09:00:00.000000 1 x.cc:1] y", time.Date(2027, 1, 9, 9, 0, 0, 0, time.UTC), true},
		// 2 January is nearest 20 November 2026 in 2027.
		{"E0102 00:00:01.5 1 x.cc:1] y", time.Date(2027, 1, 2, 0, 0, 1, 500000000, time.UTC), true},
		{"[E ProcessGroupNCCL.cpp:737] no time", time.Time{}, false},
		{"E1120 a line that only starts like one", time.Time{}, false},
		{"[rank1]: step 100 | loss 2.0", time.Time{}, false},
		{"I1320 10:05:00.000000 1 x.cc:1] no such month", time.Time{}, false},
	}
	for _, tt := range tests {
		ns, ok := glogTime([]byte(tt.line), near)
		if ok != tt.ok || ok && ns != tt.want.UnixNano() {
			t.Errorf("glogTime(%q) = %v, %v; want %v, %v", tt.line, time.Unix(0, ns).UTC(), ok, tt.want, tt.ok)
		}
	}
	// Without a full timestamp before it, the header gives its line no time.
	var c Clock
	if _, own := c.Split([]byte(tests[0].line)); own || c.Last != 0 {
		t.Errorf("a glog header before any full time was read as %v", time.Unix(0, c.Last).UTC())
	}
	c.Split([]byte("[2026-11-20 10:00:01,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Starting worker group"))
	if _, own := c.Split([]byte(tests[0].line)); !own || c.Last != tests[0].want.UnixNano() {
		t.Errorf("after a full time, the glog header's time is %v, want %v", time.Unix(0, c.Last).UTC(), tests[0].want)
	}
}
