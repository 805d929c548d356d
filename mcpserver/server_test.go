package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/report"
)

const sample = "../samples/pytorchjob-cuda-oom-rank"

// client is an SDK client session with the server of paths, over the SDK's in-memory
// transport, and the schemas of its tools to check every answer against.
type client struct {
	t       *testing.T
	cs      *mcp.ClientSession
	srv     *Server
	schemas map[string]*jsonschema.Schema
}

func testOptions(t *testing.T) Options {
	o := diagnose.DefaultOptions()
	o.Version = "test"
	o.Cache = &index.Cache{Dir: t.TempDir()}
	return Options{Diagnose: o}
}

func connect(t *testing.T, paths []string, opts Options) *client {
	t.Helper()
	ctx := context.Background()
	srv, err := New(ctx, paths, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	c := &client{t: t, cs: cs, srv: srv, schemas: map[string]*jsonschema.Schema{}}
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		c.schemas[tool.Name] = compileSchema(t, tool.Name+".out", tool.OutputSchema)
	}
	return c
}

func compileSchema(t *testing.T, name string, s any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(name, doc), name)
	sch, err := c.Compile(name)
	require.NoError(t, err, "%s: %s", name, b)
	return sch
}

// call calls a tool that must answer, checks its answer against the tool's output schema and
// decodes it into out; it returns the answer's text as a client sees it.
func (c *client) call(name string, args any, out any) string {
	c.t.Helper()
	res, text := c.try(name, args)
	require.False(c.t, res.IsError, "%s(%v): %s", name, args, text)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(c.t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(c.t, err)
	require.NoError(c.t, c.schemas[name].Validate(inst), "%s's answer against its output schema", name)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(b, out))
	}
	return text
}

// fail calls a tool that must fail with a tool error (never a protocol error) and returns
// its message.
func (c *client) fail(name string, args any) string {
	c.t.Helper()
	res, text := c.try(name, args)
	require.True(c.t, res.IsError, "%s(%v) should fail: %s", name, args, text)
	return text
}

func (c *client) try(name string, args any) (*mcp.CallToolResult, string) {
	c.t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(c.t, err, "%s: a protocol error", name)
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

var toolNames = []string{"diagnosis", "diff", "events", "finding", "findings", "list_bundles", "log_window", "open_bundle", "resources", "rules", "search", "timeline"}

// TestToolsAreReadOnlyWithValidSchemas: every tool says it only reads a closed world, and its
// input and output schemas are valid JSON Schemas of objects, with a description for every
// argument.
func TestToolsAreReadOnlyWithValidSchemas(t *testing.T) {
	c := connect(t, []string{sample}, testOptions(t))
	tools, err := c.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		require.NotNil(t, a, tool.Name)
		require.True(t, a.ReadOnlyHint, tool.Name)
		require.NotNil(t, a.OpenWorldHint, tool.Name)
		require.False(t, *a.OpenWorldHint, tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
		for what, s := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			require.NotNil(t, s, "%s has no %s schema", tool.Name, what)
			compileSchema(t, tool.Name+"."+what, s)
			require.Equal(t, "object", s.(map[string]any)["type"], "%s's %s schema", tool.Name, what)
		}
		props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
		for arg, p := range props {
			require.NotEmpty(t, p.(map[string]any)["description"], "%s's argument %s has no description", tool.Name, arg)
		}
	}
	sort.Strings(names)
	require.Equal(t, toolNames, names)

	// A call whose arguments do not fit the schema is a tool error, before the handler runs.
	require.Contains(t, c.fail("log_window", map[string]any{"pod": "x", "line": "ten"}), "line")
	require.Contains(t, c.fail("findings", map[string]any{"severity": "fatal"}), "fatal")
}

