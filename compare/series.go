package compare

import (
	"context"
	"math"
	"strconv"
	"sync"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/logscan"
)

// Metrics are the values of progress lines a diff draws as curves, in report order.
const (
	MetricLoss       = "loss"
	MetricGradNorm   = "grad_norm"
	MetricThroughput = "throughput"
)

var metrics = []string{MetricLoss, MetricGradNorm, MetricThroughput}

// metricKeys are the words that name each metric on a progress line, lower case: the value
// follows the key after spaces, ':', '=' or quotes ("loss: 2.31", "'loss': 2.31",
// "lm loss: 2.3E+00", "grad_norm=1.2", "samples_per_second 41.0"). A key is a whole word: it
// does not match inside "val_loss" or "loss_scale".
var metricKeys = map[string][]string{
	MetricLoss:       {"loss", "train_loss", "train/loss", "lm loss", "lm_loss", "avg_loss", "total_loss"},
	MetricGradNorm:   {"grad_norm", "grad norm", "gradnorm", "grad-norm", "train/grad_norm", "global_grad_norm", "total_norm"},
	MetricThroughput: {"samples_per_second", "train_samples_per_second", "tokens_per_second", "tokens_per_sec", "samples/sec", "throughput", "tokens/s", "samples/s", "tok/s"},
}

// throughputUnits follow a throughput's value ("1.52it/s", "3100 tokens/s").
var throughputUnits = []string{"it/s", "samples/s", "tokens/s", "tok/s", "samples/sec", "tokens/sec"}

// stepKeys name the step of a progress line ("step 120", "iteration 100/2000",
// "global_step=40"); a line without one is placed by its order among its log's progress lines.
var stepKeys = []string{"global_step", "step", "iteration", "iter"}

// maxPoints bounds the points a curve keeps: past it, every other point is dropped and the
// stride doubles, so that a run of a million steps keeps between 64 and 128 evenly spaced
// points, the same ones for the same log.
const maxPoints = 128

// Point is one value of a curve: its step (-1: the line named none), its order among the
// series' lines (0-based) and its value (NaN or ±Inf when the line said so).
type Point struct {
	Step  int64
	N     int
	Value float64
}

// curve is one metric of one process of a log.
type curve struct {
	points []Point
	stride int
	// count is every line seen; firstBad the first non-finite one (nil: none), finite the
	// finite values' count, min and max.
	count     int
	firstBad  *Point
	nonFinite int
	min, max  float64
	last      float64
	stepped   bool
}

func (c *curve) add(step int64, v float64) {
	p := Point{Step: step, N: c.count, Value: v}
	c.count++
	if step >= 0 {
		c.stepped = true
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.nonFinite++
		if c.firstBad == nil {
			q := p
			c.firstBad = &q
		}
	} else {
		if c.count-c.nonFinite == 1 || v < c.min {
			c.min = v
		}
		if c.count-c.nonFinite == 1 || v > c.max {
			c.max = v
		}
		c.last = v
	}
	if c.stride == 0 {
		c.stride = 1
	}
	if p.N%c.stride != 0 {
		return
	}
	if len(c.points) == maxPoints {
		kept := c.points[:0]
		for _, q := range c.points {
			if q.N%(2*c.stride) == 0 {
				kept = append(kept, q)
			}
		}
		c.points = kept
		c.stride *= 2
		if p.N%c.stride != 0 {
			return
		}
	}
	c.points = append(c.points, p)
}

// procCurves are the curves of one process of a log (a torchrun "[rankN]:" prefix, or the
// log's lines without one).
type procCurves struct {
	rank   int
	curves map[string]*curve
}

// logCurves are what one log's progress lines gave.
type logCurves struct {
	procs []*procCurves
	// versions are the versions the log printed, by component (see versionPatterns).
	versions map[string]map[string]bool
	// shapes memo, by shape id, what lines of the shape may hold (shapeMetric,
	// shapeVersion), once shapeSeen is set.
	shapes []uint8
	lower  []byte
}

const (
	shapeSeen uint8 = 1 << iota
	shapeMetric
	shapeVersion
)

