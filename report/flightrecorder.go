package report

import (
	"sort"
	"time"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/frtrace"
)

// FlightRecorder is what the NCCL Flight Recorder dumps show (`flightRecorder` in the JSON;
// absent without dumps): per process group, the last collectives of each rank, and the
// problems found by matching them across ranks.
type FlightRecorder struct {
	// Version is the dumps' format version ("2.10"; "" for the bare list of early 2024, or
	// when the ranks' versions differ, which a warning says).
	Version string `json:"version"`
	// Ranks are the ranks whose dump was read.
	Ranks    []int       `json:"ranks"`
	Groups   []FRGroup   `json:"groups"`
	Problems []FRProblem `json:"problems"`
}

// FRGroup is one process group: its name (pg guid), description, members, the members
// without a dump, and a lane per member with a dump.
type FRGroup struct {
	Name   string   `json:"name"`
	Desc   string   `json:"desc,omitempty"`
	Ranks  []int    `json:"ranks"`
	NoDump []int    `json:"noDump,omitempty"`
	Lanes  []FRLane `json:"lanes"`
}

// FRLane is one rank's last collectives of a group. Enqueued, Started and Completed are the
// last collective seq ids the rank reached (-1: none in its buffer). Culprit marks a rank a
// problem of this group names.
type FRLane struct {
	Rank      int            `json:"rank"`
	Pod       string         `json:"pod,omitempty"`
	Node      string         `json:"node,omitempty"`
	Dump      string         `json:"dump"`
	Enqueued  int64          `json:"enqueued"`
	Started   int64          `json:"started"`
	Completed int64          `json:"completed"`
	Culprit   bool           `json:"culprit,omitempty"`
	Last      []FRCollective `json:"last"`
}

// FRCollective is one entry of a rank's buffer: its seq (collective_seq_id, or p2p_seq_id
// when p2p), operation, state (scheduled, started, completed), when it was enqueued, and the
// call site outside torch.
type FRCollective struct {
	Seq   int64      `json:"seq"`
	P2P   bool       `json:"p2p,omitempty"`
	Op    string     `json:"op"`
	State string     `json:"state"`
	Time  *time.Time `json:"time,omitempty"`
	Where string     `json:"where,omitempty"`
}

// FRProblem is a problem the dumps show in one group: kind (missing-rank, stalled, mismatch,
// p2p-missing, no-dump), the collective, the ranks it names and the ranks that waited, the
// kernel state of a stall, what differs, the culprit's last stack (innermost first), and the
// finding it gave.
type FRProblem struct {
	Kind      string     `json:"kind"`
	Group     string     `json:"group"`
	GroupDesc string     `json:"groupDesc,omitempty"`
	Seq       int64      `json:"seq"`
	Op        string     `json:"op,omitempty"`
	Ranks     []int      `json:"ranks"`
	Others    []int      `json:"others,omitempty"`
	State     string     `json:"state,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	Time      *time.Time `json:"time,omitempty"`
	Stack     []string   `json:"stack,omitempty"`
	FindingID string     `json:"findingId,omitempty"`
}

func nsTimePtr(ns int64) *time.Time {
	if ns <= 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

func flightRecorderOf(fr *analyze.FlightRecorder) *FlightRecorder {
	if fr == nil || fr.Analysis == nil {
		return nil
	}
	out := &FlightRecorder{Version: fr.Version, Ranks: append([]int{}, fr.Ranks...), Groups: []FRGroup{}, Problems: []FRProblem{}}
	culprits := map[string]map[int]bool{}
	for i, p := range fr.Problems {
		q := FRProblem{Kind: p.Kind, Group: p.Group, GroupDesc: p.GroupDesc, Seq: p.Seq, Op: p.Op,
			Ranks: append([]int{}, p.Ranks...), Others: p.Others, State: p.State, Detail: p.Detail, Time: nsTimePtr(p.Time)}
		if p.Last != nil {
			for _, f := range p.Last.Frames {
				q.Stack = append(q.Stack, f.String())
			}
		}
		if i < len(fr.Findings) && fr.Findings[i] != nil {
			q.FindingID = fr.Findings[i].ID
		}
		out.Problems = append(out.Problems, q)
		if p.Kind != frtrace.NoDump {
			if culprits[p.Group] == nil {
				culprits[p.Group] = map[int]bool{}
			}
			for _, r := range p.Ranks {
				culprits[p.Group][r] = true
			}
		}
	}
	for _, g := range fr.Groups {
		og := FRGroup{Name: g.Name, Desc: g.Desc, Ranks: g.Ranks, NoDump: g.NoDump, Lanes: []FRLane{}}
		for _, l := range g.Lanes {
			pl := fr.Places[l.Rank]
			ol := FRLane{Rank: l.Rank, Pod: pl.Pod, Node: pl.Node, Dump: l.Source, Enqueued: l.Enqueued, Started: l.Started,
				Completed: l.Completed, Culprit: culprits[g.Name][l.Rank], Last: []FRCollective{}}
			for _, e := range l.Last {
				c := FRCollective{Seq: e.CollectiveSeq, P2P: e.IsP2P, Op: e.Op, State: e.State, Time: nsTimePtr(e.Created)}
				if e.IsP2P {
					c.Seq = e.P2PSeq
				}
				c.Where = analyze.CallSite(e.Frames)
				ol.Last = append(ol.Last, c)
			}
			og.Lanes = append(og.Lanes, ol)
		}
		sort.SliceStable(og.Lanes, func(i, j int) bool { return og.Lanes[i].Rank < og.Lanes[j].Rank })
		out.Groups = append(out.Groups, og)
	}
	return out
}

// capFRLanes bounds the lanes a group's table shows (culprits always, then the others in
// rank order) unless the report is full.
const capFRLanes = 16

// FRGroupView is a process group as the templates show it.
type FRGroupView struct {
	FRGroup
	// Shown are the lanes in the table; More how many are left out.
	Shown []FRLane
	More  int
}

// FRGroups are the flight recorder's groups with their lanes capped: the ranks problems name
// first, then the others in rank order.
func (v *view) FRGroups() []FRGroupView {
	if v.FlightRecorder == nil {
		return nil
	}
	var out []FRGroupView
	for _, g := range v.FlightRecorder.Groups {
		gv := FRGroupView{FRGroup: g}
		var rest []FRLane
		for _, l := range g.Lanes {
			if l.Culprit {
				gv.Shown = append(gv.Shown, l)
			} else {
				rest = append(rest, l)
			}
		}
		for _, l := range rest {
			if !v.Full && len(gv.Shown) >= capFRLanes {
				gv.More++
				continue
			}
			gv.Shown = append(gv.Shown, l)
		}
		sort.SliceStable(gv.Shown, func(i, j int) bool { return gv.Shown[i].Rank < gv.Shown[j].Rank })
		out = append(out, gv)
	}
	return out
}

// FRSeq writes a lane's seq for the table: "-" for none.
func FRSeq(n int64) string {
	if n < 0 {
		return "-"
	}
	return itoa(int(n))
}
