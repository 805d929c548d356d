package bundle

import (
	"bytes"
	"fmt"
	"strings"
)

// FlightRecorderDir is the part of a bundle that holds PyTorch's NCCL Flight Recorder dumps:
// flightrecorder/<namespace>/<pod>/<file>, each file as the rank wrote it (<prefix><rank>).
// Plain inputs that are dumps go to flightrecorder/_/_/<file name>.
const FlightRecorderDir = "flightrecorder/"

// FlightRecord is one flight recorder dump of a bundle.
type FlightRecord struct {
	Path      string
	Namespace string
	// Pod is the pod it was read from ("_" for a plain input).
	Pod string
	// Name is the file's name as the rank wrote it.
	Name string
	Size int64
}

// FlightRecords lists the flight recorder dumps of a bundle, in path order. Files under
// flightrecorder/ at another depth are skipped with a warning.
func FlightRecords(b *Bundle) ([]FlightRecord, []string) {
	var out []FlightRecord
	var warnings []string
	for _, f := range b.Files {
		if !strings.HasPrefix(f.Path, FlightRecorderDir) {
			continue
		}
		parts := strings.Split(f.Path, "/")
		if len(parts) != 4 {
			warnings = append(warnings, fmt.Sprintf("%s: not at %s<namespace>/<pod>/<file>; skipped", f.Path, FlightRecorderDir))
			continue
		}
		out = append(out, FlightRecord{Path: f.Path, Namespace: parts[1], Pod: parts[2], Name: parts[3], Size: f.Size})
	}
	return out, warnings
}

// IsFlightRecord reports whether the head of a file is a flight recorder dump, by content: a
// protocol 2 pickle (what torch's pickler writes), or a JSON object with a dump's keys
// (dump_json: nlohmann writes them sorted, comm_lib_version or entries first).
func IsFlightRecord(head []byte) bool {
	if len(head) >= 2 && head[0] == 0x80 && head[1] == 2 {
		return true
	}
	h := bytes.TrimLeft(head, " \t\r\n")
	if len(h) == 0 || h[0] != '{' {
		return false
	}
	if len(h) > 4096 {
		h = h[:4096]
	}
	for _, k := range []string{`"comm_lib_version"`, `"nccl_version"`, `"pg_config"`, `"pg_status"`, `"profiling_name"`} {
		if bytes.Contains(h, []byte(k)) {
			return true
		}
	}
	return false
}
