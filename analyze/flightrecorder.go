package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/frtrace"
)

// FlightRecorder is what the bundle's NCCL Flight Recorder dumps say, matched across ranks,
// with each rank placed on its pod and node.
type FlightRecorder struct {
	*frtrace.Analysis
	// Places are where each rank ran, by rank, for the ranks the dumps or the job know.
	Places map[int]RankPlace
	// Findings are the findings each problem gave, by the problem's index (nil: no rule
	// reported it).
	Findings []*Finding
}

// RankPlace is where a rank ran: its pod and node, and the dump it wrote ("" without one).
type RankPlace struct {
	Pod, Node, Dump string
}

// flightRecorder matches the flight recorder dumps (package frtrace) and observes each
// problem they show as a fact of kind flight-recorder, on the culprit rank's pod and node:
// the rules say what each is.
func (a *analyzer) flightRecorder() {
	if len(a.m.FlightRecords) == 0 {
		return
	}
	places := map[int]RankPlace{}
	nodeOf := map[string]string{}
	for _, p := range a.jobPods() {
		nodeOf[p.Name] = p.Spec.NodeName
		if r, ok := podRank(p); ok {
			places[r] = RankPlace{Pod: p.Name, Node: p.Spec.NodeName}
		}
	}
	// Ranks the logs place (torchrun's "[rank3]:" prefixes, a log of one process).
	for _, p := range a.procs {
		if _, ok := places[p.rank]; !ok && p.rank >= 0 && p.pod != "" && !a.m.Bundle.Plain {
			places[p.rank] = RankPlace{Pod: p.pod, Node: nodeOf[p.pod]}
		}
	}
	var dumps []frtrace.RankDump
	for _, fr := range a.m.FlightRecords {
		rank := fr.Rank
		if rank < 0 {
			// A name without a rank: the pod's, when it runs one process.
			for r, pl := range places {
				if pl.Pod == fr.Pod && pl.Dump == "" {
					rank = r
				}
			}
		}
		if rank < 0 {
			a.res.Warnings = append(a.res.Warnings, fmt.Sprintf("%s: no rank in its name and none for its pod: not matched", fr.Path))
			continue
		}
		pl := places[rank]
		if fr.Pod != "" && fr.Namespace != "_" {
			pl.Pod, pl.Node = fr.Pod, nodeOf[fr.Pod]
		}
		pl.Dump = fr.Path
		places[rank] = pl
		dumps = append(dumps, frtrace.RankDump{Rank: rank, Source: fr.Path, Dump: fr.Dump})
	}
	if len(dumps) == 0 {
		return
	}
	an := frtrace.Match(dumps)
	a.res.FlightRecorder = &FlightRecorder{Analysis: an, Places: places}
	a.res.Warnings = append(a.res.Warnings, an.Warnings...)
	a.res.FlightRecorder.Findings = make([]*Finding, len(an.Problems))
	for i, p := range an.Problems {
		a.res.FlightRecorder.Findings[i] = a.observeProblem(p, places)
	}
}

// groupName names a process group in a title: "the default group", "group TP (pg 3)".
func groupName(name, desc string) string {
	switch {
	case desc == "default_pg" || desc == "" && name == "0":
		return "the default group"
	case desc != "":
		return fmt.Sprintf("group %s (pg %s)", desc, name)
	}
	return "group " + name
}

// CallSite is the first frame of a stack outside torch: where the program called the
// collective ("evaluate (train.py:160)"); the innermost frame when all are torch's.
func CallSite(fs []frtrace.Frame) string {
	for _, f := range fs {
		if !isTorchFrame(f) {
			return f.String()
		}
	}
	if len(fs) > 0 {
		return fs[0].String()
	}
	return ""
}

// stackText writes the program's innermost two frames of a stack on one line: the frames
// inside torch are the same for every collective and are left out (the report's flight
// recorder section keeps the whole stack).
func stackText(fs []frtrace.Frame) string {
	var parts []string
	for _, f := range fs {
		if isTorchFrame(f) {
			continue
		}
		if len(parts) == 2 {
			break
		}
		parts = append(parts, f.String())
	}
	if len(parts) == 0 && len(fs) > 0 {
		parts = append(parts, fs[0].String())
	}
	return strings.Join(parts, " < ")
}

func isTorchFrame(f frtrace.Frame) bool {
	return strings.Contains(f.File, "torch/") || strings.Contains(f.File, "site-packages/")
}

