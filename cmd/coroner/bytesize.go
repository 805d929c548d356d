package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"
)

// sizeForms is what every size flag's help and error say it accepts.
const sizeForms = "4096, 64Ki, 10Mi or 1Gi (powers of 1024, also written KiB, MiB, GiB; k, M, G, with or without B, are powers of 1000)"

// sizeValue is the one flag type of every size flag: the same forms are read, the default is
// printed the same way and a bad value gives the same error, whatever the flag.
//
// Binary suffixes, as Kubernetes writes quantities, multiply by powers of 1024: Ki, Mi, Gi, Ti,
// Pi, with or without a "B" after them (64Ki = 64KiB = 65536). Decimal suffixes multiply by
// powers of 1000, as in Kubernetes quantities and SI: k (or K), M, G, T, P, with or without a
// "B" (10M = 10MB = 10000000). A fraction is read when the bytes come out whole (1.5Gi).
type sizeValue[T int | int64] struct {
	p *T
	// zero allows 0, which the flag's help says means no bound.
	zero bool
}

// addSizeFlag defines a size flag on cmd with the value *p holds as its default.
func addSizeFlag[T int | int64](cmd *cobra.Command, p *T, name, usage string) {
	cmd.Flags().Var(&sizeValue[T]{p: p}, name, usage+"; a size: "+sizeForms)
}

// addSizeFlagOrZero is addSizeFlag for a flag where 0 means no bound.
func addSizeFlagOrZero[T int | int64](cmd *cobra.Command, p *T, name, usage string) {
	cmd.Flags().Var(&sizeValue[T]{p: p, zero: true}, name, usage+"; a size: "+sizeForms+", or 0 for no bound")
}

var sizeSyntax = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?([kKMGTP]i?)?B?$`)

// errBadSize is the one error of a malformed size, whatever the flag.
var errBadSize = errors.New("want a size such as " + sizeForms)

// sizeUnits are the suffixes a size may carry, and what each multiplies by.
var sizeUnits = map[string]int64{
	"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
}

// parseSize reads a number of bytes (0 included).
func parseSize(s string) (int64, error) {
	m := sizeSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, errBadSize
	}
	unit, ok := sizeUnits[m[3]]
	if !ok {
		return 0, errBadSize
	}
	n, ok := new(big.Rat).SetString(m[1] + "." + m[2] + "0")
	if !ok {
		return 0, errBadSize
	}
	n.Mul(n, new(big.Rat).SetInt64(unit))
	if !n.IsInt() {
		return 0, errors.New("not a whole number of bytes")
	}
	if !n.Num().IsInt64() {
		return 0, errors.New("too large")
	}
	return n.Num().Int64(), nil
}

// formatSize writes n with the largest binary suffix that divides it: 10Mi, 4096.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (v *sizeValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return formatSize(int64(*v.p))
}

func (v *sizeValue[T]) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n == 0 && !v.zero {
		return errors.New("want a size above 0")
	}
	var top int64 = math.MaxInt64
	if _, isInt := any(*v.p).(int); isInt {
		top = math.MaxInt32 // an int flag stays within what every platform's int holds
	}
	if n > top {
		return fmt.Errorf("at most %s", formatSize(top))
	}
	*v.p = T(n)
	return nil
}

func (v *sizeValue[T]) Type() string { return "size" }