func (l *logCurves) proc(rank int) *procCurves {
	for _, p := range l.procs {
		if p.rank == rank {
			return p
		}
	}
	p := &procCurves{rank: rank, curves: map[string]*curve{}}
	l.procs = append(l.procs, p)
	return p
}

// Curves is the visitor of diagnose's one scan that reads the metrics of progress lines into
// bounded curves, per log and process. Its methods are safe for the scan's workers.
type Curves struct {
	mu   sync.Mutex
	logs map[int]*logCurves
}

var _ logscan.Visitor = (*Curves)(nil)

// NewCurves makes the visitor of one run.
func NewCurves() *Curves { return &Curves{logs: map[int]*logCurves{}} }

// Log returns what reads log i's lines.
func (cv *Curves) Log(i int) func(*logscan.Scanned) {
	lc := &logCurves{}
	cv.mu.Lock()
	cv.logs[i] = lc
	cv.mu.Unlock()
	return lc.visit
}

// Done keeps what the log gave (a log cut short keeps its curves so far).
func (cv *Curves) Done(i int, _ logscan.Stats, _ error) {
	cv.mu.Lock()
	if lc := cv.logs[i]; lc != nil {
		lc.shapes, lc.lower = nil, nil
	}
	cv.mu.Unlock()
}

func (cv *Curves) log(i int) *logCurves {
	if cv == nil {
		return nil
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	return cv.logs[i]
}

func (l *logCurves) visit(s *logscan.Scanned) {
	what := shapeMetric | shapeVersion
	if sh := s.Shape; sh != nil {
		for sh.ID >= len(l.shapes) {
			l.shapes = append(l.shapes, 0)
		}
		m := &l.shapes[sh.ID]
		if *m&shapeSeen == 0 {
			// Lines of a shape differ only in their variable words: what the first holds, the
			// others hold.
			*m = shapeSeen
			text := l.lowered(s.Text)
			if namesMetric(text) {
				*m |= shapeMetric
			}
			if mayHaveVersion(text) {
				*m |= shapeVersion
			}
		}
		what = *m
	}
	if what&(shapeMetric|shapeVersion) == 0 {
		return
	}
	text := l.lowered(s.Text)
	if what&shapeVersion != 0 && mayHaveVersion(text) {
		if l.versions == nil {
			l.versions = map[string]map[string]bool{}
		}
		readVersions(s.Text, l.versions)
	}
	if what&shapeMetric == 0 {
		return
	}
	var vals [3]float64
	var found [3]bool
	any := false
	for i, m := range metrics {
		if v, ok := metricValue(text, m); ok {
			vals[i], found[i], any = v, true, true
		}
	}
	if !any {
		return
	}
	step := int64(-1)
	for _, k := range stepKeys {
		if v, ok := keyValue(text, k); ok && v >= 0 && v == math.Trunc(v) && v < 1<<53 {
			step = int64(v)
			break
		}
	}
	p := l.proc(logscan.RankPrefix(s.Text))
	for i, m := range metrics {
		if !found[i] {
			continue
		}
		c := p.curves[m]
		if c == nil {
			c = &curve{}
			p.curves[m] = c
		}
		c.add(step, vals[i])
	}
}

// lowered is the line in lower case, in the log's scratch space.
func (l *logCurves) lowered(b []byte) []byte {
	l.lower = l.lower[:0]
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		l.lower = append(l.lower, c)
	}
	return l.lower
}

// namesMetric reports whether a lower-case line has a metric's value.
func namesMetric(text []byte) bool {
	for _, m := range metrics {
		if _, ok := metricValue(text, m); ok {
			return true
		}
	}
	return false
}

// metricValue is the value of a metric on a lower-case line: after one of its keys or, for
// throughput, before its unit.
func metricValue(text []byte, metric string) (float64, bool) {
	for _, k := range metricKeys[metric] {
		if v, ok := keyValue(text, k); ok {
			return v, true
		}
	}
	if metric == MetricThroughput {
		for _, u := range throughputUnits {
			if v, ok := unitValue(text, u); ok {
				return v, true
			}
		}
	}
	return 0, false
}