// TestDiagnosisIsTheReports: the diagnosis, findings, one finding, the timeline and the events
// say what the report of diagnose.Run (coroner analyze --format json) says of the same bundle,
// in the same names, and twice the same bytes.
func TestDiagnosisIsTheReports(t *testing.T) {
	opts := testOptions(t)
	c := connect(t, []string{sample}, opts)
	d, err := diagnose.Run(context.Background(), diagnose.Input{Paths: []string{sample}}, opts.Diagnose)
	require.NoError(t, err)
	defer d.Close()
	var js bytes.Buffer
	require.NoError(t, report.RenderJSON(&js, d.Report))
	var want struct {
		Verdict, VerdictReason string
		RootCause              map[string]any
		Findings               []map[string]any
		Timeline               []map[string]any
		Events                 []map[string]any
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &want))
	require.NotNil(t, want.RootCause)

	var got struct {
		Bundle, Verdict, VerdictReason string
		RootCause                      map[string]any
		Findings                       int
		Failures                       []FindingSummary
	}
	text := c.call("diagnosis", map[string]any{}, &got)
	require.Equal(t, text, c.call("diagnosis", map[string]any{"bundle": got.Bundle}, nil), "the same bundle, the same bytes")
	require.Equal(t, "pytorchjob-cuda-oom-rank", got.Bundle)
	require.Equal(t, want.Verdict, got.Verdict)
	require.Equal(t, want.VerdictReason, got.VerdictReason)
	require.Equal(t, want.RootCause, got.RootCause)
	require.Equal(t, "cuda-oom", got.RootCause["category"])
	require.Equal(t, len(want.Findings), got.Findings)
	require.True(t, got.Failures[0].RootCause)

	var all []FindingSummary
	for cur := ""; ; {
		var pg FindingsOut
		c.call("findings", map[string]any{"limit": 3, "cursor": cur}, &pg)
		all = append(all, pg.Findings...)
		if cur = pg.NextCursor; cur == "" {
			require.Empty(t, pg.Note)
			break
		}
		require.Len(t, pg.Findings, 3)
		require.Contains(t, pg.Note, "ask for the next page")
	}
	require.Len(t, all, len(want.Findings))
	for i, f := range all {
		require.Equal(t, want.Findings[i]["id"], f.ID)
		require.Equal(t, want.Findings[i]["title"], f.Title)
		require.Equal(t, want.Findings[i]["severity"], f.Severity)
	}
	var crit FindingsOut
	c.call("findings", map[string]any{"severity": "error", "pod": "*worker-4"}, &crit)
	require.NotEmpty(t, crit.Findings)
	for _, f := range crit.Findings {
		require.Equal(t, "train-job-worker-4", f.Pod)
		require.Contains(t, []string{"error", "critical"}, f.Severity)
	}

	var one struct {
		Finding   map[string]any
		RootCause bool
	}
	c.call("finding", map[string]any{"id": got.RootCause["findingId"]}, &one)
	require.True(t, one.RootCause)
	for _, f := range want.Findings {
		if f["id"] == got.RootCause["findingId"] {
			require.Equal(t, f, one.Finding, "the finding as the report has it, evidence windows and all")
		}
	}
	require.Contains(t, c.fail("finding", map[string]any{"id": "f999"}), "no finding \"f999\"")

	var tl TimelineOut
	c.call("timeline", map[string]any{"limit": 1000}, &tl)
	require.Len(t, tl.Entries, len(want.Timeline))
	require.Equal(t, want.Timeline[0]["text"], tl.Entries[0].Text)
	var tw TimelineOut
	c.call("timeline", map[string]any{"pod": "*worker-4", "from": "10:02", "to": "10:03"}, &tw)
	require.NotEmpty(t, tw.Entries)
	for _, e := range tw.Entries {
		require.True(t, e.Pod == "" || e.Pod == "train-job-worker-4", e.Pod)
		require.True(t, e.Time >= "2026-03-14T10:02" && e.Time < "2026-03-14T10:03:01", e.Time)
	}
	require.Contains(t, c.fail("timeline", map[string]any{"from": "yesterday"}), "from")

	var ev EventsOut
	c.call("events", map[string]any{"limit": 1000}, &ev)
	require.Len(t, ev.Events, len(want.Events))
	var warn EventsOut
	c.call("events", map[string]any{"type": "warning"}, &warn)
	for _, e := range warn.Events {
		require.Equal(t, "Warning", e.Type)
	}
}

