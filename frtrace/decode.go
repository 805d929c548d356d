// Package frtrace reads PyTorch's NCCL Flight Recorder dumps and matches them across ranks.
//
// A dump is the ring buffer of the collectives one rank enqueued (TORCH_NCCL_TRACE_BUFFER_SIZE,
// TORCH_FR_BUFFER_SIZE), written per rank on a watchdog timeout or on request, as a pickle
// (torch's own pickler, protocol 2) or as its JSON twin (dump_json). Decode reads both, every
// layout from the bare list of early 2024 to version "2.10"; Match lines the ranks' buffers up
// as torch's tools/flight_recorder (fr_trace) does and says which rank never entered the
// collective the others wait in, which collective every rank entered and none completed (a
// network or GPU stall, which fr_trace reports as matching), and which collectives disagree in
// operation, size or dtype. The format facts come from PyTorch's source:
// torch/csrc/distributed/c10d/FlightRecorderDetail.hpp (getCollectiveTrace, getPgConfig,
// getPgStatus, dump_json), FlightRecorder.hpp and the older TraceUtils.h (the key names and
// version_val), and tools/flight_recorder/components (builder.py, utils.py: the matching).
package frtrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/internal/pickle"
)

// Dump is one rank's flight recorder dump.
type Dump struct {
	// Format is "pickle" or "json".
	Format string
	// Version is the dump's version ("2.4", "2.10"); "" for the bare list of entries written
	// before the dump had one.
	Version string
	// CommLibVersion is the NCCL version (nccl_version, later comm_lib_version).
	CommLibVersion string
	// Groups are the process groups the rank knew (pg_config), sorted by name.
	Groups []Group
	// Status is the last enqueued, started and completed collective of each group
	// (pg_status), sorted by pg id.
	Status []Status
	// Entries are the ring buffer, oldest first.
	Entries []Entry
}

// Group is a process group: its name (the pg guid, "0" for the default group), its
// description ("default_pg", "TP"...), and its members' global ranks in group-rank order.
type Group struct {
	Name, Desc string
	Ranks      []int
}

// Status is a group's pg_status: sequence numbers of collectives (-1: not in the dump).
type Status struct {
	PGID                                     string
	LastEnqueued, LastStarted, LastCompleted int64
}

// Entry is one collective or point-to-point operation in the buffer.
type Entry struct {
	RecordID int64
	PGID     int64
	// Group and GroupDesc are process_group's name and description.
	Group, GroupDesc string
	// CollectiveSeq counts the group's collectives (one per coalesced batch), P2PSeq its
	// point-to-point operations, OpID every operation.
	CollectiveSeq, P2PSeq, OpID int64
	// Op is the profiling name: "nccl:all_reduce", "nccl:send 0->1", "nccl:coalesced".
	Op                        string
	InputSizes, OutputSizes   [][]int64
	InputDtypes, OutputDtypes []string
	// State is scheduled, started or completed.
	State   string
	Retired bool
	// TimeoutMS is the collective's timeout; 0 when the dump does not say.
	TimeoutMS int64
	IsP2P     bool
	// Created, Started and Completed are Unix nanoseconds; 0 when not reached or not said.
	Created, Started, Completed int64
	// DurationMS is the kernel's duration when timing was on; -1 otherwise.
	DurationMS float64
	Frames     []Frame
	Thread     string
}

// Frame is a Python (or C++) stack frame of the call that enqueued the entry, innermost first.
type Frame struct {
	Name, File string
	Line       int64
}

// String renders a frame as the report shows it: "train_step (train.py:211)".
func (f Frame) String() string {
	return fmt.Sprintf("%s (%s:%d)", f.Name, f.File, f.Line)
}

// Limits bound a decode: the file, and the values one dump may hold.
type Limits struct {
	Pickle     pickle.Limits
	MaxEntries int
	MaxFrames  int
	MaxGroups  int
	MaxRanks   int
}

// DefaultLimits fit the largest buffers torch is run with.
func DefaultLimits() Limits {
	return Limits{Pickle: pickle.DefaultLimits(), MaxEntries: 200_000, MaxFrames: 256, MaxGroups: 100_000, MaxRanks: 1 << 20}
}