func wordByte(c byte) bool {
	return c == '_' || c == '/' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z'
}

// keyValue finds the number after a whole-word key: "key: 1.5", "'key': nan", "key=3".
func keyValue(text []byte, key string) (float64, bool) {
	for from := 0; from < len(text); {
		i := indexAt(text, key, from)
		if i < 0 {
			return 0, false
		}
		from = i + 1
		end := i + len(key)
		if (i > 0 && wordByte(text[i-1])) || (end < len(text) && wordByte(text[end]) && text[end] != '.') {
			continue
		}
		j := end
		for j < len(text) && (text[j] == ' ' || text[j] == ':' || text[j] == '=' || text[j] == '\'' || text[j] == '"' || text[j] == '\t') {
			j++
		}
		if j == end {
			continue
		}
		if v, n := number(text[j:]); n > 0 {
			return v, true
		}
	}
	return 0, false
}

// unitValue finds the number just before a unit: "1.52it/s", "3100 tokens/s".
func unitValue(text []byte, unit string) (float64, bool) {
	for from := 0; from < len(text); {
		i := indexAt(text, unit, from)
		if i < 0 {
			return 0, false
		}
		from = i + 1
		if end := i + len(unit); end < len(text) && wordByte(text[end]) && text[end] != '.' {
			continue
		}
		j := i
		if j > 0 && text[j-1] == ' ' {
			j--
		}
		k := j
		for k > 0 && (text[k-1] == '.' || '0' <= text[k-1] && text[k-1] <= '9') {
			k--
		}
		if k == j || (k > 0 && wordByte(text[k-1]) && text[k-1] != '-') {
			continue
		}
		if v, n := number(text[k:j]); n == j-k {
			return v, true
		}
	}
	return 0, false
}

func indexAt(text []byte, s string, from int) int {
	for i := from; i+len(s) <= len(text); i++ {
		if text[i] == s[0] && string(text[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}

// number reads a decimal number, nan or inf at the start of a lower-case text: its value and
// length (0: none).
func number(b []byte) (float64, int) {
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		i++
	}
	for _, w := range []string{"nan", "inf"} {
		if len(b) >= i+3 && string(b[i:i+3]) == w && (len(b) == i+3 || !wordByte(b[i+3]) || b[i+3] == '.' || (w == "inf" && len(b) >= i+8 && string(b[i:i+8]) == "infinity")) {
			if w == "nan" {
				return math.NaN(), i + 3
			}
			if b[0] == '-' {
				return math.Inf(-1), i + 3
			}
			return math.Inf(1), i + 3
		}
	}
	digits := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(b) && b[i] == 'e' {
		j := i + 1
		if j < len(b) && (b[j] == '-' || b[j] == '+') {
			j++
		}
		if j < len(b) && '0' <= b[j] && b[j] <= '9' {
			for j < len(b) && '0' <= b[j] && b[j] <= '9' {
				j++
			}
			i = j
		}
	}
	v, err := strconv.ParseFloat(string(b[:i]), 64)
	if err != nil {
		if i > 0 && b[i-1] == '.' {
			i-- // "3." ends a sentence
			v, err = strconv.ParseFloat(string(b[:i]), 64)
		}
		if err != nil {
			return 0, 0
		}
	}
	return v, i
}

// Run is one side of a diff: its diagnosis and the curves read in its scan.
type Run struct {
	*diagnose.Diagnosis
	Curves *Curves
}

// Diagnose diagnoses one run as a diff needs it: diagnose.Run with the Curves visitor in its
// scan. The caller closes the run.
func Diagnose(ctx context.Context, in diagnose.Input, opts diagnose.Options) (*Run, error) {
	cv := NewCurves()
	opts.Visitors = append(append([]logscan.Visitor(nil), opts.Visitors...), cv)
	d, err := diagnose.Run(ctx, in, opts)
	if err != nil {
		return nil, err
	}
	return &Run{Diagnosis: d, Curves: cv}, nil
}
