package main

import (
	"errors"
	"fmt"

	"github.com/coroner-dev/coroner/index"
)

// describeQueryError names the flag a search's query error is about: the index names no flag.
func describeQueryError(err error) error {
	var re *index.RegexError
	if errors.As(err, &re) {
		return fmt.Errorf("--regex: %w", re.Err)
	}
	var rw *index.RegexWouldDoError
	if errors.As(err, &rw) {
		return fmt.Errorf("%w (use --regex)", err)
	}
	return err
}
