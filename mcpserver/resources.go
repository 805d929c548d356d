package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coroner-dev/coroner/report"
)

// The resources of an open bundle: its report in every form and its manifest.
var bundleResources = []struct{ name, mime, format, desc string }{
	{"report.md", "text/markdown", "md", "the report in Markdown"},
	{"report.html", "text/html", "html", "the report as a self-contained HTML page"},
	{"report.json", "application/json", "json", "the report as JSON, coroner's data contract (docs/design.md)"},
	{"manifest.json", "application/json", "", "the bundle's manifest: what was collected, how, what could not be, what was redacted"},
}

func resourceURI(id, name string) string { return "coroner://bundles/" + id + "/" + name }

// addResources adds the resources of a bundle (again, harmlessly, when it was added before).
func (s *Server) addResources(b *openBundle) {
	if s.srv == nil {
		return // New adds those of the bundles it opened once the server exists
	}
	for _, r := range bundleResources {
		r := r
		s.srv.AddResource(&mcp.Resource{URI: resourceURI(b.id, r.name), Name: b.id + "/" + r.name, MIMEType: r.mime,
			Description: fmt.Sprintf("%s of %s", r.desc, b.path)},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				text, err := guard("reading "+req.Params.URI, func() (string, error) { return s.resource(ctx, b, r.format) })
				if err != nil {
					return nil, err
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: r.mime, Text: text}}}, nil
			})
	}
}

func (s *Server) resource(ctx context.Context, b *openBundle, format string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.d == nil {
		return "", mcp.ResourceNotFoundError(resourceURI(b.id, ""))
	}
	var buf bytes.Buffer
	if format != "" {
		err := report.Render(&buf, b.d.Report, format)
		return buf.String(), err
	}
	m := b.d.Bundle.Manifest
	if m == nil {
		return "", fmt.Errorf("%s has no manifest (plain logs)", b.id)
	}
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return "", err
	}
	lines, err := s.mask(ctx, b, nil, strings.Split(buf.String(), "\n"))
	return strings.Join(lines, "\n"), err
}

// investigate is the prompt that walks an agent through a bundle.
const investigate = `Investigate why the training job in the coroner bundle %s failed, using the coroner tools.

1. Call diagnosis. Read the verdict, the root cause (its category, confidence, evidence, explanation and remediation) and the other failures.
2. Check the evidence: call finding with the root cause's id to see its evidence windows, and log_window to read further around an evidence line (pod, container, line).
3. Test the diagnosis against the logs: search for what would confirm or contradict it (the error's words, level:error on the root cause's pod, the same error on other ranks, what happened just before with since/until). Look at timeline and events for the order of events: which rank failed first, restarts, evictions, node problems.
4. If the confidence is not high or the verdict is unknown, say what is missing, and search for the failure's words yourself.

Answer with: what failed first and why, the evidence (file:line, quoted), what followed from it, and what to do. Quote only what the tools returned; secrets are masked as [REDACTED:...] and stay so.`

func (s *Server) addPrompt() {
	s.srv.AddPrompt(&mcp.Prompt{Name: "investigate", Title: "Investigate this bundle",
		Description: "Walk through a bundle: diagnosis, then its evidence, then searches that confirm or contradict it.",
		Arguments:   []*mcp.PromptArgument{{Name: "bundle", Description: "the id of an open bundle (list_bundles); the only open one when left out"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			id := req.Params.Arguments["bundle"]
			b, err := s.bundle(id)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Description: "Investigate " + b.id,
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(investigate, b.id)}}}}, nil
		})
}
