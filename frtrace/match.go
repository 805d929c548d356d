package frtrace

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// RankDump is a dump and the global rank it was written by.
type RankDump struct {
	Rank int
	// Source names where the dump was read (a bundle path), for evidence.
	Source string
	Dump   *Dump
}

// Problem kinds.
const (
	// Missing: ranks of a group never entered the collective the other ranks wait in.
	Missing = "missing-rank"
	// Stalled: every rank entered the collective and none completed it.
	Stalled = "stalled"
	// Mismatch: the ranks entered the same collective with another operation, size or dtype.
	Mismatch = "mismatch"
	// PeerMissing: a send or receive whose peer never posted its side.
	PeerMissing = "p2p-missing"
	// NoDump: members of a group whose dumps are not here (a gap, not a failure).
	NoDump = "no-dump"
)

// Problem is what the dumps show went wrong in one process group.
type Problem struct {
	Kind             string
	Group, GroupDesc string
	// Seq is the collective's collective_seq_id (the p2p_seq_id for PeerMissing).
	Seq int64
	// Op is the operation the ranks that entered it called ("nccl:all_reduce").
	Op string
	// Ranks are the ranks the problem is about (the culprits); Others the ranks that entered
	// the collective and waited.
	Ranks, Others []int
	// State is, for Stalled, how far the ranks got: "started" (the kernels run: the network)
	// or "scheduled" (the kernel never started: the GPU was busy with earlier work).
	State string
	// Detail says what differs for Mismatch ("rank 1 nccl:all_gather, ranks 0, 2, 3
	// nccl:all_reduce"), and how far a culprit got for Missing.
	Detail string
	// Last is the culprit's last entry of the group (its stack says where it last called a
	// collective); nil when it has none. Waiting is the entry the others wait in.
	Last, Waiting *Entry
	// LastRank is the rank whose entry Last is; Source the dump it came from.
	LastRank int
	Source   string
	// Time is when the first of the others enqueued the collective (Unix ns; 0 unknown).
	Time int64
}

// Lane is one rank's last collectives of a group, for the report's table.
type Lane struct {
	Rank   int
	Source string
	// Last are the rank's last entries of the group, oldest first (at most LaneEntries).
	Last []Entry
	// Enqueued, Started and Completed are the last collective seq ids the rank reached (-1:
	// none).
	Enqueued, Started, Completed int64
}

// LaneEntries is how many of a rank's last entries a lane keeps.
const LaneEntries = 3

// GroupState is one process group as the dumps show it.
type GroupState struct {
	Name, Desc string
	// Ranks are the members; NoDump those whose dump is missing.
	Ranks, NoDump []int
	Lanes         []Lane
}

// Analysis is what the dumps of a job say, matched across ranks.
type Analysis struct {
	// Version is the dumps' version when they agree.
	Version string
	// Ranks are the ranks with a dump.
	Ranks    []int
	Groups   []GroupState
	Problems []Problem
	// Warnings are what stood in the way (versions that differ, a rank dumped twice).
	Warnings []string
}

type member struct {
	rank   int
	source string
	// colls are the rank's collectives of the group by seq (several for a coalesced
	// batch), p2p its point-to-point operations in order.
	colls map[int64][]*Entry
	p2p   []*Entry
	all   []*Entry
	min   int64
	max   int64
}

