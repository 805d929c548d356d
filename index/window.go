package index

import (
	"context"
	"errors"
	"fmt"
)

// Window returns the lines from line-before to line+after of the log at a bundle path
// (fewer at the log's edges), read back from the bundle. It reads a few checkpoints' worth of
// lines at most, so it takes no context.
func (ix *Index) Window(path string, line, before, after int) ([]Line, error) {
	lines, _, err := ix.window(path, line, before, after, nil)
	return lines, err
}

// lineCost is what a line read back costs besides its text (the Line and its strings'
// headers), for the context budget.
const lineCost = 128

// errBudget stops a window at its budget.
var errBudget = errors.New("over budget")

// window is Window within a budget of bytes (nil: none), which the lines it returns use up:
// once it is spent, the window ends there and cut says so.
func (ix *Index) window(path string, line, before, after int, budget *int64) (_ []Line, cut bool, _ error) {
	s := ix.stream(path)
	if s == nil {
		return nil, false, fmt.Errorf("%s: not a log of the index", path)
	}
	if line < 1 || line > s.Lines {
		return nil, false, fmt.Errorf("%s: no line %d (the log has %d)", path, line, s.Lines)
	}
	lo, hi := max(1, line-max(before, 0)), min(s.Lines, line+max(after, 0))
	nums := make([]int, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		nums = append(nums, n)
	}
	out := make([]Line, 0, len(nums))
	err := ix.readLines(context.Background(), s, nums, func(n int, ts int64, text []byte) error {
		if budget != nil {
			if *budget -= int64(len(text) + lineCost); *budget < 0 {
				return errBudget
			}
		}
		out = append(out, Line{Path: s.Path, Pod: s.Pod, Container: s.Container, Previous: s.Previous, Number: n,
			Time: timeOf(ts), Text: string(text)})
		return nil
	})
	if err == errBudget {
		return out, true, nil
	}
	return out, false, err
}
