package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coroner-dev/coroner/analyze"
)

// TestRootCauseJSON: the root cause is its finding plus the symptoms count and confidence, written with the
// contract's names and order (findingId for the id; no layer, count or secondaryOf), and
// read back into the same finding.
func TestRootCauseJSON(t *testing.T) {
	tm := time.Date(2026, 3, 14, 10, 2, 11, 0, time.UTC)
	rc := &RootCause{Finding: Finding{ID: "f3", RuleID: "cuda-oom/torch-alloc", Category: analyze.CategoryCUDAOOM,
		Severity: analyze.SeverityCritical, Layer: analyze.LayerExecution, Title: "CUDA out of memory", Fault: analyze.FaultUser,
		Retry: analyze.RetryPermanent, Pod: "w-4", Container: "pytorch", Time: &tm, Count: 2,
		Evidence:    []Evidence{{Source: "log", File: "logs/ml/w-4/pytorch.log", Line: 56, Text: "in <module>"}},
		Explanation: "e", Remediation: "r"}, Symptoms: 7, Confidence: analyze.ConfidenceHigh}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		RootCause *RootCause `json:"rootCause"`
	}{rc}); err != nil {
		t.Fatal(err)
	}
	want := `{"rootCause":{"findingId":"f3","category":"cuda-oom","ruleId":"cuda-oom/torch-alloc","title":"CUDA out of memory",` +
		`"severity":"critical","fault":"user","retry":"permanent","pod":"w-4","container":"pytorch","time":"2026-03-14T10:02:11Z",` +
		`"evidence":[{"source":"log","file":"logs/ml/w-4/pytorch.log","line":56,"text":"in <module>"}],"explanation":"e","remediation":"r","symptoms":7,"confidence":"high"}}` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	escaped, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(escaped), `in \u003cmodule\u003e`) {
		t.Errorf("json.Marshal escapes HTML characters as for any value: %s", escaped)
	}
	var back RootCause
	if err := json.Unmarshal(buf.Bytes()[len(`{"rootCause":`):buf.Len()-2], &back); err != nil {
		t.Fatal(err)
	}
	rc.Layer, rc.Count = "", 0 // not part of the root cause object
	if diff := cmp.Diff(rc, &back); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