// Match lines up the dumps of one job and finds what they show. Ranks are matched per process
// group (name and member set), each group's collectives by collective_seq_id from the first
// seq every rank still holds (ring buffers drop the oldest), as torch's fr_trace does; unlike
// it, Match names a collective every rank entered and none completed, and members whose dump
// is missing are a gap (NoDump), never a culprit.
func Match(dumps []RankDump) *Analysis {
	a := &Analysis{}
	dumps = slices.Clone(dumps)
	sort.SliceStable(dumps, func(i, j int) bool { return dumps[i].Rank < dumps[j].Rank })
	byRank := map[int]RankDump{}
	versions := map[string][]int{}
	for _, d := range dumps {
		if d.Dump == nil {
			continue
		}
		if prev, ok := byRank[d.Rank]; ok {
			a.Warnings = append(a.Warnings, fmt.Sprintf("rank %d has two dumps (%s, %s): the first is used", d.Rank, prev.Source, d.Source))
			continue
		}
		byRank[d.Rank] = d
		a.Ranks = append(a.Ranks, d.Rank)
		versions[d.Dump.Version] = append(versions[d.Dump.Version], d.Rank)
	}
	if len(versions) == 1 {
		for v := range versions {
			a.Version = v
		}
	} else if len(versions) > 1 {
		var parts []string
		for v, rs := range versions {
			if v == "" {
				v = "no version"
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", v, RankList(rs)))
		}
		sort.Strings(parts)
		a.Warnings = append(a.Warnings, "the dumps' versions differ: "+strings.Join(parts, ", ")+"; they are matched all the same")
	}
	for _, g := range groupsOf(byRank, a.Ranks) {
		a.group(g, byRank)
	}
	sort.SliceStable(a.Problems, func(i, j int) bool { return problemLess(a.Problems[i], a.Problems[j]) })
	return a
}

// problemLess orders problems: failures before gaps, then by time, group and seq.
func problemLess(p, q Problem) bool {
	if (p.Kind == NoDump) != (q.Kind == NoDump) {
		return q.Kind == NoDump
	}
	if p.Time != q.Time && p.Time != 0 && q.Time != 0 {
		return p.Time < q.Time
	}
	if p.Group != q.Group {
		return groupLess(p.Group, q.Group)
	}
	return p.Seq < q.Seq
}

// groupLess orders group names numerically when they are numbers ("0" < "1" < "10").
func groupLess(a, b string) bool {
	x, ea := strconv.Atoi(a)
	y, eb := strconv.Atoi(b)
	if ea == nil && eb == nil {
		return x < y
	}
	return a < b
}

// groupsOf lists the process groups the dumps know: by name and member set (pg_config of
// every rank), and, for dumps without pg_config, each group name their entries use, with the
// ranks that hold entries of it as members.
func groupsOf(byRank map[int]RankDump, ranks []int) []Group {
	seen := map[string]bool{}
	var out []Group
	add := func(g Group) {
		k := g.Name + "/" + fmt.Sprint(sortedInts(g.Ranks))
		if !seen[k] {
			seen[k] = true
			out = append(out, g)
		}
	}
	configured := map[string]bool{}
	for _, r := range ranks {
		for _, g := range byRank[r].Dump.Groups {
			if len(g.Ranks) == 0 {
				continue
			}
			add(g)
			configured[g.Name] = true
		}
	}
	implicit := map[string][]int{}
	for _, r := range ranks {
		for i := range byRank[r].Dump.Entries {
			e := &byRank[r].Dump.Entries[i]
			if !configured[e.Group] && !slices.Contains(implicit[e.Group], r) {
				implicit[e.Group] = append(implicit[e.Group], r)
			}
		}
	}
	names := make([]string, 0, len(implicit))
	for n := range implicit {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(Group{Name: n, Ranks: implicit[n]})
	}
	sort.SliceStable(out, func(i, j int) bool { return groupLess(out[i].Name, out[j].Name) })
	return out
}

func sortedInts(xs []int) []int {
	s := slices.Clone(xs)
	sort.Ints(s)
	return s
}

// RankList writes ranks as "rank 3" or "ranks 0, 1, 2 and 5" (runs as "0-63").
func RankList(ranks []int) string {
	rs := sortedInts(ranks)
	if len(rs) == 1 {
		return "rank " + strconv.Itoa(rs[0])
	}
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(rs[i]), strconv.Itoa(rs[j]))
		default:
			parts = append(parts, strconv.Itoa(rs[i]))
		}
		i = j + 1
	}
	if len(parts) == 1 {
		return "ranks " + parts[0]
	}
	return "ranks " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func (a *Analysis) group(g Group, byRank map[int]RankDump) {
	gs := GroupState{Name: g.Name, Ranks: sortedInts(g.Ranks)}
	desc := g.Desc
	var members []*member
	for _, r := range gs.Ranks {
		rd, ok := byRank[r]
		if !ok {
			gs.NoDump = append(gs.NoDump, r)
			continue
		}
		m := &member{rank: r, source: rd.Source, colls: map[int64][]*Entry{}, min: -1, max: -1}
		for i := range rd.Dump.Entries {
			e := &rd.Dump.Entries[i]
			if e.Group != g.Name {
				continue
			}
			if desc == "" {
				desc = e.GroupDesc
			}
			m.all = append(m.all, e)
			if e.IsP2P {
				m.p2p = append(m.p2p, e)
				continue
			}
			if e.CollectiveSeq < 0 {
				continue
			}
			m.colls[e.CollectiveSeq] = append(m.colls[e.CollectiveSeq], e)
			if m.min < 0 || e.CollectiveSeq < m.min {
				m.min = e.CollectiveSeq
			}
			if e.CollectiveSeq > m.max {
				m.max = e.CollectiveSeq
			}
		}
		members = append(members, m)
		gs.Lanes = append(gs.Lanes, lane(m, rd.Dump))
	}
	gs.Desc = desc
	a.Groups = append(a.Groups, gs)
	if len(gs.NoDump) > 0 && len(members) > 0 {
		a.Problems = append(a.Problems, Problem{Kind: NoDump, Group: g.Name, GroupDesc: desc, Ranks: gs.NoDump,
			Others: ranksOf(members), Detail: fmt.Sprintf("no dump of %s", RankList(gs.NoDump))})
	}
	if len(members) == 0 {
		return
	}
	if p, ok := a.missing(g.Name, desc, members); ok {
		a.Problems = append(a.Problems, p)
	} else if p, ok := mismatch(g.Name, desc, members); ok {
		a.Problems = append(a.Problems, p)
	} else if p, ok := stalled(g.Name, desc, members, len(gs.NoDump) > 0); ok {
		a.Problems = append(a.Problems, p)
	}
	a.Problems = append(a.Problems, peerMissing(g, desc, members, byRank)...)
}

