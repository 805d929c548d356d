package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Object masks the secrets of a decoded Kubernetes object (JSON or YAML decoded into
// map[string]any), in place:
//   - the values of environment variables whose names look secret, in every "env" list at any
//     depth (containers, initContainers, ephemeralContainers, and the pod templates that
//     TrainJob, JobSet, PyTorchJob... nest in their replica specs);
//   - every value of a Secret's data and stringData;
//   - the value after a secret-looking flag in a list of strings (args: ["--password", "x"]);
//   - annotations holding JSON, such as kubectl's last-applied-configuration, which are
//     decoded, redacted as objects and encoded again;
//   - every other string, through Line.
func (r *Redactor) Object(obj map[string]any) {
	r.ObjectAt("", obj)
}

// ObjectAt is Object, recording the locations of what it masks under the file name where.
func (r *Redactor) ObjectAt(where string, obj map[string]any) {
	w := &walker{r: r, where: where}
	w.object(obj, "")
	r.record(w.locs)
}

type walker struct {
	r     *Redactor
	where string
	locs  []Location
	// changed is set when anything was masked (an annotation is re-encoded only then).
	changed bool
}

func (w *walker) mask(m int32, value []byte, field string) string {
	w.r.counts[m].Add(1)
	w.changed = true
	if w.where != "" {
		w.locs = append(w.locs, Location{File: w.where, Field: field, Rule: w.r.ms[m].id})
	}
	return string(w.r.token(nil, m, value))
}

func (w *walker) line(s, field string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "\n") {
		// A text of several lines (a script, a config file in a ConfigMap): masked as a
		// stream is, with what its lines say of the next ones.
		out := w.r.text(s, w.where, field)
		if out != s {
			w.changed = true
		}
		return out
	}
	sc := w.r.getScratch()
	defer w.r.putScratch(sc)
	b := []byte(s)
	spans := w.r.find(b, sc)
	if !hasMask(spans) {
		return s
	}
	w.changed = true
	return string(w.r.apply(nil, b, spans, func(m int32) {
		if w.where != "" {
			w.locs = append(w.locs, Location{File: w.where, Field: field, Rule: w.r.ms[m].id})
		}
	}))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (w *walker) object(obj map[string]any, path string) {
	kind, _ := obj["kind"].(string)
	for _, k := range sortedKeys(obj) {
		k = w.key(obj, k, path)
		field := join(path, k)
		if m, ok := w.namedSecret(k, obj[k]); ok && !selectorMap(path) {
			obj[k] = w.mask(m, []byte(scalarText(obj[k])), field)
			continue
		}
		switch v := obj[k].(type) {
		case map[string]any:
			switch {
			case kind == "Secret" && (k == "data" || k == "stringData"):
				w.secretData(v, k == "data", field)
			case k == "annotations":
				w.annotations(v, field)
			default:
				w.object(v, field)
			}
		case []any:
			if k == "env" {
				w.env(v, field)
			} else {
				w.list(v, field)
			}
		case string:
			obj[k] = w.line(v, field)
		}
	}
}

// key masks a secret in a key of m (an annotation named after a token), moving its value to
// the masked key, and returns the key it ends under.
func (w *walker) key(m map[string]any, k, path string) string {
	nk := w.line(k, path+" (a key)") // the location never shows the key: it is the secret
	if nk != k {
		m[nk] = m[k]
		delete(m, k)
	}
	return nk
}

// selectorMap reports whether path is a map of labels or a selector, whose keys are names
// (jobset.sigs.k8s.io/job-key), never secrets' names.
func selectorMap(path string) bool {
	for _, s := range []string{"labels", "matchLabels", "nodeSelector", "selector"} {
		if path == s || strings.HasSuffix(path, "."+s) {
			return true
		}
	}
	return false
}

// namedSecret reports whether the value under key k is a secret by the key's name alone:
// a scalar under a secret's name (password: x, clientSecret: y; a password may be a number),
// or a random-looking one under a weak name (key: 8f3a...). References and words are not
// (key: nvidia.com/gpu, secretKeyRef's key: password).
func (w *walker) namedSecret(k string, v any) (int32, bool) {
	s, ok := v.(string)
	if !ok {
		if !passwordName(k) {
			return 0, false
		}
		if s = scalarText(v); s == "" {
			return 0, false
		}
	}
	if strings.HasPrefix(s, tokenPrefix) {
		return 0, false
	}
	m := int32(w.r.byID["secret-assignment"])
	switch {
	case SecretName(k):
		return m, plausibleFor(k, s) && !strings.Contains(s, "\n") || strings.Contains(s, "\n") && len(strings.TrimSpace(s)) >= minLiteral
	case weakAlone([]byte(k)):
		return m, plausibleValue(s) && looksRandom(strings.TrimSpace(s))
	}
	return 0, false
}

// scalarText is a number's or a boolean's text as JSON writes it; "" for anything else but a
// string.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func (w *walker) secretData(data map[string]any, encoded bool, path string) {
	m := int32(w.r.byID[ruleSecret])
	for _, k := range sortedKeys(data) {
		s := scalarText(data[k]) // stringData: {pin: 1234} is a number in YAML
		if s == "" && data[k] != "" || strings.HasPrefix(s, tokenPrefix) {
			continue
		}
		value := []byte(s)
		if encoded {
			// The token of a base64 value is that of the value itself, as in an env var.
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				value = dec
			}
		}
		data[k] = w.mask(m, value, path+"["+strconv.Quote(k)+"]")
	}
}

