package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteSize is a flag holding a number of bytes, written as Kubernetes writes quantities
// ("10Mi", "1Gi", "500k", "4096") or with a "B" after a binary suffix ("10MiB"), the same on
// every flag that takes a size.
type byteSize struct {
	p   *int64
	max int64
}

// parseByteSize reads a positive size.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	for _, u := range []string{"Ki", "Mi", "Gi", "Ti", "Pi"} {
		if strings.HasSuffix(t, u+"B") {
			t = strings.TrimSuffix(t, "B")
		}
	}
	q, err := resource.ParseQuantity(t)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("%q: want a positive size such as 4096, 64Ki, 10Mi or 1Gi", s)
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n, nil
}

// formatByteSize writes n with the largest binary suffix that divides it: 10Mi, 4096.
func formatByteSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) String() string {
	if b.p == nil {
		return ""
	}
	return formatByteSize(*b.p)
}

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	if b.max > 0 && n > b.max {
		return fmt.Errorf("%q: at most %s", s, formatByteSize(b.max))
	}
	*b.p = n
	return nil
}

func (b *byteSize) Type() string { return "size" }

// intByteSize is a byteSize flag for an int.
type intByteSize struct{ p *int }

func (b *intByteSize) String() string {
	if b.p == nil {
		return ""
	}
	return formatByteSize(int64(*b.p))
}

func (b *intByteSize) Set(s string) error {
	var n int64
	if err := (&byteSize{p: &n, max: math.MaxInt32}).Set(s); err != nil {
		return err
	}
	*b.p = int(n)
	return nil
}

func (b *intByteSize) Type() string { return "size" }
