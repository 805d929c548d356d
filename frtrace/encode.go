package frtrace

import (
	"encoding/json"
	"strconv"
)

// EncodeJSON writes a dump as torch's JSON twin does (dump_json: pg_config, pg_status with
// string values, entries with 0 for a time not reached), plus each entry's frames, which
// dump_json leaves out: what coroner read of a pickle, as text that can be redacted and read
// back by Decode.
func EncodeJSON(d *Dump) ([]byte, error) {
	type frame struct {
		Name     string `json:"name"`
		Filename string `json:"filename"`
		Line     int64  `json:"line"`
	}
	type entry struct {
		RecordID      int64     `json:"record_id"`
		PGID          int64     `json:"pg_id"`
		ProcessGroup  [2]string `json:"process_group"`
		CollectiveSeq int64     `json:"collective_seq_id"`
		P2PSeq        int64     `json:"p2p_seq_id"`
		OpID          int64     `json:"op_id"`
		Op            string    `json:"profiling_name"`
		Created       int64     `json:"time_created_ns"`
		DurationMS    *float64  `json:"duration_ms,omitempty"`
		InputSizes    [][]int64 `json:"input_sizes"`
		InputDtypes   []string  `json:"input_dtypes"`
		OutputSizes   [][]int64 `json:"output_sizes"`
		OutputDtypes  []string  `json:"output_dtypes"`
		State         string    `json:"state"`
		Started       int64     `json:"time_discovered_started_ns"`
		Completed     int64     `json:"time_discovered_completed_ns"`
		Retired       bool      `json:"retired"`
		TimeoutMS     int64     `json:"timeout_ms"`
		IsP2P         bool      `json:"is_p2p"`
		Thread        string    `json:"thread_name,omitempty"`
		Frames        []frame   `json:"frames"`
	}
	type group struct {
		Name  string `json:"name"`
		Desc  string `json:"desc"`
		Ranks string `json:"ranks"`
	}
	out := struct {
		Version        string                       `json:"version"`
		CommLibVersion string                       `json:"comm_lib_version"`
		PGConfig       map[string]group             `json:"pg_config"`
		PGStatus       map[string]map[string]string `json:"pg_status"`
		Entries        []entry                      `json:"entries"`
	}{Version: d.Version, CommLibVersion: d.CommLibVersion, PGConfig: map[string]group{}, PGStatus: map[string]map[string]string{}, Entries: []entry{}}
	for _, g := range d.Groups {
		b, _ := json.Marshal(g.Ranks)
		ranks := string(b)
		if g.Ranks == nil {
			ranks = "[]"
		}
		out.PGConfig[g.Name] = group{Name: g.Name, Desc: g.Desc, Ranks: spaced(ranks)}
	}
	for _, s := range d.Status {
		out.PGStatus[s.PGID] = map[string]string{
			"last_enqueued_collective":  strconv.FormatInt(s.LastEnqueued, 10),
			"last_started_collective":   strconv.FormatInt(s.LastStarted, 10),
			"last_completed_collective": strconv.FormatInt(s.LastCompleted, 10),
		}
	}
	for _, e := range d.Entries {
		o := entry{RecordID: e.RecordID, PGID: e.PGID, ProcessGroup: [2]string{e.Group, e.GroupDesc}, CollectiveSeq: e.CollectiveSeq,
			P2PSeq: e.P2PSeq, OpID: e.OpID, Op: e.Op, Created: e.Created, InputSizes: e.InputSizes, InputDtypes: e.InputDtypes,
			OutputSizes: e.OutputSizes, OutputDtypes: e.OutputDtypes, State: e.State, Started: e.Started, Completed: e.Completed,
			Retired: e.Retired, TimeoutMS: e.TimeoutMS, IsP2P: e.IsP2P, Thread: e.Thread, Frames: []frame{}}
		if e.DurationMS >= 0 {
			v := e.DurationMS
			o.DurationMS = &v
		}
		for _, f := range e.Frames {
			o.Frames = append(o.Frames, frame{f.Name, f.File, f.Line})
		}
		out.Entries = append(out.Entries, o)
	}
	// One field a line: redaction reads text by lines, and a dump is megabytes.
	return json.MarshalIndent(out, "", " ")
}

// spaced writes ranks as torch's ranks_str does: "[0, 1, 2]".
func spaced(s string) string {
	b := make([]byte, 0, len(s)+len(s)/2)
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == ',' {
			b = append(b, ' ')
		}
	}
	return string(b)
}