// who names the culprit ranks with their node, or pod when the node is not known: "rank 2 on
// node gpu-12"; "ranks 0-3 (node gpu-1, gpu-2)".
func who(ranks []int, places map[int]RankPlace) string {
	s := frtrace.RankList(ranks)
	if len(ranks) == 1 {
		pl := places[ranks[0]]
		switch {
		case pl.Node != "":
			// The finding's pod says which pod; the title names the node.
			return fmt.Sprintf("%s on node %s", s, pl.Node)
		case pl.Pod != "":
			return fmt.Sprintf("%s (pod %s)", s, pl.Pod)
		}
		return s
	}
	if nodes := nodesOf(ranks, places); len(nodes) > 0 {
		return fmt.Sprintf("%s (node %s)", s, strings.Join(nodes, ", "))
	}
	return s
}

func nodesOf(ranks []int, places map[int]RankPlace) []string {
	seen := map[string]bool{}
	var nodes []string
	for _, r := range ranks {
		if n := places[r].Node; n != "" && !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// observeProblem observes a problem of the dumps as a fact and returns the first finding it
// gave (nil when no rule matched).
func (a *analyzer) observeProblem(p frtrace.Problem, places map[int]RankPlace) *Finding {
	culprit := -1
	if len(p.Ranks) > 0 {
		culprit = p.Ranks[0]
	}
	fields := map[string]string{
		"problem": p.Kind, "state": p.State, "op": frtrace.ShortOp(p.Op), "seq": strconv.FormatInt(p.Seq, 10),
		"group": p.Group, "groupName": groupName(p.Group, p.GroupDesc), "ranks": frtrace.RankList(p.Ranks),
		"count": strconv.Itoa(len(p.Ranks)), "who": capitalize(who(p.Ranks, places)), "detail": p.Detail,
		"others": "", "nodes": strings.Join(nodesOf(p.Ranks, places), ", "), "where": "",
	}
	if len(p.Ranks) == 0 {
		fields["ranks"], fields["who"] = "", ""
	}
	if len(p.Others) > 0 {
		fields["others"] = frtrace.RankList(p.Others)
	}
	if p.Last != nil {
		fields["where"] = CallSite(p.Last.Frames)
	}
	if fields["where"] == "" && p.Waiting != nil {
		fields["where"] = CallSite(p.Waiting.Frames)
	}
	for _, k := range []string{"where", "nodes", "others", "detail"} {
		if fields[k] == "" {
			fields[k] = "unknown"
		}
	}
	ev := Evidence{Source: "flightrecorder", File: p.Source, Text: truncateText(problemText(p))}
	if ev.File == "" && culprit >= 0 {
		ev.File = places[culprit].Dump
	}
	if ev.File == "" && len(p.Others) > 0 {
		ev.File = places[p.Others[0]].Dump
	}
	w := seen{ev: ev, t: nsTime(p.Time)}
	if len(p.Ranks) == 1 || p.Kind != frtrace.Stalled && p.Kind != frtrace.NoDump {
		w.pod, w.node = places[culprit].Pod, places[culprit].Node
	}
	before := len(a.findings)
	a.observe(fact{"flight-recorder", fields}, w)
	for _, f := range a.findings[before:] {
		f.derived, f.fromDumps = true, true
		if w.pod != "" || len(p.Ranks) == 1 {
			f.Rank = culprit
		}
	}
	if len(a.findings) > before {
		return a.findings[before]
	}
	return nil
}

// nsTime is a dump's Unix nanoseconds as a time (zero when unknown).
func nsTime(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// problemText is the evidence of a problem on one line: the culprit's last entry and stack,
// the collective the others wait in.
func problemText(p frtrace.Problem) string {
	var b strings.Builder
	if p.Last != nil {
		fmt.Fprintf(&b, "rank %d: %s #%d %s", p.LastRank, frtrace.ShortOp(p.Last.Op), seqOf(p.Last), p.Last.State)
		if s := stackText(p.Last.Frames); s != "" {
			fmt.Fprintf(&b, ", from %s", s)
		}
		b.WriteString("; ")
	}
	if p.Waiting != nil && len(p.Others) > 0 {
		fmt.Fprintf(&b, "%s: %s #%d %s", frtrace.RankList(p.Others), frtrace.ShortOp(p.Waiting.Op), seqOf(p.Waiting), p.Waiting.State)
	} else if p.Waiting != nil {
		fmt.Fprintf(&b, "%s #%d %s", frtrace.ShortOp(p.Waiting.Op), seqOf(p.Waiting), p.Waiting.State)
	}
	if p.Detail != "" && p.Kind != frtrace.Stalled {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Detail)
	}
	return b.String()
}

func seqOf(e *frtrace.Entry) int64 {
	if e.IsP2P {
		return e.P2PSeq
	}
	return e.CollectiveSeq
}