// TestSearchPagesAndWindows: a search pages with cursors to the same hits as one big page; a
// cursor from another query is refused; a query that cannot be read is a tool error; a log
// window reads the lines around a hit.
func TestSearchPagesAndWindows(t *testing.T) {
	c := connect(t, []string{sample}, testOptions(t))
	pages := func(limit int) []Hit {
		var hits []Hit
		cur := ""
		for n := 0; ; n++ {
			var pg SearchOut
			c.call("search", map[string]any{"query": "NCCL", "limit": limit, "cursor": cur}, &pg)
			hits = append(hits, pg.Hits...)
			if cur = pg.NextCursor; cur == "" {
				require.Equal(t, len(hits), pg.Total)
				return hits
			}
			require.Less(t, n, 500)
		}
	}
	var whole SearchOut
	whole.Hits = pages(200)
	require.Greater(t, len(whole.Hits), 5)
	paged := pages(7)
	require.Equal(t, whole.Hits, paged)
	require.Contains(t, c.fail("search", map[string]any{"query": "timeout", "cursor": whole.Hits[0].Path + ".x"}), "not one this server gave")
	var first SearchOut
	c.call("search", map[string]any{"query": "NCCL", "limit": 2}, &first)
	require.Contains(t, c.fail("search", map[string]any{"query": "timeout", "limit": 2, "cursor": first.NextCursor}), "belongs to other arguments")
	require.Contains(t, c.fail("search", map[string]any{"query": "(NCCL"}), "query")
	require.Contains(t, c.fail("search", map[string]any{"query": "NCCL", "pod": "nosuchpod"}), "matches none")
	require.Contains(t, c.fail("search", map[string]any{}), "query or a regex")

	var oom SearchOut
	c.call("search", map[string]any{"query": `"CUDA out of memory"`, "pod": "*worker-4", "context": 2}, &oom)
	require.Len(t, oom.Hits, 1)
	h := oom.Hits[0]
	require.Equal(t, "train-job-worker-4", h.Pod)
	require.Len(t, h.Before, 2)
	var w WindowOut
	c.call("log_window", map[string]any{"pod": h.Pod, "container": h.Container, "line": h.Line, "before": 3, "after": 1}, &w)
	require.Len(t, w.Lines, 5)
	require.Equal(t, h.Line, w.Lines[3].Line)
	require.Equal(t, h.Text, w.Lines[3].Text)
	require.Equal(t, h.Before[1].Text, w.Lines[2].Text)
	c.call("log_window", map[string]any{"pod": h.Pod, "line": h.Line, "before": 0, "after": 0}, &w)
	require.Len(t, w.Lines, 1, "0 lines before and after: the line alone")
	c.call("log_window", map[string]any{"pod": h.Pod, "line": 1}, &w)
	require.Len(t, w.Lines, 11, "10 after by default, none before the first line")
	require.Contains(t, c.fail("log_window", map[string]any{"pod": h.Pod, "line": 100000}), "has")
	require.Contains(t, c.fail("log_window", map[string]any{"pod": "nope", "line": 1}), "train-job-worker-4/pytorch")
}

// TestAnswersAreBounded: with a small answer limit every list is cut by size, says so, and
// its cursors reach every item; no answer is much over the limit.
func TestAnswersAreBounded(t *testing.T) {
	opts := testOptions(t)
	opts.MaxBytes = 4 << 10
	c := connect(t, []string{sample}, opts)
	for _, q := range []struct {
		tool  string
		args  map[string]any
		items string
		total int
	}{
		{"findings", map[string]any{"limit": 500}, "findings", -1},
		{"timeline", map[string]any{"limit": 1000}, "entries", -1},
		{"search", map[string]any{"query": "step", "all": true, "limit": 200, "context": 3}, "hits", -1},
		{"rules", map[string]any{}, "rules", -1},
	} {
		n, truncated := 0, false
		cur := ""
		for {
			args := map[string]any{"cursor": cur}
			for k, v := range q.args {
				args[k] = v
			}
			var out map[string]any
			text := c.call(q.tool, args, &out)
			require.Less(t, len(text), opts.MaxBytes+maxLineBytes*4, "%s: an answer of %d bytes", q.tool, len(text))
			n += len(out[q.items].([]any))
			if out["truncated"] == true {
				truncated = true
				require.Contains(t, out["note"], "truncated at the 4 KiB answer limit")
			}
			cur, _ = out["nextCursor"].(string)
			if cur == "" {
				require.Equal(t, float64(n), out["total"], q.tool)
				break
			}
		}
		require.True(t, truncated, "%s was never cut by size", q.tool)
	}
}

