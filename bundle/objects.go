package bundle

import (
	"bytes"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Objects saved with `kubectl get pod -o yaml` (or -o json, a List of them, a PyTorchJob) are
// given beside logs, or alone: read as logs they say nothing, read as resources a pod's
// terminated exit code and a job's Failed condition are what they are in a bundle.

// inputsDir is where plain inputs that hold Kubernetes objects go in the bundle tree.
const inputsDir = "resources/_inputs"

// isKubeObject reports whether a file's head is a Kubernetes object or List in YAML or JSON:
// its top level has both apiVersion and kind.
func isKubeObject(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if bytes.HasPrefix(trimmed, []byte("{")) {
		return bytes.Contains(head, []byte(`"apiVersion"`)) && bytes.Contains(head, []byte(`"kind"`))
	}
	var api, kind bool
	top := 0
	for _, l := range bytes.Split(head, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		s := string(l)
		switch {
		case s == "" || strings.HasPrefix(s, "#") || s == "---":
			continue
		case s[0] == ' ' || s[0] == '\t' || s[0] == '-':
			continue // nested
		}
		key, _, ok := strings.Cut(s, ":")
		if !ok || strings.ContainsAny(key, " \t\"'{[") {
			return false // a top-level line that is not a key: not YAML of an object
		}
		switch key {
		case "apiVersion":
			api = true
		case "kind":
			kind = true
		}
		if api && kind {
			return true
		}
		if top++; top > 64 {
			break
		}
	}
	return false
}

// objectPath is the bundle path of an input that holds objects: its base name under
// resources/_inputs/, with a YAML or JSON extension parse reads.
func objectPath(input string, head []byte, used map[string]bool) string {
	base := plainPodName(input)
	ext := strings.ToLower(filepath.Ext(input))
	if ext != ".json" && ext != ".yaml" && ext != ".yml" {
		ext = ".yaml"
		if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")) {
			ext = ".json"
		}
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	p := path.Join(inputsDir, base+ext)
	for i := 2; used[p]; i++ {
		p = path.Join(inputsDir, base+"-"+strconv.Itoa(i)+ext)
	}
	used[p] = true
	return p
}
