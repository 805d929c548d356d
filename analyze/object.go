package analyze

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/rules"
)

// Object rules match facts: what coroner reads from the Kubernetes objects (a container's
// end, a waiting reason, a condition of a pod, job or node, a check of the spec), each a kind
// and named fields. Go code observes the facts; which fact is which failure, and what to say
// about it, is the rules' business. factKinds lists the kinds and their fields (docs/rules.md
// describes them).
var factKinds = map[string][]string{
	// A container's end: its current state, or its last one before a restart (last: true).
	"container-terminated": {"container", "reason", "exitCode", "signal", "signalName", "last", "waiting", "restarts", "message"},
	// A container waiting to run (not ContainerCreating or PodInitializing).
	"container-waiting": {"container", "reason", "message", "lastExitCode", "lastReason", "restarts"},
	// A container's restart count.
	"container-restarts": {"container", "count"},
	// A pod: its phase, its status reason (Evicted), and what it got to do.
	"pod":           {"phase", "reason", "message", "scheduled", "imagesPulled", "started"},
	"pod-condition": {"type", "status", "reason", "message"},
	"job-condition": {"type", "status", "reason", "message"},
	// A condition of a node that ran one of the job's pods.
	"node-condition": {"node", "type", "status", "reason", "message"},
	// The GPUs of a node that ran one of the job's pods: lost is capacity - allocatable
	// (GPUs the device plugin marked unhealthy).
	"node-gpus": {"node", "capacity", "allocatable", "lost"},
	// A role of the job and how many of its pods exist.
	"replicas": {"role", "expected", "created", "missing", "jobPhase", "cleanUpWorkers"},
	// A role whose pods are expected and absent from the bundle, for job kinds whose
	// controller deletes them.
	"role-logs": {"role", "expected", "why"},
	// The runtime a TrainJob refers to.
	"runtime": {"kind", "name", "state", "deprecatedBy"},
	// The role whose log decides whether training succeeded (ColossalAIJob's launcher).
	"log-decides": {"role", "phase", "trainingFailed"},
	// Spec checks, one per role.
	"gpu-request":   {"requested", "largest", "fits"},
	"node-selector": {"what", "matches"},
	"dev-shm":       {"gpus", "memoryBacked"},
	// What the NCCL Flight Recorder dumps show, matched across ranks (analyze/flightrecorder.go).
	"flight-recorder": {"problem", "state", "op", "seq", "group", "groupName", "ranks", "count", "who", "others",
		"nodes", "where", "detail"},
}

// fact is one observation: a kind and its fields.
type fact struct {
	kind   string
	fields map[string]string
}

// cond is a compiled rules.Cond.
type cond struct {
	neg  bool
	alts []alt
	// width is how many values the condition admits: narrower conditions are more specific.
	width float64
}

type alt struct {
	op     string // "=", "range", ">=", "<=", ">", "<"
	s      string
	lo, hi float64
	// ref names another field of the same fact or line: a comparison with a
	// factor times its value (">=0.5*step": lo is the factor, 0.5).
	ref string
}

func compileCond(c rules.Cond) (cond, error) {
	s := strings.TrimSpace(string(c))
	var out cond
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		out.neg, s = true, strings.TrimSpace(rest)
	}
	if s == "" {
		return out, fmt.Errorf("empty condition")
	}
	for _, part := range strings.Split(s, "|") {
		part = strings.TrimSpace(part)
		a := alt{op: "=", s: part}
		for _, op := range []string{">=", "<=", ">", "<"} {
			if rest, ok := strings.CutPrefix(part, op); ok {
				rest = strings.TrimSpace(rest)
				if v, err := strconv.ParseFloat(rest, 64); err == nil {
					a = alt{op: op, lo: v}
					break
				}
				factor, ref, ok := parseRef(rest)
				if !ok {
					return out, fmt.Errorf("%q: %s needs a number, a field or a number times a field (0.5*step)", part, op)
				}
				a = alt{op: op, lo: factor, ref: ref}
				break
			}
		}
		if a.op == "=" {
			if lo, hi, ok := strings.Cut(part, "-"); ok && lo != "" {
				l, err1 := strconv.ParseFloat(lo, 64)
				h, err2 := strconv.ParseFloat(hi, 64)
				if err1 == nil && err2 == nil {
					if h < l {
						return out, fmt.Errorf("range %q is empty", part)
					}
					a = alt{op: "range", lo: l, hi: h}
				}
			}
		}
		switch a.op {
		case "=":
			out.width++
		case "range":
			out.width += a.hi - a.lo + 1
		default:
			out.width += 1e9
		}
		out.alts = append(out.alts, a)
	}
	if out.neg {
		out.width = 1e12
	}
	return out, nil
}

