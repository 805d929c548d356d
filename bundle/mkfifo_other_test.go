//go:build !unix

package bundle

import "errors"

func mkfifo(string) error { return errors.New("not supported") }