func ranksOf(ms []*member) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.rank
	}
	return out
}

func lane(m *member, d *Dump) Lane {
	l := Lane{Rank: m.rank, Source: m.source, Enqueued: m.max, Started: -1, Completed: -1}
	for _, e := range m.all {
		if e.IsP2P {
			continue
		}
		if (e.State == "started" || e.State == "completed") && e.CollectiveSeq > l.Started {
			l.Started = e.CollectiveSeq
		}
		if e.State == "completed" && e.CollectiveSeq > l.Completed {
			l.Completed = e.CollectiveSeq
		}
	}
	start := max(len(m.all)-LaneEntries, 0)
	for _, e := range m.all[start:] {
		c := *e
		l.Last = append(l.Last, c)
	}
	return l
}

// missing finds the ranks that never entered a collective the others are waiting in: the
// members whose last collective is below the group's highest, when a rank that holds the
// next one has not completed it (had it completed, the dumps were only taken at different
// times).
func (a *Analysis) missing(name, desc string, ms []*member) (Problem, bool) {
	var behind []*member
	lowest := int64(-1)
	for _, m := range ms {
		if lowest < 0 || m.max < lowest {
			lowest = m.max
		}
	}
	top := int64(-1)
	for _, m := range ms {
		top = max(top, m.max)
	}
	if lowest == top || top < 0 {
		return Problem{}, false
	}
	for _, m := range ms {
		if m.max == lowest {
			behind = append(behind, m)
		}
	}
	// The collective the others wait in: the first after the culprits' last that a rank holds
	// and has not completed.
	var seq int64
	var others []int
	var waiting *Entry
	var t int64
	for _, s := range seqsBetween(ms, lowest+1, top) {
		if waiting != nil {
			break
		}
		others, t = nil, 0
		for _, m := range ms {
			es := m.colls[s]
			if len(es) == 0 {
				continue
			}
			others = append(others, m.rank)
			last := es[len(es)-1]
			if last.State != "completed" && waiting == nil {
				waiting, seq = last, s
			}
			if c := es[0].Created; c > 0 && (t == 0 || c < t) {
				t = c
			}
		}
	}
	if waiting == nil {
		return Problem{}, false
	}
	p := Problem{Kind: Missing, Group: name, GroupDesc: desc, Seq: seq, Op: opOf(ms, seq), Others: others,
		Waiting: waiting, Time: t}
	for _, m := range behind {
		p.Ranks = append(p.Ranks, m.rank)
	}
	if c := behind[0]; len(c.all) > 0 {
		last := *c.all[len(c.all)-1]
		p.Last, p.LastRank, p.Source = &last, c.rank, c.source
		if lowest >= 0 {
			p.Detail = fmt.Sprintf("its last collective was #%d (%s, %s)", lowest, shortOp(last.Op), last.State)
		}
	} else {
		p.LastRank, p.Source = behind[0].rank, behind[0].source
		p.Detail = "it holds no collective of the group"
	}
	return p, true
}

