package narrate

import (
	"encoding/json"
	"regexp"
	"strings"
)

// AnswerSchema is the JSON schema sent as Ollama's format: the seed document's four fields.
var AnswerSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"healthy":{"type":"string","enum":["Yes","No"]},` +
	`"error":{"type":"string"},` +
	`"analysis":{"type":"string"},` +
	`"solution":{"type":"array","items":{"type":"string"}}},` +
	`"required":["healthy","error","analysis","solution"]}`)

// Answer is the parsed answer.
type Answer struct {
	// Healthy is nil when the answer does not say.
	Healthy  *bool
	Error    string
	Analysis string
	Solution []string
	// Format is "json", "text", or "" when the answer has neither form.
	Format string
}

// ParseAnswer reads a model's answer: the JSON the schema asks for (also inside a code fence
// or after some chatter), else the seed's text form "Healthy: / Error: / Analysis: /
// Solution:".
func ParseAnswer(raw string) Answer {
	if a, ok := parseJSONAnswer(raw); ok {
		return a
	}
	if a, ok := parseTextAnswer(raw); ok {
		return a
	}
	return Answer{}
}

func parseJSONAnswer(raw string) (Answer, bool) {
	start, end := strings.IndexByte(raw, '{'), strings.LastIndexByte(raw, '}')
	if start < 0 || end < start {
		return Answer{}, false
	}
	var v struct {
		Healthy  any             `json:"healthy"`
		Error    string          `json:"error"`
		Analysis string          `json:"analysis"`
		Solution json.RawMessage `json:"solution"`
	}
	if err := json.Unmarshal([]byte(raw[start:end+1]), &v); err != nil {
		return Answer{}, false
	}
	a := Answer{Error: strings.TrimSpace(v.Error), Analysis: strings.TrimSpace(v.Analysis), Format: "json"}
	switch h := v.Healthy.(type) {
	case bool:
		a.Healthy = &h
	case string:
		a.Healthy = parseHealthy(h)
	}
	var steps []string
	var one string
	switch {
	case json.Unmarshal(v.Solution, &steps) == nil:
		for _, s := range steps {
			if s = strings.TrimSpace(stepMarker.ReplaceAllString(s, "")); s != "" {
				a.Solution = append(a.Solution, s)
			}
		}
	case json.Unmarshal(v.Solution, &one) == nil:
		a.Solution = splitSteps(one)
	}
	if a.Healthy == nil && a.Error == "" && a.Analysis == "" && len(a.Solution) == 0 {
		return Answer{}, false
	}
	return a, true
}

// label finds the seed's field names at the start of a line, in Markdown dress or not:
// "Healthy:", "**Error:**", "## Analysis", "- Solution:".
var label = regexp.MustCompile(`(?im)^[\s>*#\-]*(healthy|error|analysis|solution)\**\s*(?::\**|\n|$)`)

// stepMarker is a step's number or bullet.
var stepMarker = regexp.MustCompile(`^\s*(?:\d+[.)]|[-*•]|step\s+\d+\s*[:.)])\s*`)

func parseTextAnswer(raw string) (Answer, bool) {
	locs := label.FindAllStringSubmatchIndex(raw, -1)
	if len(locs) == 0 {
		return Answer{}, false
	}
	a := Answer{Format: "text"}
	found := false
	for i, loc := range locs {
		end := len(raw)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := strings.TrimSpace(strings.Trim(strings.TrimSpace(raw[loc[1]:end]), "*"))
		switch strings.ToLower(raw[loc[2]:loc[3]]) {
		case "healthy":
			a.Healthy = parseHealthy(body)
		case "error":
			a.Error = oneLine(body)
		case "analysis":
			a.Analysis = body
		case "solution":
			a.Solution = splitSteps(body)
		}
		found = true
	}
	return a, found
}

func parseHealthy(s string) *bool {
	w := strings.ToLower(strings.Trim(strings.TrimSpace(s), "*.{}[] "))
	if f := strings.Fields(w); len(f) > 0 {
		w = strings.Trim(f[0], ",.;")
	}
	var b bool
	switch w {
	case "yes", "true", "healthy":
		b = true
	case "no", "false", "unhealthy":
		b = false
	default:
		return nil
	}
	return &b
}

// splitSteps cuts a solution into steps: numbered or bulleted lines start a step, other lines
// continue the one before.
func splitSteps(s string) []string {
	var steps []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if stepMarker.MatchString(line) || len(steps) == 0 {
			if t := strings.TrimSpace(stepMarker.ReplaceAllString(line, "")); t != "" {
				steps = append(steps, t)
			}
			continue
		}
		steps[len(steps)-1] += " " + line
	}
	return steps
}
