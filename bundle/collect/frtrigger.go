package collect

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/frtrace"
)

// DumpPipeEnv are the variables that name the stem of the debug pipes a process makes for a
// dump on request: torch makes the named pipe <stem><global rank>.pipe, reads it without
// blocking from its watchdog's monitor, and dumps its buffer to <prefix><rank> when it reads
// a byte (TORCH_FR_DEBUG_INFO_PIPE_FILE is the name of the backends after NCCL).
var DumpPipeEnv = []string{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_FR_DEBUG_INFO_PIPE_FILE"}

// DumpPipe is the debug pipe stem and the dump prefix a container's spec sets (both absolute),
// or "" for either it does not set.
func DumpPipe(c corev1.Container) (stem, prefix string) {
	for _, name := range DumpPipeEnv {
		for _, e := range c.Env {
			if e.Name == name && e.Value != "" && path.IsAbs(e.Value) && stem == "" {
				stem = e.Value
			}
		}
	}
	return stem, dumpPrefix(c)
}

// Triggered is what TriggerDumps did in one container.
type Triggered struct {
	Pod, Container string
	// Ranks whose pipe was written, and of them those whose dump was then seen.
	Ranks, Dumped []int
	// Err says why nothing (or not every rank) was triggered or dumped; nil when all were.
	Err error
}

// TriggerOptions bound TriggerDumps.
type TriggerOptions struct {
	// Wait is how long to wait for the dumps once the pipes are written (default 2m).
	Wait time.Duration
	// Poll is how often the dump directory is listed meanwhile (default 2s).
	Poll time.Duration
	// Settle is waited after every dump is seen, so that a file torch still writes is whole
	// (default 2s).
	Settle time.Duration
}

func (o *TriggerOptions) defaults() {
	if o.Wait <= 0 {
		o.Wait = 2 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
}

// TriggerDumps asks the live processes of the pods for a flight recorder dump, through
// pods/exec into each running container that sets a debug pipe stem (DumpPipeEnv) and a dump
// prefix (FlightRecorderEnv): `ls -1 -- DIR` finds the pipes <stem><rank>.pipe, and each gets
// one byte with `dd if=/dev/zero of=PIPE bs=1 count=1 conv=nocreat,notrunc oflag=nonblock` (a
// fixed argv, never a shell: nocreat never makes a file where no pipe is, nonblock fails at
// once when no process holds the pipe open). Then it lists the dump directory until a dump
// <prefix><rank> of every triggered rank is there, at most Wait (torch rewrites the same name,
// so a rank whose dump was there before counts once Settle has passed since the trigger).
// The dumps are read afterwards by a collect with Exec set.
func TriggerDumps(ctx context.Context, pods []*corev1.Pod, exec Execer, o TriggerOptions) []Triggered {
	o.defaults()
	type pending struct {
		t      *Triggered
		p      *corev1.Pod
		prefix string
		before map[int]bool
	}
	var all []*Triggered
	var waits []pending
	for _, p := range pods {
		running := map[string]bool{}
		for _, s := range p.Status.ContainerStatuses {
			running[s.Name] = s.State.Running != nil
		}
		for _, c := range p.Spec.Containers {
			stem, prefix := DumpPipe(c)
			if stem == "" || prefix == "" || !running[c.Name] {
				continue
			}
			t := &Triggered{Pod: p.Name, Container: c.Name}
			all = append(all, t)
			run := func(argv []string, w *bytes.Buffer) error {
				ctx, cancel := context.WithTimeout(ctx, execTimeout)
				defer cancel()
				return exec(ctx, p.Namespace, p.Name, c.Name, argv, &limited{w: w, n: maxListing})
			}
			before, err := listRanks(prefix, "", run)
			if err != nil {
				before = map[int]bool{}
			}
			pipes, err := listRanks(stem, ".pipe", run)
			if err != nil {
				t.Err = fmt.Errorf("debug pipes %s*.pipe: %s", stem, describe(err))
				continue
			}
			if len(pipes) == 0 {
				t.Err = fmt.Errorf("no debug pipe %s<rank>.pipe (the process made none: TORCH_NCCL_TRACE_BUFFER_SIZE or TORCH_FR_BUFFER_SIZE is 0, or it has not started its process group)", stem)
				continue
			}
			var failed []string
			for _, r := range sortedRanks(pipes) {
				pipe := stem + strconv.Itoa(r) + ".pipe"
				argv := []string{"dd", "if=/dev/zero", "of=" + pipe, "bs=1", "count=1", "conv=nocreat,notrunc", "oflag=nonblock"}
				if err := run(argv, &bytes.Buffer{}); err != nil {
					failed = append(failed, fmt.Sprintf("%s: %s", pipe, describe(err)))
					continue
				}
				t.Ranks = append(t.Ranks, r)
			}
			if len(failed) > 0 {
				t.Err = fmt.Errorf("debug pipe not written: %s", strings.Join(failed, "; "))
			}
			if len(t.Ranks) > 0 {
				waits = append(waits, pending{t: t, p: p, prefix: prefix, before: before})
			}
		}
	}
	out := func() []Triggered {
		o := make([]Triggered, len(all))
		for i, t := range all {
			o[i] = *t
		}
		return o
	}
	if len(waits) == 0 {
		return out()
	}
	start := time.Now()
	deadline := start.Add(o.Wait)
	for {
		left := 0
		for _, w := range waits {
			if len(w.t.Dumped) == len(w.t.Ranks) {
				continue
			}
			c := w.t.Container
			have, err := listRanks(w.prefix, "", func(argv []string, b *bytes.Buffer) error {
				ctx, cancel := context.WithTimeout(ctx, execTimeout)
				defer cancel()
				return exec(ctx, w.p.Namespace, w.p.Name, c, argv, &limited{w: b, n: maxListing})
			})
			w.t.Dumped = w.t.Dumped[:0]
			for _, r := range w.t.Ranks {
				if err == nil && have[r] && (!w.before[r] || time.Since(start) >= o.Settle) {
					w.t.Dumped = append(w.t.Dumped, r)
				}
			}
			if len(w.t.Dumped) < len(w.t.Ranks) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			for _, w := range waits {
				if n := len(w.t.Ranks) - len(w.t.Dumped); n > 0 && w.t.Err == nil {
					w.t.Err = fmt.Errorf("%d of the triggered ranks wrote no dump at %s* within %s", n, w.prefix, o.Wait)
				}
			}
			return out()
		}
		select {
		case <-ctx.Done():
			return out()
		case <-time.After(o.Poll):
		}
	}
	// A dump just listed may still be being written.
	select {
	case <-ctx.Done():
	case <-time.After(o.Settle):
	}
	return out()
}

// listRanks lists the directory of prefix and returns the ranks r of the names
// <base of prefix><r><suffix> in it.
func listRanks(prefix, suffix string, run func([]string, *bytes.Buffer) error) (map[int]bool, error) {
	dir, base := path.Dir(prefix), path.Base(prefix)
	if strings.HasSuffix(prefix, "/") {
		dir, base = path.Clean(prefix), ""
	}
	var listing bytes.Buffer
	if err := run([]string{"ls", "-1", "--", dir}, &listing); err != nil {
		return nil, err
	}
	ranks := map[int]bool{}
	for _, name := range strings.Split(listing.String(), "\n") {
		rest, ok := strings.CutPrefix(name, base)
		if !ok || rest == "" || !strings.HasSuffix(rest, suffix) {
			continue
		}
		rest = strings.TrimSuffix(rest, suffix)
		if suffix == "" {
			if r, ok := frtrace.RankFromName(name); ok {
				ranks[r] = true
			}
			continue
		}
		if r, err := strconv.Atoi(rest); err == nil && r >= 0 && strconv.Itoa(r) == rest {
			ranks[r] = true
		}
	}
	return ranks, nil
}

func sortedRanks(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}