// seqsBetween lists the collective seqs the members hold from lo to hi, in order: seqs are
// the dumps' numbers, so only those present are visited, however far apart.
func seqsBetween(ms []*member, lo, hi int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, m := range ms {
		for s := range m.colls {
			if s >= lo && s <= hi && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// opOf names the operation of a collective from the ranks that entered it: a coalesced batch
// by its operations.
func opOf(ms []*member, seq int64) string {
	for _, m := range ms {
		if es := m.colls[seq]; len(es) > 0 {
			return signatureOp(es)
		}
	}
	return ""
}

func signatureOp(es []*Entry) string {
	var ops []string
	for _, e := range es {
		if e.Op != "nccl:coalesced" || len(es) == 1 {
			ops = append(ops, e.Op)
		}
	}
	if len(ops) == 0 {
		return es[0].Op
	}
	return strings.Join(ops, "+")
}

// shortOp drops the backend: "nccl:all_reduce" is "all_reduce".
func shortOp(op string) string {
	if i := strings.IndexByte(op, ':'); i >= 0 {
		return op[i+1:]
	}
	return op
}

// ShortOp is the operation without its backend ("all_reduce").
func ShortOp(op string) string { return shortOp(op) }

// sizeFree are operations whose ranks legitimately send different sizes.
var sizeFree = []string{"all_to_all", "alltoall", "gather", "scatter", "send", "recv"}

func signature(es []*Entry) (op, size, dtype string) {
	op = signatureOp(es)
	var sz, dt []string
	for _, e := range es {
		if e.Op == "nccl:coalesced" && len(es) > 1 {
			continue
		}
		free := false
		for _, f := range sizeFree {
			free = free || strings.Contains(e.Op, f)
		}
		if !free {
			sz = append(sz, fmt.Sprint(e.InputSizes))
		}
		dt = append(dt, strings.Join(e.InputDtypes, ","))
	}
	return op, strings.Join(sz, ";"), strings.Join(dt, ";")
}

// mismatch compares the collectives every rank holds, from the first seq all still have to
// the last all entered, and reports the first that differs: its operation, then its sizes,
// then its dtypes. The ranks named are those that differ from the most common form.
func mismatch(name, desc string, ms []*member) (Problem, bool) {
	lo, hi := int64(-1), int64(-1)
	for i, m := range ms {
		if m.min < 0 {
			return Problem{}, false
		}
		if i == 0 || m.min > lo {
			lo = m.min
		}
		if i == 0 || m.max < hi {
			hi = m.max
		}
	}
	for _, seq := range seqsBetween(ms, lo, hi) {
		sig := map[int][3]string{}
		for _, m := range ms {
			es := m.colls[seq]
			if len(es) == 0 {
				continue
			}
			o, s, d := signature(es)
			sig[m.rank] = [3]string{o, s, d}
		}
		for part, what := range []string{"operation", "sizes", "dtypes"} {
			counts := map[string][]int{}
			for _, m := range ms {
				if s, ok := sig[m.rank]; ok {
					counts[s[part]] = append(counts[s[part]], m.rank)
				}
			}
			if len(counts) < 2 {
				continue
			}
			forms := make([]string, 0, len(counts))
			for f := range counts {
				forms = append(forms, f)
			}
			sort.SliceStable(forms, func(i, j int) bool {
				if len(counts[forms[i]]) != len(counts[forms[j]]) {
					return len(counts[forms[i]]) > len(counts[forms[j]])
				}
				return counts[forms[i]][0] < counts[forms[j]][0]
			})
			p := Problem{Kind: Mismatch, Group: name, GroupDesc: desc, Seq: seq, Op: forms[0], Others: counts[forms[0]]}
			var parts []string
			for _, f := range forms[1:] {
				p.Ranks = append(p.Ranks, counts[f]...)
			}
			sort.Ints(p.Ranks)
			for _, f := range forms {
				parts = append(parts, fmt.Sprintf("%s %s", RankList(counts[f]), describe(what, f)))
			}
			p.Detail = fmt.Sprintf("%s differ: %s", what, strings.Join(parts, "; "))
			c := p.Ranks[0]
			for _, m := range ms {
				if m.rank == c {
					e := *m.colls[seq][len(m.colls[seq])-1]
					p.Last, p.LastRank, p.Source = &e, c, m.source
				}
				if m.rank == p.Others[0] {
					e := *m.colls[seq][0]
					p.Waiting, p.Time = &e, e.Created
					if p.Kind == Mismatch && what != "operation" {
						p.Op = e.Op
					}
				}
			}
			return p, true
		}
	}
	return Problem{}, false
}

func describe(what, form string) string {
	switch what {
	case "operation":
		return "called " + form
	case "sizes":
		return "sent " + form
	}
	return "used " + form
}

// stalled finds the collective every rank entered and none completed: the last of each, when
// all ranks' last is the same and no rank completed it. fr_trace calls this a match; it is a
// network or GPU stall. Ranks whose kernel never started are named (their GPU was busy);
// when every kernel started, all are (the network between them). With dumps missing, the
// absent ranks may be the ones behind: nothing is said.
func stalled(name, desc string, ms []*member, gaps bool) (Problem, bool) {
	if gaps {
		return Problem{}, false
	}
	top := ms[0].max
	if top < 0 {
		return Problem{}, false
	}
	var scheduled, started []int
	var t int64
	var waiting *Entry
	for _, m := range ms {
		if m.max != top {
			return Problem{}, false
		}
		es := m.colls[top]
		last := es[len(es)-1]
		if last.State == "completed" {
			return Problem{}, false
		}
		if waiting == nil {
			waiting = last
		}
		if c := es[0].Created; c > 0 && (t == 0 || c < t) {
			t = c
		}
		if last.State == "started" {
			started = append(started, m.rank)
		} else {
			scheduled = append(scheduled, m.rank)
		}
	}
	p := Problem{Kind: Stalled, Group: name, GroupDesc: desc, Seq: top, Op: opOf(ms, top), Waiting: waiting, Time: t}
	switch {
	case len(scheduled) > 0 && len(started) > 0:
		p.Ranks, p.Others, p.State = scheduled, started, "scheduled"
		p.Detail = fmt.Sprintf("the kernel never started on %s; it runs on %s", RankList(scheduled), RankList(started))
	case len(started) > 0:
		p.Ranks, p.State = started, "started"
		p.Detail = "the kernel started on every rank and completed on none"
	default:
		p.Ranks, p.State = scheduled, "scheduled"
		p.Detail = "the kernel started on no rank"
	}
	for _, m := range ms {
		if m.rank == p.Ranks[0] {
			e := *m.colls[top][len(m.colls[top])-1]
			p.Last, p.LastRank, p.Source = &e, m.rank, m.source
		}
	}
	return p, true
}

var p2pName = regexp.MustCompile(`(send|recv)\s+(\d+)->(\d+)`)

// peerMissing finds sends and receives a rank posted and never completed whose peer posted no
// open counterpart: the peer never reached its side. torch names them "nccl:send 0->1" with
// group ranks.
func peerMissing(g Group, desc string, ms []*member, byRank map[int]RankDump) []Problem {
	global := func(local int) (int, bool) {
		if local >= 0 && local < len(g.Ranks) {
			return g.Ranks[local], true
		}
		return -1, false
	}
	open := map[[3]int]*Entry{} // (kind, src, dst) -> the first open op of a rank
	owner := map[[3]int]*member{}
	for _, m := range ms {
		for _, e := range m.p2p {
			if e.State == "completed" {
				continue
			}
			sm := p2pName.FindStringSubmatch(e.Op)
			if sm == nil {
				continue
			}
			src, _ := strconv.Atoi(sm[2])
			dst, _ := strconv.Atoi(sm[3])
			kind := 0
			if sm[1] == "recv" {
				kind = 1
			}
			k := [3]int{kind, src, dst}
			if _, ok := open[k]; !ok {
				open[k] = e
				owner[k] = m
			}
		}
	}
	var out []Problem
	keys := make([][3]int, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		if a[1] != b[1] {
			return a[1] < b[1]
		}
		return a[2] < b[2]
	})
	for _, k := range keys {
		peerLocal := k[2]
		if k[0] == 1 {
			peerLocal = k[1]
		}
		peer, ok := global(peerLocal)
		if !ok {
			continue
		}
		if _, has := byRank[peer]; !has {
			continue // its dump is not here: a gap, reported as such
		}
		if _, ok := open[[3]int{1 - k[0], k[1], k[2]}]; ok {
			continue // both sides posted: a stall, not a missing peer
		}
		e, m := open[k], owner[k]
		peerOp := "recv"
		if k[0] == 1 {
			peerOp = "send"
		}
		c := *e
		p := Problem{Kind: PeerMissing, Group: g.Name, GroupDesc: desc, Seq: e.P2PSeq, Op: e.Op,
			Ranks: []int{peer}, Others: []int{m.rank}, Waiting: &c, Time: e.Created, LastRank: peer,
			Detail: fmt.Sprintf("rank %d posted %s and rank %d never posted the matching %s", m.rank, shortOp(e.Op), peer, peerOp)}
		for _, pm := range ms {
			if pm.rank == peer {
				p.Source = pm.source
				if len(pm.all) > 0 {
					l := *pm.all[len(pm.all)-1]
					p.Last = &l
				}
			}
		}
		out = append(out, p)
	}
	return out
}
