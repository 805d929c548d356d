package report

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{350 * time.Millisecond, "350 ms"},
		{2 * time.Second, "2 s"},
		{2400 * time.Millisecond, "2.4 s"},
		{42 * time.Second, "42 s"},
		{10*time.Minute + 3*time.Second, "10 min 3 s"},
		{10 * time.Minute, "10 min"},
		{5*time.Hour + 27*time.Minute + 40*time.Second, "5 h 27 min"},
		{5*time.Hour + 20*time.Second, "5 h"},
		{27*time.Hour + 5*time.Minute, "1 d 3 h"},
		{-90 * time.Second, "1 min 30 s"},
	} {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := Commas(1016); got != "1,016" {
		t.Errorf("Commas(1016) = %q", got)
	}
}
