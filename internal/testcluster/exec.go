package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/kubernetes"
)

// Container is the in-memory filesystem of a container the fake kubelet execs into: regular
// files and named pipes. A pipe's reader is a function (the process that opened the pipe)
// run with the container and what was written.
type Container struct {
	mu    sync.Mutex
	files map[string][]byte
	pipes map[string]func(c *Container, written []byte)
	execs [][]string
}

// Container returns the filesystem of a container of a pod (made empty on first use). Exec
// reaches it only while the pod's status, as the API server holds it, says the container runs.
func (k *Kubelet) Container(ns, pod, container string) *Container {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := logKey(ns, pod, container, false)
	if k.containers == nil {
		k.containers = map[string]*Container{}
	}
	c := k.containers[key]
	if c == nil {
		c = &Container{files: map[string][]byte{}, pipes: map[string]func(*Container, []byte){}}
		k.containers[key] = c
	}
	return c
}

// WriteFile sets a file's content (an absolute, clean path).
func (c *Container) WriteFile(name string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path.Clean(name)] = append([]byte(nil), data...)
}

// ReadFile returns a file's content.
func (c *Container) ReadFile(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.files[path.Clean(name)]
	return b, ok
}

// MakePipe makes a named pipe whose reader is read; a nil read is a pipe no process holds
// open, which a non-blocking writer cannot open (ENXIO).
func (c *Container) MakePipe(name string, read func(c *Container, written []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pipes[path.Clean(name)] = read
}

// Execs returns the argv of each exec served into the container, in order.
func (c *Container) Execs() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.execs...)
}

// setCluster lets the kubelet read the pods' status, as a real kubelet knows its containers.
func (k *Kubelet) setCluster(kube kubernetes.Interface) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kube = kube
}

// serveExec answers /exec/{namespace}/{pod}/{container}?command=...&output=1&error=1 as a
// kubelet does behind the API server's proxy: the SPDY streaming protocol (v4.channel.k8s.io
// down to v1; the API server translates a client's WebSocket into it), into a running
// container only, with the process's exit code in the v4 error stream.
func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/exec/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	ns, pod, container := parts[0], parts[1], parts[2]
	q := r.URL.Query()
	argv := q[corev1.ExecCommandParam]
	if len(argv) == 0 {
		http.Error(w, "you must specify a command", http.StatusBadRequest)
		return
	}
	if q.Get(corev1.ExecTTYParam) == "1" {
		http.Error(w, "tty is not supported by this kubelet", http.StatusBadRequest)
		return
	}
	// What the kubelet says when the runtime has no running container of that name.
	if err := k.running(r.Context(), ns, pod, container); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		http.Error(w, "this kubelet speaks SPDY only", http.StatusBadRequest)
		return
	}
	protocol, err := httpstream.Handshake(r, w, []string{remotecommand.StreamProtocolV4Name, remotecommand.StreamProtocolV3Name, remotecommand.StreamProtocolV2Name, remotecommand.StreamProtocolV1Name})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	want := 1 // the error stream
	for _, p := range []string{corev1.ExecStdinParam, corev1.ExecStdoutParam, corev1.ExecStderrParam} {
		if q.Get(p) == "1" {
			want++
		}
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		go func() {
			<-replySent
			streams <- s
		}()
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	conn.SetIdleTimeout(time.Minute)
	var errStream, stdin, stdout, stderr httpstream.Stream
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for got := 0; got < want; got++ {
		select {
		case s := <-streams:
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				errStream = s
			case corev1.StreamTypeStdin:
				stdin = s
			case corev1.StreamTypeStdout:
				stdout = s
			case corev1.StreamTypeStderr:
				stderr = s
			}
		case <-timeout.C:
			return
		case <-conn.CloseChan():
			return
		}
	}
	if errStream == nil {
		return
	}
	out, errOut := io.Writer(io.Discard), io.Writer(io.Discard)
	if stdout != nil {
		out = stdout
	}
	if stderr != nil {
		errOut = stderr
	}
	var in io.Reader = strings.NewReader("")
	if stdin != nil {
		in = stdin
	}
	c := k.Container(ns, pod, container)
	code := c.exec(argv, in, out, errOut)
	for _, s := range []httpstream.Stream{stdout, stderr} {
		if s != nil {
			_ = s.Close()
		}
	}
	st := metav1.Status{Status: metav1.StatusSuccess}
	if code != 0 {
		st = metav1.Status{
			Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(code)}}},
		}
	}
	if protocol == remotecommand.StreamProtocolV4Name {
		b, _ := json.Marshal(st)
		_, _ = errStream.Write(b)
	} else if code != 0 {
		_, _ = errStream.Write([]byte(st.Message))
	}
	_ = errStream.Close()
}

