package testcluster

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Kubelet is a fake kubelet: an HTTPS server answering the kube-apiserver's
// /containerLogs/{namespace}/{pod}/{container} requests like a real kubelet does (previous,
// timestamps, sinceTime, limitBytes, tailLines), and its /exec/{namespace}/{pod}/{container}
// requests with the streaming protocol, into the in-memory filesystems of running containers.
type Kubelet struct {
	Port int
	srv  *httptest.Server
	done chan struct{} // closed when the test ends: hung requests return

	mu        sync.Mutex
	logs      map[string][]byte // key: ns/pod/container[/previous]; lines carry the RFC3339Nano prefix
	slow      map[string]time.Duration
	stall     map[string]int
	hang      map[string]bool
	calls     []string
	onRequest func(ns, pod, container string)

	containers map[string]*Container // key: ns/pod/container
	kube       kubernetes.Interface  // the pods' status: which containers run
}

// OnRequest sets a function run before each log is served (e.g. to delete a pod mid-collect).
func (k *Kubelet) OnRequest(fn func(ns, pod, container string)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.onRequest = fn
}

// StartKubelet starts a fake kubelet for the test's lifetime.
func StartKubelet(t testing.TB) *Kubelet {
	t.Helper()
	k := &Kubelet{logs: map[string][]byte{}, slow: map[string]time.Duration{}, stall: map[string]int{}, hang: map[string]bool{}, done: make(chan struct{})}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k.srv.Listener = l
	k.srv.StartTLS()
	t.Cleanup(func() {
		close(k.done)
		k.srv.Close()
	})
	k.Port = l.Addr().(*net.TCPAddr).Port
	return k
}

func logKey(ns, pod, container string, previous bool) string {
	k := ns + "/" + pod + "/" + container
	if previous {
		k += "/previous"
	}
	return k
}

// SetLog sets a container's log; each line must start with an RFC3339Nano timestamp and a space.
func (k *Kubelet) SetLog(ns, pod, container string, previous bool, log []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[logKey(ns, pod, container, previous)] = log
}

// Slow makes a log stream one line per interval.
func (k *Kubelet) Slow(ns, pod, container string, every time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.slow[logKey(ns, pod, container, false)] = every
}

// Stall makes a log stream stop sending, without ending, after about n bytes.
func (k *Kubelet) Stall(ns, pod, container string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stall[logKey(ns, pod, container, false)] = n
}

// Hang makes a log request never answer, not even with its status line, until the client goes
// away (a kubelet under memory pressure, a wedged container runtime); hang false undoes it.
func (k *Kubelet) Hang(ns, pod, container string, hang bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if hang {
		k.hang[logKey(ns, pod, container, false)] = true
	} else {
		delete(k.hang, logKey(ns, pod, container, false))
	}
}

// Calls returns the log requests served so far ("ns/pod/container[/previous]").
func (k *Kubelet) Calls() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.calls...)
}

func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/exec/") {
		k.serveExec(w, r)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	ns, pod, container := parts[0], parts[1], parts[2]
	q := r.URL.Query()
	previous := q.Get("previous") == "true"
	key := logKey(ns, pod, container, previous)
	k.mu.Lock()
	hook := k.onRequest
	k.mu.Unlock()
	if hook != nil {
		hook(ns, pod, container)
	}
	k.mu.Lock()
	k.calls = append(k.calls, key)
	log, ok := k.logs[key]
	every := k.slow[key]
	stallAt, stalls := k.stall[key]
	hangs := k.hang[key]
	k.mu.Unlock()
	if hangs {
		select {
		case <-r.Context().Done():
		case <-k.done:
		}
		return
	}
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`previous terminated container "` + container + `" in pod "` + pod + `" not found`))
		return
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var since time.Time
	if s := q.Get("sinceTime"); s != "" {
		since, _ = time.Parse(time.RFC3339, s)
	}
	for sc.Scan() {
		line := sc.Text()
		ts, rest, _ := strings.Cut(line, " ")
		if !since.IsZero() {
			if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.Before(since) {
				continue
			}
		}
		if q.Get("timestamps") != "true" {
			line = rest
		}
		lines = append(lines, []byte(line+"\n"))
	}
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	limit := -1
	if n, err := strconv.Atoi(q.Get("limitBytes")); err == nil {
		limit = n
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	sent := 0
	for _, l := range lines {
		if stalls && sent >= stallAt {
			flusher.Flush()
			<-r.Context().Done()
			return
		}
		sent += len(l)
		if limit >= 0 && len(l) > limit {
			l = l[:limit]
		}
		if _, err := w.Write(l); err != nil {
			return
		}
		if limit >= 0 {
			if limit -= len(l); limit == 0 {
				return
			}
		}
		if every > 0 {
			flusher.Flush()
			select {
			case <-time.After(every):
			case <-r.Context().Done():
				return
			}
		}
	}
}
