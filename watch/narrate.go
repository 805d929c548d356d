package watch

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

// ReasonNarrative is the reason of the Event that carries a model's narrative, after the
// rule-based one (RootCause or Diagnosed).
const ReasonNarrative = "Narrative"

// defaultNarrateQueue bounds the diagnoses waiting for the model: each holds its report.
const defaultNarrateQueue = 256

// narration is a diagnosis waiting for the model's narrative.
type narration struct {
	key string // the job's key, for the log
	job *unstructured.Unstructured
	p   paths
	rep *report.Report // the report written beside the bundle, rule-based
}

// narrations is the queue of the model's work. It never blocks the collect that adds to it:
// when full, the diagnosis goes without a narrative (a warning, a counted error).
type narrations struct {
	mu     sync.Mutex
	items  []*narration
	max    int
	closed bool
	ready  chan struct{} // a token while items is not empty or closed
}

func newNarrations(max int) *narrations {
	return &narrations{max: max, ready: make(chan struct{}, 1)}
}

func (q *narrations) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// add queues n; false when the queue is full or shut.
func (q *narrations) add(n *narration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.items) >= q.max {
		return false
	}
	q.items = append(q.items, n)
	q.signal()
	return true
}

// get waits for the next narration; nil once the queue is shut.
func (q *narrations) get() *narration {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil
		}
		if len(q.items) > 0 {
			n := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			if len(q.items) > 0 {
				q.signal()
			}
			q.mu.Unlock()
			return n
		}
		q.mu.Unlock()
		<-q.ready
	}
}

// shut stops the queue and returns the narrations that were still waiting.
func (q *narrations) shut() []*narration {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	left := q.items
	q.items = nil
	q.signal()
	return left
}

func (q *narrations) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// queueNarration hands a diagnosis to the model once its bundle, reports and rule-based
// Event exist. The bundle is kept from retention until the narrative is written.
func (c *controller) queueNarration(key string, job *unstructured.Unstructured, p paths, rep *report.Report) {
	if c.opts.Narrate == nil || rep == nil {
		return
	}
	c.st.Lock()
	c.narrating[p.base] = true
	c.st.Unlock()
	if c.llm.add(&narration{key: key, job: job, p: p, rep: rep}) {
		return
	}
	c.doneNarrating(p)
	c.m.errors.WithLabelValues("llm").Inc()
	c.log.Warn("too many diagnoses wait for the model: this one goes without a narrative", "job", key, "queued", c.llm.max)
	rep.Warnings = append(rep.Warnings, "no LLM narrative: too many diagnoses were waiting for the model")
	if err := writeReports(rep, p); err != nil {
		c.m.errors.WithLabelValues("analyze").Inc()
		c.log.Error("could not write the reports", "err", err)
	}
}

func (c *controller) doneNarrating(p paths) {
	c.st.Lock()
	delete(c.narrating, p.base)
	c.st.Unlock()
}

// narrateAll asks the model about one diagnosis at a time until the queue is shut.
func (c *controller) narrateAll(ctx context.Context) {
	for {
		n := c.llm.get()
		if n == nil {
			return
		}
		c.narrate(ctx, n)
		c.doneNarrating(n.p)
	}
}

// narrate adds the model's narrative to a diagnosis: the reports are written again with it,
// and an Event carries its one line, marked as the model's. The verdict, the metrics of root
// causes and the hook's variables stay the rules'. A model that fails (down, slow, not
// pulled, a broken prompt template) leaves a warning in the report and a counted error;
// nothing else changes.
func (c *controller) narrate(ctx context.Context, n *narration) {
	log := c.log.With("job", n.key, "bundle", n.p.bundle)
	start := time.Now()
	// The bundle is diagnosed again for the prompt's log windows (its index): the first
	// diagnosis was closed when its Event was recorded, so that a queue of diagnoses holds no
	// extracted bundle or index.
	d, err := diagnose.Run(ctx, diagnose.Input{Paths: []string{n.p.bundle}}, diagnose.Options{
		Rules: c.opts.Rules, Limits: c.opts.Limits, Workers: 1, Version: c.opts.Version, StuckAfter: c.opts.PendingAfter,
	})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Warn("could not read the bundle again for the prompt's log windows", "err", err)
		n.rep.Warnings = append(n.rep.Warnings, "the LLM prompt has no log windows: the bundle could not be read again: "+err.Error())
		d = nil
	}
	err = c.opts.Narrate(ctx, d, n.rep)
	if d != nil {
		d.Close()
	}
	c.m.llmTime.Observe(time.Since(start).Seconds())
	if err != nil || ctx.Err() != nil {
		// Interrupted: the reports stay as they are, without a narrative.
		log.Warn("the LLM step was interrupted", "err", errors.Join(err, ctx.Err()))
		return
	}
	l := n.rep.LLM
	if l == nil {
		return
	}
	if l.Failure != "" {
		c.m.errors.WithLabelValues("llm").Inc()
		log.Warn("no LLM narrative", "err", l.Failure)
		n.rep.Warnings = append(n.rep.Warnings, "no LLM narrative: "+l.Failure)
	}
	if err := writeReports(n.rep, n.p); err != nil {
		c.m.errors.WithLabelValues("analyze").Inc()
		log.Error("could not write the reports", "err", err)
		return
	}
	if l.Failure != "" {
		return
	}
	msg := narrativeSummary(n.rep, n.p.html, maxEventMessage)
	if err := c.recordEvent(ctx, n.job, corev1.EventTypeNormal, ReasonNarrative, msg); err != nil {
		c.m.errors.WithLabelValues("event").Inc()
		log.Warn("could not record the narrative's Event on the job", "err", err)
		return
	}
	log.Info("narrated", "model", l.Model, "cached", l.Cached, "seconds", time.Since(start).Seconds(), "summary", msg)
}

// narrativeSummary is the one line an Event says of the model's narrative, marked as the
// model's: "model qwen2.5:7b-instruct (not coroner's verdict): <its Error line>; report
// <path>". When the model contradicts the rule-based verdict, the line says so and which one
// stands. An answer out of form shows its first words. Bounded as summary is: the model's
// words are cut first, the disagreement and the path never.
func narrativeSummary(rep *report.Report, reportPath string, max int) string {
	l := rep.LLM
	head := "model " + report.TerminalSafe(oneLine(l.Model)) + " (not coroner's verdict): "
	var said string
	switch {
	case l.AnswerFormat == "":
		head += "answered out of form: "
		said = l.Raw
	case l.Error != "":
		said = l.Error
	default:
		said = l.Analysis
	}
	tail := ""
	if l.Healthy != nil {
		says := analyze.VerdictUnhealthy
		if *l.Healthy {
			says = analyze.VerdictHealthy
		}
		if (rep.Verdict == analyze.VerdictHealthy || rep.Verdict == analyze.VerdictUnhealthy) && rep.Verdict != says {
			tail = "; the model disagrees: it says " + string(says) + ", coroner's verdict stays " + string(rep.Verdict)
			if rep.RootCause != nil {
				tail += " (" + string(rep.RootCause.Category) + ")"
			}
		}
	}
	tail += "; report " + reportPath
	return fit(head, report.TerminalSafe(oneLine(said)), tail, max)
}
