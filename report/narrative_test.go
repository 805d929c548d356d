package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPromptPartJSON: a part's kind is its name in the JSON contract, read back the same; an
// unknown name is an error, not a zero kind.
func TestPromptPartJSON(t *testing.T) {
	parts := []PromptPart{{Kind: PartFinding, Ref: "f1", Bytes: 10}, {Kind: PartLog, Ref: "logs/a.log:1-3", Bytes: 20},
		{Kind: PartEvent, Ref: "Pod ml/a OOMKilling", Bytes: 5}, {Kind: PartTimeline, Ref: "2026-03-14 10:00:00.000Z a", Bytes: 6}}
	data, err := json.Marshal(parts)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"finding","ref":"f1","bytes":10},{"kind":"log","ref":"logs/a.log:1-3","bytes":20},` +
		`{"kind":"event","ref":"Pod ml/a OOMKilling","bytes":5},{"kind":"timeline","ref":"2026-03-14 10:00:00.000Z a","bytes":6}]`
	if string(data) != want {
		t.Fatalf("got %s\nwant %s", data, want)
	}
	var back []PromptPart
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parts, back); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	err = json.Unmarshal([]byte(`{"kind":"findings","ref":"f1"}`), new(PromptPart))
	if err == nil || !strings.Contains(err.Error(), `unknown prompt part kind "findings"`) {
		t.Fatalf("an unknown kind: got %v", err)
	}
	if _, err := json.Marshal(PromptPart{Ref: "no kind"}); err == nil {
		t.Fatal("a part without a kind was written")
	}
}

// TestSummarizeParts: findings and log windows one by one in the order chosen, events and
// timeline entries counted, each line with the bytes it stands for.
func TestSummarizeParts(t *testing.T) {
	parts := []PromptPart{
		{Kind: PartFinding, Ref: "f1", Bytes: 100},
		{Kind: PartTimeline, Ref: "t1", Bytes: 7},
		{Kind: PartEvent, Ref: "e1", Bytes: 30},
		{Kind: PartLog, Ref: "logs/a.log:1-3", Bytes: 200},
		{Kind: PartEvent, Ref: "e2", Bytes: 40},
		{Kind: PartFinding, Ref: "f2,f3", Bytes: 50},
	}
	got := SummarizeParts(parts)
	want := []PartSummary{
		{Kind: PartFinding, Ref: "f1", Count: 1, Bytes: 100},
		{Kind: PartLog, Ref: "logs/a.log:1-3", Count: 1, Bytes: 200},
		{Kind: PartFinding, Ref: "f2,f3", Count: 1, Bytes: 50},
		{Kind: PartEvent, Count: 2, Bytes: 70},
		{Kind: PartTimeline, Count: 1, Bytes: 7},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, s.String())
	}
	wantLines := []string{"finding f1", "log logs/a.log:1-3", "finding f2,f3", "2 warning events", "1 timeline entry"}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := sentParts(parts); got[3] != "2 warning events (70 bytes)" {
		t.Fatalf("Markdown line: %q", got[3])
	}
	if SummarizeParts(nil) != nil {
		t.Fatal("nothing sent, nothing to say")
	}
}

// TestNarrativePartsRender: the HTML table names each part's kind; the Markdown list
// summarises them.
func TestNarrativePartsRender(t *testing.T) {
	r := hostileReport("a", "b", "c")
	r.LLM = &Narrative{Model: "m", Solution: []string{}, Prompt: PromptInfo{Template: "pytorchjob", Included: []PromptPart{
		{Kind: PartFinding, Ref: "f1", Bytes: 100}, {Kind: PartEvent, Ref: "Pod ml/a OOMKilling", Bytes: 30},
		{Kind: PartEvent, Ref: "Pod ml/b OOMKilling", Bytes: 40}}, Omitted: 2}}
	var html, md strings.Builder
	if err := Render(&html, r, "html"); err != nil {
		t.Fatal(err)
	}
	if err := Render(&md, r, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr><td>finding</td><td class="loc">f1</td><td class="n">100</td></tr>`, `<tr><td>event</td>`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
	for _, want := range []string{"**Sent to the model** (3 parts of the bundle, 2 left out to fit):\n\n- finding f1 \\(100 bytes\\)\n- 2 warning events \\(70 bytes\\)\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown report lacks %q:\n%s", want, md.String())
		}
	}
}
