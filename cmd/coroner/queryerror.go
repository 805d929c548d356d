package main

import (
	"errors"
	"fmt"

	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/search/syntax"
)

// describeQueryError names the flag a search's query error is about: the index names no flag.
func describeQueryError(err error) error {
	var re *index.RegexError
	if errors.As(err, &re) {
		return fmt.Errorf("--regex: %w", re.Err)
	}
	var rw *syntax.RegexWouldDoError
	if errors.As(err, &rw) {
		return fmt.Errorf("%w (use --regex)", err)
	}
	return err
}