// RankFromName reads the global rank a dump file is named with: the digits that end its name
// (torch writes <prefix><rank>), after a ".json", ".pkl" or ".pickle" a user added. A host
// name earlier in the name does not matter.
func RankFromName(name string) (int, bool) {
	base := path.Base(name)
	for _, ext := range []string{".json", ".pkl", ".pickle"} {
		base = strings.TrimSuffix(base, ext)
	}
	i := len(base)
	for i > 0 && base[i-1] >= '0' && base[i-1] <= '9' {
		i--
	}
	if i == len(base) || len(base)-i > 7 {
		return -1, false
	}
	n, err := strconv.Atoi(base[i:])
	return n, err == nil
}

// Decode reads a dump: a pickle or its JSON twin.
func Decode(data []byte, lim Limits) (*Dump, error) {
	var root any
	format := "pickle"
	if pickle.IsPickle(data) {
		v, err := pickle.Decode(data, lim.Pickle)
		if err != nil {
			return nil, err
		}
		root = v
	} else {
		format = "json"
		if lim.Pickle.MaxBytes > 0 && len(data) > lim.Pickle.MaxBytes {
			return nil, fmt.Errorf("json: %d bytes, over the limit of %d", len(data), lim.Pickle.MaxBytes)
		}
		if err := checkJSONDepth(data, lim.Pickle.MaxDepth); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		root = fromJSON(v)
	}
	c := &conv{lim: lim}
	d, err := c.dump(root)
	if err != nil {
		return nil, err
	}
	d.Format = format
	return d, nil
}