// env masks the values of an env list: by the variable's name, else through Line.
func (w *walker) env(list []any, path string) {
	for i, item := range list {
		field := path + "[" + strconv.Itoa(i) + "]"
		e, ok := item.(map[string]any)
		if !ok {
			w.list([]any{item}, field)
			continue
		}
		name, _ := e["name"].(string)
		// value: 1234 decodes as a number: a secret all the same.
		if v := scalarText(e["value"]); v != "" && !strings.HasPrefix(v, tokenPrefix) {
			if m, secret := w.r.envRule(name); secret {
				e["value"] = w.mask(m, []byte(v), field+".value")
			}
		}
		w.object(e, field)
	}
}

// envRule says which rule, if any, makes the variable name a secret.
func (r *Redactor) envRule(name string) (int32, bool) {
	for _, m := range r.envRules {
		if r.ms[m].envName(name) {
			return m, true
		}
	}
	if SecretName(name) {
		return int32(r.byID[ruleEnv]), true
	}
	return 0, false
}

// list walks a list; in a list of strings (args, command), the value after a flag with a
// secret-looking name is masked whole.
func (w *walker) list(list []any, path string) {
	flagged := false
	for i, item := range list {
		field := path + "[" + strconv.Itoa(i) + "]"
		switch v := item.(type) {
		case map[string]any:
			w.object(v, field)
		case []any:
			w.list(v, field)
		case string:
			if flagged && v != "" && !strings.HasPrefix(v, "-") && plausibleValue(v) {
				list[i] = w.mask(int32(w.r.byID[ruleArg]), []byte(v), field)
				flagged = false
				continue
			}
			flagged = isSecretFlag(v)
			list[i] = w.line(v, field)
			continue
		}
		flagged = false
	}
}

// isSecretFlag reports whether s is a flag whose value follows as the next argument.
func isSecretFlag(s string) bool {
	if !strings.HasPrefix(s, "-") || strings.ContainsAny(s, "= \t") {
		return false
	}
	return SecretName(strings.TrimLeft(s, "-"))
}

// annotations redacts annotation values; a JSON object (kubectl's last-applied-configuration
// holds the whole object, Secret data and env values included) is redacted as an object.
func (w *walker) annotations(ann map[string]any, path string) {
	for _, k := range sortedKeys(ann) {
		k = w.key(ann, k, path)
		s, ok := ann[k].(string)
		if !ok {
			continue
		}
		field := path + "[" + strconv.Quote(k) + "]"
		if js, ok := w.jsonObject(s, field); ok {
			ann[k] = js
			continue
		}
		ann[k] = w.line(s, field)
	}
}

// jsonObject redacts s as an object when it is one JSON object, and returns it re-encoded
// (or unchanged when nothing was masked).
func (w *walker) jsonObject(s, field string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") {
		return "", false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var inner map[string]any
	if dec.Decode(&inner) != nil || dec.More() {
		return "", false
	}
	sub := &walker{r: w.r, where: w.where}
	sub.object(inner, field)
	if !sub.changed {
		return s, true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(inner); err != nil {
		return "", false // cannot happen for decoded JSON; the text path still masks
	}
	w.changed = true
	w.locs = append(w.locs, sub.locs...)
	return buf.String(), true
}