// TestOpenOnlyUnderRoots: open_bundle opens bundles under a root (by the path list_bundles
// shows, or relative to the root) and refuses everything else: a path outside, a ".." out of
// the root, a link in the root that points outside, a device.
func TestOpenOnlyUnderRoots(t *testing.T) {
	rootDir, outside := t.TempDir(), t.TempDir()
	copyDir(t, sample, filepath.Join(rootDir, "jobs", "oom"))
	copyDir(t, sample, filepath.Join(outside, "secret-job"))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret-job"), filepath.Join(rootDir, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, "notes.txt"), []byte("hello"), 0o644))
	opts := testOptions(t)
	opts.Roots = []string{rootDir}
	c := connect(t, nil, opts)

	var list ListOut
	c.call("list_bundles", map[string]any{}, &list)
	require.Equal(t, []string{rootDir}, list.Roots)
	require.Len(t, list.Bundles, 1, "the link to a bundle outside is not followed: %+v", list.Bundles)
	require.Equal(t, filepath.Join(rootDir, "jobs", "oom"), list.Bundles[0].Path)
	require.False(t, list.Bundles[0].Open)

	for _, p := range []string{outside + "/secret-job", "../" + filepath.Base(outside) + "/secret-job", "link", "jobs/../../" + filepath.Base(outside), "/etc", "/dev/null"} {
		msg := c.fail("open_bundle", map[string]any{"path": p})
		require.Contains(t, msg, "outside the allowed roots", p)
	}
	require.Contains(t, c.fail("open_bundle", map[string]any{"path": "../no/such/dir"}), "outside the allowed roots")
	require.Contains(t, c.fail("open_bundle", map[string]any{"path": "jobs/nope"}), "no such file or directory under the allowed roots")
	require.Contains(t, c.fail("diagnosis", map[string]any{}), "no bundle is open")

	var opened OpenOut
	c.call("open_bundle", map[string]any{"path": "jobs/oom"}, &opened)
	require.Equal(t, "oom", opened.Bundle)
	require.Equal(t, "unhealthy", opened.Verdict)
	require.Contains(t, opened.RootCause, "CUDA out of memory")
	var again OpenOut
	c.call("open_bundle", map[string]any{"path": list.Bundles[0].Path}, &again)
	require.Equal(t, opened, again, "an open bundle is the same bundle")
	c.call("list_bundles", map[string]any{}, &list)
	require.Len(t, list.Bundles, 1)
	require.True(t, list.Bundles[0].Open)
	require.Equal(t, "PyTorchJob ml/train-job", list.Bundles[0].Job)
	var d DiagnosisOut
	c.call("diagnosis", map[string]any{"bundle": "oom"}, &d)
	require.Equal(t, "cuda-oom", d.RootCause.Category)
	require.Contains(t, c.fail("diagnosis", map[string]any{"bundle": "other"}), "no open bundle \"other\" (open: oom)")

	// Without roots nothing is opened but what the server was given.
	c2 := connect(t, []string{sample}, testOptions(t))
	require.Contains(t, c2.fail("open_bundle", map[string]any{"path": filepath.Join(rootDir, "jobs", "oom")}), "no allowed roots")
}

