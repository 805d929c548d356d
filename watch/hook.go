package watch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// maxHookOutput bounds what is kept of a hook's output for the log.
const maxHookOutput = 4 << 10

// hookRun is one run of the --exec hook.
type hookRun struct {
	Bundle string
	HTML   string
	JSON   string
	// Env names the job: kind, namespace, name, trigger, verdict, category. These come from
	// the cluster and coroner's rule set, never from the bundle's logs.
	Env map[string]string
}

// runHook executes the hook program directly, never through a shell: argv is the program
// and the bundle's path, nothing else. What it needs to know besides is in CORONER_*
// environment variables, added to watch's own environment (which carries the hook's
// credentials). The hook is killed when it outlives timeout or ctx.
func runHook(ctx context.Context, program string, timeout time.Duration, r hookRun) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, r.Bundle)
	cmd.Env = os.Environ()
	for _, kv := range [][2]string{{"CORONER_BUNDLE", r.Bundle}, {"CORONER_REPORT_HTML", r.HTML}, {"CORONER_REPORT_JSON", r.JSON}} {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, "CORONER_"+k+"="+r.Env[k])
	}
	cmd.Stdin = nil
	out := &boundedBuffer{max: maxHookOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes does not hang us
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	return strings.TrimSpace(out.String()), err
}

// boundedBuffer keeps the first max bytes written to it and counts the rest.
type boundedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	if b.dropped > 0 {
		return fmt.Sprintf("%s ... (%d more bytes)", b.buf.String(), b.dropped)
	}
	return b.buf.String()
}
