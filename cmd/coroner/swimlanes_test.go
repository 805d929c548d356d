//go:build browser

package main

import (
	"flag"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the screenshots of testdata/screens")

// countingProxy is an HTTP proxy on 127.0.0.1 that answers nothing and remembers every host
// asked for: Chromium sends all its traffic there, so a page that reaches for the network is
// caught.
type countingProxy struct {
	addr  string
	mu    sync.Mutex
	hosts []string
}

func newCountingProxy(t *testing.T) *countingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &countingProxy{addr: l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.URL.Host
		if host == "" {
			host = r.Host
		}
		host, _, _ = strings.Cut(host, ":")
		p.mu.Lock()
		p.hosts = append(p.hosts, host)
		p.mu.Unlock()
		http.Error(w, "no network in tests", http.StatusBadGateway)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

// browserOwn are the hosts Chromium itself calls (clock, component updates, accounts) even
// with background networking off; a report's requests would go anywhere else.
var browserOwn = regexp.MustCompile(`(^|\.)(google\.com|googleapis\.com|googleusercontent\.com|gvt1\.com|gstatic\.com|google)$`)

// pageHosts returns and forgets the hosts asked for that were not the browser's own.
func (p *countingProxy) pageHosts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, h := range p.hosts {
		if !browserOwn.MatchString(h) {
			out = append(out, h)
		}
	}
	p.hosts = nil
	return out
}

// cspViolation is how Chromium logs a blocked load or script to stderr (--enable-logging).
var cspViolation = regexp.MustCompile(`(?i)violates the following Content Security Policy|Refused to (load|execute|apply)`)

// TestSwimlanesInChromium renders the HTML report of 8, 64 and 1,024 ranks in headless
// Chromium: the DOM has the lanes, the folded lanes and the root cause's highlighted lane, its
// ring and the first-failure line; no Content-Security-Policy violation is logged and no
// request leaves the page (a proxy on 127.0.0.1 sees every request; control pages prove both
// checks catch what they look for). It screenshots the picture: the red of the root cause
// must be in it, and with -update the PNGs are written to testdata/screens for review (pixels
// are not compared: fonts differ between machines; the picture's size is).
func TestSwimlanesInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	proxy := newCountingProxy(t)
	dir := t.TempDir()
	open := func(page string) (dom, log string) {
		return runChromium(t, chromium, "--proxy-server=http://"+proxy.addr, "--proxy-bypass-list=<-loopback>",
			"--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+page)
	}

	// The controls: a page that loads an image is seen by the proxy; under the report's
	// policy the same image is refused, and the log says so.
	const img = `<img src="http://coroner-control.invalid/x.png">`
	control := filepath.Join(dir, "control.html")
	require.NoError(t, os.WriteFile(control, []byte(`<!DOCTYPE html><html><head><title>c</title></head><body>`+img+`</body></html>`), 0o644))
	open(control)
	require.Contains(t, proxy.pageHosts(), "coroner-control.invalid", "the proxy sees a page's requests")
	blocked := filepath.Join(dir, "blocked.html")
	require.NoError(t, os.WriteFile(blocked, []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'"><title>c</title></head><body>`+img+`</body></html>`), 0o644))
	_, log := open(blocked)
	require.Regexp(t, cspViolation, log, "a CSP violation is logged")
	require.Empty(t, proxy.pageHosts())

	for _, tt := range []struct {
		ranks  int
		bundle func(t *testing.T) string
		lanes  int // pod lanes drawn
		folded string
		root   string
	}{
		{8, func(*testing.T) string { return filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank") }, 8, "", "worker-4"},
		{64, func(t *testing.T) string { return generated(t, 64) }, 3, "62 ranks", "worker-36"},
		{1024, func(t *testing.T) string { return generated(t, 1024) }, 3, "1,022 ranks", "worker-36"},
	} {
		t.Run(strconv.Itoa(tt.ranks), func(t *testing.T) {
			if testing.Short() && tt.ranks > 8 {
				t.Skip("generates bundles of 64 and 1,024 pods")
			}
			page := filepath.Join(t.TempDir(), "report.html")
			requireExit(t, exitOK, "", "analyze", tt.bundle(t), "-o", page, "-q", "--no-cache")
			dom, log := open(page)
			require.NotRegexp(t, cspViolation, log, "the report breaks no rule of its own policy")
			require.Empty(t, proxy.pageHosts(), "the report asks the network for nothing")

			require.Contains(t, dom, `<svg xmlns="http://www.w3.org/2000/svg"`)
			lanes := regexp.MustCompile(`<text [^>]*class="lab[" ]`).FindAllString(dom, -1)
			require.Len(t, lanes, tt.lanes+1, "a lane per pod or fold, and the job's")
			if tt.folded != "" {
				require.Contains(t, dom, `class="lab folded">`+tt.folded+`<title>`)
			}
			require.Regexp(t, `class="lab rootlab">`+regexp.QuoteMeta(tt.root)+`<`, dom, "the root cause's lane stands out")
			require.Equal(t, 1, strings.Count(dom, `class="rootrow"`))
			require.Equal(t, 2, strings.Count(dom, `class="halo"`), "one ring on the root cause, one in the legend")
			require.Contains(t, dom, `class="first"`)
			require.Regexp(t, `class="firstlab">first failure [0-9:]{8} · `+regexp.QuoteMeta(tt.root)+` · CUDA out of memory<`, dom)

			shot := screenshotLanes(t, chromium, page)
			red := redPixels(t, shot)
			require.Greater(t, red, 150, "the root cause is drawn in red")
			golden := filepath.Join("testdata", "screens", "swimlanes-"+strconv.Itoa(tt.ranks)+".png")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				data, err := os.ReadFile(shot)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(golden, data, 0o644))
				return
			}
			require.Equal(t, imageSize(t, golden), imageSize(t, shot), "the picture's size changed: run with -update and look at %s", golden)
		})
	}
}

// screenshotLanes screenshots the report's picture alone: its figure in a page with the
// report's own head (policy and styles), the window as tall as the figure.
func screenshotLanes(t *testing.T, chromium, report string) string {
	t.Helper()
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	page := string(data)
	head, _, ok := strings.Cut(page, "<body>")
	require.True(t, ok)
	fig := regexp.MustCompile(`(?s)<figure class="lanes".*?</figure>`).FindString(page)
	require.NotEmpty(t, fig)
	m := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(fig)
	require.NotNil(t, m)
	h, _ := strconv.Atoi(m[2])
	dir := t.TempDir()
	figPage := filepath.Join(dir, "lanes.html")
	require.NoError(t, os.WriteFile(figPage, []byte(head+`<body><main style="padding:8px">`+fig+`</main></body></html>`), 0o644))
	shot := filepath.Join(dir, "lanes.png")
	runChromium(t, chromium, "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=1232,"+strconv.Itoa(h+60),
		"--screenshot="+shot, "file://"+figPage)
	return shot
}

// redPixels counts the pixels of the report's error red (#c0392b).
func redPixels(t *testing.T, p string) int {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0xc0) && near(g>>8, 0x39) && near(bl>>8, 0x2b) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b int) bool { d := int(a) - b; return d > -24 && d < 24 }

func imageSize(t *testing.T, p string) image.Point {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err, "golden missing: run go test ./cmd/coroner -run TestSwimlanesInChromium -update and look at it")
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	return image.Pt(cfg.Width, cfg.Height)
}