// running is nil when the pod's status says the container runs, else the kubelet's error.
func (k *Kubelet) running(ctx context.Context, ns, pod, container string) error {
	k.mu.Lock()
	kube := k.kube
	k.mu.Unlock()
	notFound := fmt.Errorf("container not found (%q)", container)
	if kube == nil {
		return notFound
	}
	p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s not found", ns, pod)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container && s.State.Running != nil {
			return nil
		}
	}
	return notFound
}

// exec runs one of the few programs this container has, as coreutils would, and returns its
// exit code: `ls -1 [--] DIR`, `cat [--] FILE`, and `dd if=/dev/zero of=FILE bs=1 count=1
// [conv=...] [oflag=nonblock]` (a byte into a named pipe). There is no shell.
func (c *Container) exec(argv []string, in io.Reader, out, errOut io.Writer) int {
	c.mu.Lock()
	c.execs = append(c.execs, append([]string(nil), argv...))
	c.mu.Unlock()
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(errOut, format+"\n", args...)
		return code
	}
	operands := func(args []string) []string {
		var o []string
		for i, a := range args {
			if a == "--" {
				return append(o, args[i+1:]...)
			}
			if !strings.HasPrefix(a, "-") {
				o = append(o, a)
			}
		}
		return o
	}
	switch argv[0] {
	case "ls":
		dirs := operands(argv[1:])
		if len(dirs) != 1 {
			return fail(2, "ls: this container's ls lists one directory")
		}
		names, ok := c.list(dirs[0])
		if !ok {
			return fail(2, "ls: cannot access '%s': No such file or directory", dirs[0])
		}
		for _, n := range names {
			fmt.Fprintln(out, n)
		}
		return 0
	case "cat":
		for _, f := range operands(argv[1:]) {
			data, ok := c.ReadFile(f)
			if !ok {
				return fail(1, "cat: %s: No such file or directory", f)
			}
			if _, err := out.Write(data); err != nil {
				return 1
			}
		}
		return 0
	case "dd":
		return c.dd(argv[1:], fail)
	}
	return fail(127, "exec: %q: executable file not found in $PATH", argv[0])
}

// list returns the names in a directory, sorted; false when it holds nothing (no such directory).
func (c *Container) list(dir string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir = path.Clean(dir)
	seen := map[string]bool{}
	add := func(p string) {
		if path.Dir(p) == dir {
			seen[path.Base(p)] = true
		} else if strings.HasPrefix(p, dir+"/") {
			seen[strings.SplitN(strings.TrimPrefix(p, dir+"/"), "/", 2)[0]] = true
		}
	}
	for p := range c.files {
		add(p)
	}
	for p := range c.pipes {
		add(p)
	}
	if len(seen) == 0 {
		return nil, false
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, true
}

// dd writes bs*count bytes of if=/dev/zero to of=: into a pipe, its reader gets them.
func (c *Container) dd(args []string, fail func(int, string, ...any) int) int {
	opt := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fail(1, "dd: unrecognized operand '%s'", a)
		}
		opt[k] = v
	}
	if opt["if"] != "/dev/zero" || opt["bs"] != "1" || opt["count"] != "1" || opt["of"] == "" {
		return fail(1, "dd: this container's dd writes one byte of /dev/zero")
	}
	name := path.Clean(opt["of"])
	nocreat := strings.Contains(opt["conv"], "nocreat")
	nonblock := strings.Contains(opt["oflag"], "nonblock")
	c.mu.Lock()
	read, pipe := c.pipes[name]
	_, file := c.files[name]
	switch {
	case pipe && read == nil && nonblock:
		c.mu.Unlock()
		return fail(1, "dd: failed to open '%s': No such device or address", opt["of"])
	case pipe && read == nil:
		c.mu.Unlock()
		return fail(1, "dd: this container cannot block on a pipe no process reads")
	case pipe:
		c.mu.Unlock()
		read(c, []byte{0})
		return 0
	case !file && nocreat:
		c.mu.Unlock()
		return fail(1, "dd: failed to open '%s': No such file or directory", opt["of"])
	}
	c.files[name] = []byte{0}
	c.mu.Unlock()
	return 0
}