// TestSecretsNeverLeave: a token planted in a log next to the root cause's evidence, and in a
// pod's YAML, appears in no tool's answer and no resource; each shows the same mask.
func TestSecretsNeverLeave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leaky")
	copyDir(t, sample, dir)
	token := "hf_" + strings.Repeat("Zq8", 11) + "x"
	log := filepath.Join(dir, "logs/ml/train-job-worker-4/pytorch.log")
	lines := strings.Split(string(must(os.ReadFile(log))), "\n")
	planted := "2026-03-14T10:02:11.400000000Z [rank5]: export HF_TOKEN=" + token
	lines = slices.Insert(lines, 54, planted)
	require.NoError(t, os.WriteFile(log, []byte(strings.Join(lines, "\n")), 0o644))
	pods := must(filepath.Glob(filepath.Join(dir, "resources/core/Pod/ml/*worker-4*.yaml")))
	require.Len(t, pods, 1)
	y := string(must(os.ReadFile(pods[0])))
	y = strings.Replace(y, "containers:\n", "containers:\n  - name: sidecar\n    image: busybox\n    env:\n    - name: HF_TOKEN\n      value: "+token+"\n", 1)
	require.NoError(t, os.WriteFile(pods[0], []byte(y), 0o644))

	c := connect(t, []string{dir}, testOptions(t))
	var answers []string
	var d DiagnosisOut
	answers = append(answers, c.call("diagnosis", map[string]any{}, &d))
	answers = append(answers, c.call("finding", map[string]any{"id": d.RootCause.FindingID}, nil))
	answers = append(answers, c.call("findings", map[string]any{}, nil))
	answers = append(answers, c.call("timeline", map[string]any{}, nil))
	answers = append(answers, c.call("events", map[string]any{}, nil))
	var hits SearchOut
	answers = append(answers, c.call("search", map[string]any{"query": "HF_TOKEN", "context": 3}, &hits))
	require.NotEmpty(t, hits.Hits)
	require.Positive(t, hits.Masked)
	answers = append(answers, c.call("search", map[string]any{"regex": "hf_[A-Za-z0-9]+"}, nil))
	answers = append(answers, c.call("log_window", map[string]any{"pod": "train-job-worker-4", "line": 55, "before": 5, "after": 5}, nil))
	answers = append(answers, c.call("resources", map[string]any{"kind": "pod", "name": "*worker-4"}, nil))
	for _, r := range bundleResources {
		res, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resourceURI("leaky", r.name)})
		require.NoError(t, err, r.name)
		answers = append(answers, res.Contents[0].Text)
	}
	masks := map[string]bool{}
	for i, a := range answers {
		require.NotContains(t, a, token, "answer %d", i)
		require.NotContains(t, a, token[5:25], "answer %d", i)
		for _, m := range regexpAll(`\[REDACTED:hf-token:[0-9a-f]+\]`, a) {
			masks[m] = true
		}
	}
	require.Len(t, masks, 1, "one secret, one mask everywhere: %v", masks)
	require.Contains(t, answers[1], "[REDACTED:hf-token:", "the evidence window shows the masked line")
	require.Contains(t, answers[7], "[REDACTED:hf-token:")
	require.Contains(t, answers[8], "[REDACTED:", "the object's env value")

	// KeepSecrets (--no-redact) shows them.
	opts := testOptions(t)
	opts.Diagnose.KeepSecrets = true
	c2 := connect(t, []string{dir}, opts)
	require.Contains(t, c2.call("log_window", map[string]any{"pod": "train-job-worker-4", "line": 55}, nil), token)
}

// TestResourcesAndPrompt: an open bundle has its reports and manifest as resources, and the
// investigate prompt names it.
func TestResourcesAndPrompt(t *testing.T) {
	c := connect(t, []string{sample}, testOptions(t))
	ctx := context.Background()
	res, err := c.cs.ListResources(ctx, nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	require.Equal(t, []string{"coroner://bundles/pytorchjob-cuda-oom-rank/manifest.json", "coroner://bundles/pytorchjob-cuda-oom-rank/report.html",
		"coroner://bundles/pytorchjob-cuda-oom-rank/report.json", "coroner://bundles/pytorchjob-cuda-oom-rank/report.md"}, uris)
	md, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "coroner://bundles/pytorchjob-cuda-oom-rank/report.md"})
	require.NoError(t, err)
	require.Contains(t, md.Contents[0].Text, "CUDA out of memory")
	man, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "coroner://bundles/pytorchjob-cuda-oom-rank/manifest.json"})
	require.NoError(t, err)
	require.Contains(t, man.Contents[0].Text, `"formatVersion": 1`)

	p, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "investigate"})
	require.NoError(t, err)
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	require.Contains(t, text, "pytorchjob-cuda-oom-rank")
	for _, tool := range []string{"diagnosis", "finding", "log_window", "search", "timeline"} {
		require.Contains(t, text, tool)
	}
	_, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "investigate", Arguments: map[string]string{"bundle": "nope"}})
	require.ErrorContains(t, err, "no open bundle")

	var rules RulesOut
	c.call("rules", map[string]any{"category": "cuda-oom"}, &rules)
	require.NotEmpty(t, rules.Rules)
	var rule RulesOut
	c.call("rules", map[string]any{"id": rules.Rules[0].ID}, &rule)
	require.Equal(t, rules.Rules[0].ID, rule.Rule.ID)
	require.NotEmpty(t, rule.Rule.Examples)
	require.NotEmpty(t, rule.Rule.Remediation)
	require.Contains(t, c.fail("rules", map[string]any{"id": "cuda-oom/nope"}), "did you mean")
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	// Copies are written read-only by CopyFS: make them editable.
	require.NoError(t, filepath.Walk(dst, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, info.Mode()|0o200)
	}))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func regexpAll(re, s string) []string { return regexp.MustCompile(re).FindAllString(s, -1) }