// checkJSONDepth refuses JSON nested deeper than max before it is decoded.
func checkJSONDepth(data []byte, max int) error {
	if max <= 0 {
		return nil
	}
	depth, inStr, esc := 0, false, false
	for _, c := range data {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return fmt.Errorf("json: nested deeper than %d", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// fromJSON gives decoded JSON the pickle's value types.
func fromJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := &pickle.Dict{}
		for _, k := range keys {
			d.Keys = append(d.Keys, k)
			d.Values = append(d.Values, fromJSON(x[k]))
		}
		return d
	case []any:
		l := &pickle.List{Items: make([]any, len(x))}
		for i, it := range x {
			l.Items[i] = fromJSON(it)
		}
		return l
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

type conv struct {
	lim Limits
}

var errShape = errors.New("not a flight recorder dump")

func (c *conv) dump(root any) (*Dump, error) {
	d := &Dump{}
	switch r := root.(type) {
	case *pickle.List:
		// Before the dump had a version (early 2024), it was the list of entries.
		return d, c.entries(d, r)
	case *pickle.Dict:
		v, _ := r.Get("version")
		d.Version = str(v)
		if v, ok := r.Get("comm_lib_version"); ok {
			d.CommLibVersion = str(v)
		} else if v, ok := r.Get("nccl_version"); ok {
			d.CommLibVersion = str(v)
		}
		if v, ok := r.Get("pg_config"); ok {
			if err := c.groups(d, v); err != nil {
				return nil, err
			}
		}
		if v, ok := r.Get("pg_status"); ok {
			c.status(d, v)
		}
		if v, ok := r.Get("entries"); ok {
			l, ok := v.(*pickle.List)
			if !ok {
				return nil, fmt.Errorf("%w: entries is %s", errShape, typeName(v))
			}
			if err := c.entries(d, l); err != nil {
				return nil, err
			}
		}
		_, hasEntries := r.Get("entries")
		_, hasConfig := r.Get("pg_config")
		if d.Version == "" && !hasEntries && !hasConfig {
			return nil, fmt.Errorf("%w: no version, entries or pg_config", errShape)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: the top level is %s", errShape, typeName(root))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case *pickle.Dict:
		return "a dict"
	case *pickle.List:
		return "a list"
	case pickle.Tuple:
		return "a tuple"
	case string:
		return "a string"
	case int64:
		return "an int"
	case float64:
		return "a float"
	case bool:
		return "a bool"
	}
	return fmt.Sprintf("%T", v)
}

func (c *conv) groups(d *Dump, v any) error {
	m, ok := v.(*pickle.Dict)
	if !ok {
		return fmt.Errorf("%w: pg_config is %s", errShape, typeName(v))
	}
	if c.lim.MaxGroups > 0 && len(m.Keys) > c.lim.MaxGroups {
		return fmt.Errorf("pg_config: more than %d groups", c.lim.MaxGroups)
	}
	for i, k := range m.Keys {
		g := Group{Name: str(k)}
		if info, ok := m.Values[i].(*pickle.Dict); ok {
			if n, ok := info.Get("name"); ok && str(n) != "" {
				g.Name = str(n)
			}
			desc, _ := info.Get("desc")
			g.Desc = str(desc)
			ranks, _ := info.Get("ranks")
			g.Ranks = c.ranks(ranks)
		}
		d.Groups = append(d.Groups, g)
	}
	sort.SliceStable(d.Groups, func(i, j int) bool { return d.Groups[i].Name < d.Groups[j].Name })
	return nil
}

// ranks reads a group's members: torch writes the string "[0, 1, 2]" (ranks_str); a list is
// read too.
func (c *conv) ranks(v any) []int {
	var out []int
	add := func(n int64) bool {
		if n < 0 || n > math.MaxInt32 || c.lim.MaxRanks > 0 && len(out) >= c.lim.MaxRanks {
			return false
		}
		out = append(out, int(n))
		return true
	}
	switch x := v.(type) {
	case string:
		for _, f := range strings.FieldsFunc(x, func(r rune) bool { return r == '[' || r == ']' || r == ',' || r == ' ' }) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || !add(n) {
				return nil
			}
		}
	case *pickle.List:
		for _, it := range x.Items {
			n, ok := it.(int64)
			if !ok || !add(n) {
				return nil
			}
		}
	}
	return out
}

func (c *conv) status(d *Dump, v any) {
	m, ok := v.(*pickle.Dict)
	if !ok {
		return
	}
	for i, k := range m.Keys {
		if c.lim.MaxGroups > 0 && i >= c.lim.MaxGroups {
			break
		}
		s := Status{PGID: str(k), LastEnqueued: -1, LastStarted: -1, LastCompleted: -1}
		if st, ok := m.Values[i].(*pickle.Dict); ok {
			s.LastEnqueued = num(st, "last_enqueued_collective", -1)
			s.LastStarted = num(st, "last_started_collective", -1)
			s.LastCompleted = num(st, "last_completed_collective", -1)
		}
		d.Status = append(d.Status, s)
	}
	sort.SliceStable(d.Status, func(i, j int) bool {
		a, ea := strconv.Atoi(d.Status[i].PGID)
		b, eb := strconv.Atoi(d.Status[j].PGID)
		if ea == nil && eb == nil {
			return a < b
		}
		return d.Status[i].PGID < d.Status[j].PGID
	})
}

func (c *conv) entries(d *Dump, l *pickle.List) error {
	if c.lim.MaxEntries > 0 && len(l.Items) > c.lim.MaxEntries {
		return fmt.Errorf("more than %d entries", c.lim.MaxEntries)
	}
	for i, it := range l.Items {
		m, ok := it.(*pickle.Dict)
		if !ok {
			return fmt.Errorf("%w: entry %d is %s", errShape, i, typeName(it))
		}
		d.Entries = append(d.Entries, c.entry(m))
	}
	return nil
}

func (c *conv) entry(m *pickle.Dict) Entry {
	e := Entry{
		RecordID:      num(m, "record_id", -1),
		PGID:          num(m, "pg_id", -1),
		CollectiveSeq: num(m, "collective_seq_id", -1),
		P2PSeq:        num(m, "p2p_seq_id", -1),
		OpID:          num(m, "op_id", -1),
		TimeoutMS:     num(m, "timeout_ms", 0),
		Created:       num(m, "time_created_ns", 0),
		Started:       num(m, "time_discovered_started_ns", 0),
		Completed:     num(m, "time_discovered_completed_ns", 0),
		DurationMS:    -1,
	}
	if e.CollectiveSeq < 0 {
		// Before collective and p2p operations were counted apart, one seq_id counted both.
		e.CollectiveSeq = num(m, "seq_id", -1)
	}
	if v, ok := m.Get("duration_ms"); ok {
		switch x := v.(type) {
		case float64:
			e.DurationMS = x
		case int64:
			e.DurationMS = float64(x)
		}
	}
	if v, ok := m.Get("profiling_name"); ok {
		e.Op = str(v)
	}
	if v, ok := m.Get("state"); ok {
		e.State = str(v)
	}
	if v, ok := m.Get("thread_name"); ok {
		e.Thread = str(v)
	}
	if v, ok := m.Get("retired"); ok {
		e.Retired, _ = v.(bool)
	}
	if v, ok := m.Get("is_p2p"); ok {
		e.IsP2P, _ = v.(bool)
	} else {
		e.IsP2P = isP2POp(e.Op)
	}
	if v, ok := m.Get("process_group"); ok {
		switch x := v.(type) {
		case pickle.Tuple:
			if len(x) > 0 {
				e.Group = str(x[0])
			}
			if len(x) > 1 {
				e.GroupDesc = str(x[1])
			}
		case *pickle.List: // the JSON twin writes the tuple as an array
			if len(x.Items) > 0 {
				e.Group = str(x.Items[0])
			}
			if len(x.Items) > 1 {
				e.GroupDesc = str(x.Items[1])
			}
		case string:
			e.Group = x
		}
	}
	if e.Group == "" && e.PGID >= 0 {
		e.Group = strconv.FormatInt(e.PGID, 10)
	}
	e.InputSizes = sizes(m, "input_sizes")
	e.OutputSizes = sizes(m, "output_sizes")
	e.InputDtypes = strs(m, "input_dtypes")
	e.OutputDtypes = strs(m, "output_dtypes")
	if v, ok := m.Get("frames"); ok {
		if l, ok := v.(*pickle.List); ok {
			for _, f := range l.Items {
				if c.lim.MaxFrames > 0 && len(e.Frames) >= c.lim.MaxFrames {
					break
				}
				fd, ok := f.(*pickle.Dict)
				if !ok {
					continue
				}
				name, _ := fd.Get("name")
				file, _ := fd.Get("filename")
				e.Frames = append(e.Frames, Frame{Name: str(name), File: str(file), Line: num(fd, "line", 0)})
			}
		}
	}
	return e
}

// isP2POp tells a point-to-point operation by its profiling name (dumps before is_p2p).
func isP2POp(op string) bool {
	return strings.Contains(op, "send") || strings.Contains(op, "recv")
}

// maxDims bounds the sizes kept of one entry: they are compared, not shown in full.
const maxDims = 64

func sizes(m *pickle.Dict, key string) [][]int64 {
	v, _ := m.Get(key)
	l, ok := v.(*pickle.List)
	if !ok {
		return nil
	}
	var out [][]int64
	for _, it := range l.Items {
		if len(out) >= maxDims {
			break
		}
		var dims []int64
		var items []any
		switch x := it.(type) {
		case *pickle.List:
			items = x.Items
		case pickle.Tuple:
			items = x
		}
		for _, d := range items {
			if n, ok := d.(int64); ok && len(dims) < maxDims {
				dims = append(dims, n)
			}
		}
		out = append(out, dims)
	}
	return out
}

func strs(m *pickle.Dict, key string) []string {
	v, _ := m.Get(key)
	l, ok := v.(*pickle.List)
	if !ok {
		return nil
	}
	var out []string
	for _, it := range l.Items {
		if len(out) >= maxDims {
			break
		}
		out = append(out, str(it))
	}
	return out
}

// maxText bounds a string kept from a dump (a name, a file, an op).
const maxText = 512

func str(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	}
	if len(s) > maxText {
		s = s[:maxText]
	}
	return s
}

// num reads an integer field: an int, or the string the JSON twin writes in pg_status; None
// (and the JSON twin's 0 for "none") give def for times only through the caller.
func num(m *pickle.Dict, key string, def int64) int64 {
	v, ok := m.Get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		if x >= math.MinInt64 && x <= math.MaxInt64 {
			return int64(x)
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n
		}
	}
	return def
}