// parseRef reads the right side of a comparison with another field: "step" or "0.5*step".
func parseRef(s string) (factor float64, ref string, ok bool) {
	factor = 1
	if f, name, found := strings.Cut(s, "*"); found {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, "", false
		}
		factor, s = v, strings.TrimSpace(name)
	}
	if !fieldName().MatchString(s) {
		return 0, "", false
	}
	return factor, s, true
}

// fieldName is what a condition may name: a fact's field or a pattern's group.
var fieldName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refs are the fields the condition compares with.
func (c cond) refs() []string {
	var out []string
	for _, a := range c.alts {
		if a.ref != "" {
			out = append(out, a.ref)
		}
	}
	return out
}

// holds says whether v meets the condition; fields are the other values of the same fact or
// line, which a comparison with a field reads (nil: such a comparison does not hold).
func (c cond) holds(v string, fields map[string]string) bool {
	any := false
	for _, a := range c.alts {
		if a.holds(v, fields) {
			any = true
			break
		}
	}
	return any != c.neg
}

func (a alt) holds(v string, fields map[string]string) bool {
	if a.op == "=" {
		if v == a.s {
			return true
		}
		x, ok1 := parseNumber(v)
		y, ok2 := parseNumber(a.s)
		return ok1 && ok2 && x == y
	}
	x, ok := parseNumber(v)
	if !ok {
		return false
	}
	if a.ref != "" {
		y, ok := parseNumber(fields[a.ref])
		if !ok {
			return false
		}
		return compare(a.op, x, a.lo*y)
	}
	if a.op == "range" {
		return x >= a.lo && x <= a.hi
	}
	return compare(a.op, x, a.lo)
}

// parseNumber is strconv.ParseFloat without the error it allocates for a value that cannot be
// a number: most fields the object rules compare ("OOMKilled", "true", a name) start with a
// byte no number starts with. A 200,000-file bundle spent 42 MB on those errors.
func parseNumber(v string) (float64, bool) {
	if v == "" {
		return 0, false
	}
	switch c := v[0]; {
	case c >= '0' && c <= '9', c == '+', c == '-', c == '.', c == 'i', c == 'I', c == 'n', c == 'N':
	default:
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil
}

// compare applies a comparison operator.
func compare(op string, x, y float64) bool {
	switch op {
	case ">=":
		return x >= y
	case "<=":
		return x <= y
	case ">":
		return x > y
	case "<":
		return x < y
	}
	return false
}

// where is a compiled rules.Where, in field order.
type where []fieldCond

type fieldCond struct {
	field string
	cond  cond
}

// compileWhere compiles conditions on the fields of a kind; a field the kind does not have
// is an error (a typo would otherwise never match).
func compileWhere(kind string, w rules.Where) (where, error) {
	fields, ok := factKinds[kind]
	if !ok {
		kinds := make([]string, 0, len(factKinds))
		for k := range factKinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return nil, fmt.Errorf("object kind %q is not one of %s", kind, strings.Join(kinds, ", "))
	}
	var out where
	for f, c := range w {
		if !slices.Contains(fields, f) {
			return nil, fmt.Errorf("object kind %s has no field %q (fields: %s)", kind, f, strings.Join(fields, ", "))
		}
		cc, err := compileCond(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for _, ref := range cc.refs() {
			if !slices.Contains(fields, ref) {
				return nil, fmt.Errorf("%s: object kind %s has no field %q to compare with", f, kind, ref)
			}
		}
		out = append(out, fieldCond{f, cc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].field < out[j].field })
	return out, nil
}

func (w where) holds(fields map[string]string) bool {
	for _, fc := range w {
		if !fc.cond.holds(fields[fc.field], fields) {
			return false
		}
	}
	return true
}

// moreSpecific says whether w says more than v: more fields, then narrower conditions.
func (w where) moreSpecific(v where) bool {
	if len(w) != len(v) {
		return len(w) > len(v)
	}
	return w.width() < v.width()
}

func (w where) width() float64 {
	total := 0.0
	for _, fc := range w {
		total += math.Log(fc.cond.width)
	}
	return total
}

// observes says whether any object rule reads facts of a kind.
func (rs *RuleSet) observes(kind string) bool { return len(rs.objects[kind]) > 0 }

// matchFact returns the object rules that match a fact, only the most specific of them (and
// those as specific), so "exit code 137" does not also report "exit code 129-159". Fallback
// rules are dropped later, by observe, when a pattern rule matched the fact's message.
func (rs *RuleSet) matchFact(f fact) []*Rule {
	var best []*Rule
	for _, r := range rs.objects[f.kind] {
		if !r.where.holds(f.fields) {
			continue
		}
		switch {
		case len(best) == 0:
			best = []*Rule{r}
		case r.where.moreSpecific(best[0].where):
			best = []*Rule{r}
		case !best[0].where.moreSpecific(r.where):
			best = append(best, r) // as specific: both say something
		}
	}
	return best
}
