package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration writes a span the way a person says it: the two largest units, "5 h 27 min",
// "10 min 3 s", "2.4 s", "1 d 3 h".
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < 10*time.Second {
		if d < time.Second {
			return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
		}
		s := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + " s"
	}
	d = d.Round(time.Second)
	units := []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		if d >= u.size || len(parts) > 0 {
			n := d / u.size
			d -= n * u.size
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, u.name))
			}
			if len(parts) == 2 || (len(parts) == 1 && n == 0) {
				break
			}
		}
	}
	return strings.Join(parts, " ")
}

// Commas writes an integer with thousands separators: 1,016.
func Commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// clock is a time of day for labels: "10:02:11", with milliseconds only when asked.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// span writes a time range of the same day as "10:12:11–10:12:13", or one time.
func span(from, to time.Time) string {
	a, b := clock(from), clock(to)
	if a == b {
		return a
	}
	return a + "–" + b
}
