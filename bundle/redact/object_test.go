package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
)

func decode(t *testing.T, y string) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(y), &obj))
	return obj
}

func encode(t *testing.T, obj map[string]any) string {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

const pod = `apiVersion: v1
kind: Pod
metadata:
  name: train-0
  annotations:
    team: ml
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0"},"spec":{"containers":[{"name":"c","env":[{"name":"WANDB_API_KEY","value":"last-applied-wandb-value"}]}]}}
    notes: 'ci pushed with ghp_0123456789abcdefghijABCDEFGHIJ012345'
spec:
  initContainers:
  - name: fetch
    env:
    - {name: HF_TOKEN, value: init-hf-value-1234}
    - {name: HF_HOME, value: /cache/hf}
  containers:
  - name: pytorch
    command: [torchrun, --nproc-per-node=8]
    args: ["train.py", "--db-password", "args-db-password", "--epochs", "3", "--api-key=args-api-key-value"]
    env:
    - {name: TOKENIZERS_PARALLELISM, value: "false"}
    - {name: AWS_SECRET_ACCESS_KEY, value: container-aws-secret}
    - {name: DATABASE_URL, value: "postgres://app:db-url-password@db:5432/x"}
    - name: FROM_SECRET
      valueFrom: {secretKeyRef: {name: s, key: k}}
  ephemeralContainers:
  - name: debug
    env:
    - {name: GITHUB_TOKEN, value: ephemeral-gh-value}
`

func TestObjectPod(t *testing.T) {
	r := newTest(t)
	obj := decode(t, pod)
	r.ObjectAt("resources/core/Pod/ml/train-0.yaml", obj)
	out := encode(t, obj)
	for _, secret := range []string{"last-applied-wandb-value", "ghp_0123456789", "init-hf-value-1234", "args-db-password",
		"args-api-key-value", "container-aws-secret", "db-url-password", "ephemeral-gh-value"} {
		require.NotContains(t, out, secret)
	}
	for _, kept := range []string{"/cache/hf", `"false"`, "--db-password", `"3"`, "train.py", "torchrun", "--nproc-per-node=8", "secretKeyRef", `"team":"ml"`} {
		require.Contains(t, out, kept)
	}
	require.Equal(t, []bundle.RedactionRule{{ID: "database-url", Count: 1}, {ID: "env-secret", Count: 4}, {ID: "github-token", Count: 1},
		{ID: "secret-assignment", Count: 2}}, r.Summary())

	// The annotation is still the JSON kubectl wrote, now redacted.
	ann := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(ann["kubectl.kubernetes.io/last-applied-configuration"].(string)), &last))
	require.Equal(t, []string{"env-secret"}, rulesIn(encode(t, last)))

	locs, more := r.Locations()
	require.Zero(t, more)
	var fields []string
	for _, l := range locs {
		require.Equal(t, "resources/core/Pod/ml/train-0.yaml", l.File)
		fields = append(fields, l.Field+" "+l.Rule)
	}
	require.Equal(t, []string{
		`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"].spec.containers[0].env[0].value env-secret`,
		`metadata.annotations["notes"] github-token`,
		`spec.containers[0].args[2] secret-assignment`,
		`spec.containers[0].args[5] secret-assignment`,
		`spec.containers[0].env[1].value env-secret`,
		`spec.containers[0].env[2].value database-url`,
		`spec.ephemeralContainers[0].env[0].value env-secret`,
		`spec.initContainers[0].env[0].value env-secret`,
	}, fields)
}

func TestObjectNestedPodTemplates(t *testing.T) {
	r := newTest(t)
	obj := decode(t, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm}
spec:
  trainer:
    env: [{name: HF_TOKEN, value: trainer-env-value}]
  podSpecOverrides:
  - targetJobs: [{name: node}]
    containers: [{name: node, env: [{name: WANDB_API_KEY, value: override-env-value}]}]
---`)
	r.Object(obj)
	js := decode(t, `kind: JobSet
spec:
  replicatedJobs:
  - name: node
    template:
      spec:
        template:
          spec:
            containers: [{name: node, env: [{name: MLFLOW_TRACKING_PASSWORD, value: jobset-env-value}]}]
`)
	r.Object(js)
	ptj := decode(t, `kind: PyTorchJob
spec:
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: pytorch, env: [{name: S3_SECRET_KEY, value: pytorchjob-env-value}]}]
`)
	r.Object(ptj)
	out := encode(t, obj) + encode(t, js) + encode(t, ptj)
	for _, s := range []string{"trainer-env-value", "override-env-value", "jobset-env-value", "pytorchjob-env-value"} {
		require.NotContains(t, out, s)
	}
	require.Equal(t, []bundle.RedactionRule{{ID: "env-secret", Count: 4}}, r.Summary())
}

func TestObjectSecret(t *testing.T) {
	r := newTest(t)
	b64 := base64.StdEncoding.EncodeToString([]byte("shared-value"))
	obj := decode(t, `apiVersion: v1
kind: Secret
metadata:
  name: creds
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"Secret","stringData":{"token":"applied-secret"}}'
type: Opaque
data: {password: `+b64+`, user: YWRtaW4=}
stringData: {token: string-data-secret}
`)
	r.Object(obj)
	out := encode(t, obj)
	for _, s := range []string{b64, "YWRtaW4=", "string-data-secret", "applied-secret"} {
		require.NotContains(t, out, s)
	}
	require.Contains(t, out, `"type":"Opaque"`)
	require.Contains(t, out, `"name":"creds"`)
	require.Equal(t, []bundle.RedactionRule{{ID: "kubernetes-secret", Count: 4}}, r.Summary())

	// The base64 value and the same value in an env var give the same token.
	data := obj["data"].(map[string]any)
	env := map[string]any{"env": []any{map[string]any{"name": "DB_PASSWORD", "value": "shared-value"}}}
	r.Object(env)
	tok := env["env"].([]any)[0].(map[string]any)["value"].(string)
	require.Equal(t, data["password"].(string)[len("[REDACTED:kubernetes-secret:"):], tok[len("[REDACTED:env-secret:"):])

	// A list of objects, as kubectl get -o yaml writes it.
	list := decode(t, "kind: List\nitems:\n- {kind: Secret, data: {k: "+b64+"}}\n")
	r.Object(list)
	require.NotContains(t, encode(t, list), b64)
}

func TestObjectRedactsOnceOnly(t *testing.T) {
	r := newTest(t)
	obj := decode(t, pod)
	r.Object(obj)
	first := encode(t, obj)
	n := r.Summary()
	r.Object(obj)
	require.Equal(t, first, encode(t, obj), "an object redacted twice is unchanged")
	require.Equal(t, n, r.Summary(), "and nothing is counted twice")
}

func TestCopy(t *testing.T) {
	r := newTest(t)
	in := "2026-03-14T10:00:00Z starting\r\n" +
		"2026-03-14T10:00:01Z HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567\n" +
		"2026-03-14T10:00:02Z writing key -----BEGIN RSA PRIVATE KEY-----\n" +
		"2026-03-14T10:00:02Z MIIEowIBAAKCAQEAvRzUZAXyZkc\n" +
		"2026-03-14T10:00:02Z 2Vfb3rCuJ6mO8fDCz1iK7p\n" +
		"2026-03-14T10:00:02Z -----END RSA PRIVATE KEY----- done, password=hunter2hunter2\n" +
		"2026-03-14T10:00:03Z no newline at the end"
	var out bytes.Buffer
	n, err := r.Copy(t.Context(), &out, strings.NewReader(in), "logs/ml/p/c.log")
	require.NoError(t, err)
	require.Equal(t, int64(out.Len()), n)
	got := out.String()
	for _, s := range []string{"hf_AbCd", "MIIEow", "2Vfb3r", "hunter2"} {
		require.NotContains(t, got, s)
	}
	lines := strings.Split(got, "\n")
	require.Len(t, lines, 7, "the line count is kept")
	require.Equal(t, "2026-03-14T10:00:00Z starting\r", lines[0])
	require.True(t, strings.HasPrefix(lines[2], "2026-03-14T10:00:02Z writing key [REDACTED:private-key:"), lines[2])
	key := strings.TrimPrefix(lines[2], "2026-03-14T10:00:02Z writing key ")
	require.Equal(t, "2026-03-14T10:00:02Z "+key, lines[3], "one token for the whole key, on each of its lines")
	require.Equal(t, "2026-03-14T10:00:02Z "+key+" done, password="+tokenRE.FindString(lines[5][len(lines[3]):]), lines[5])
	require.Equal(t, "2026-03-14T10:00:03Z no newline at the end", lines[6])
	require.Equal(t, []bundle.RedactionRule{{ID: "hf-token", Count: 1}, {ID: "private-key", Count: 1}, {ID: "secret-assignment", Count: 1}}, r.Summary())
	locs, _ := r.Locations()
	require.Equal(t, []Location{
		{File: "logs/ml/p/c.log", Line: 2, Rule: "hf-token"},
		{File: "logs/ml/p/c.log", Line: 3, Rule: "private-key"},
		{File: "logs/ml/p/c.log", Line: 6, Rule: "secret-assignment"},
	}, locs)
}

// TestCopyLongLine: a line far longer than the chunk is redacted in bounded pieces, and a
// secret across a cut between pieces is still masked.
func TestCopyLongLine(t *testing.T) {
	r := newTest(t)
	secret := "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
	var in strings.Builder
	for in.Len() < 5*maxChunk {
		in.WriteString(strings.Repeat("x", maxChunk-overlap-10))
		in.WriteString(" " + secret + " ")
	}
	in.WriteString("\nnext line\n")
	var out bytes.Buffer
	_, err := r.Copy(t.Context(), &out, strings.NewReader(in.String()), "")
	require.NoError(t, err)
	require.NotContains(t, out.String(), secret)
	require.Equal(t, strings.Count(in.String(), secret), strings.Count(out.String(), "[REDACTED:hf-token:"))
	require.Equal(t, strings.Count(in.String(), secret), r.Summary()[0].Count)
	require.True(t, strings.HasSuffix(out.String(), "\nnext line\n"))
	// With the secrets masked, the rest is byte for byte the input.
	require.Equal(t, strings.ReplaceAll(in.String(), secret, ""), tokenRE.ReplaceAllString(out.String(), ""))
}

func TestCopyUnendedKeyBlock(t *testing.T) {
	r := newTest(t)
	in := "2026-03-14T10:00:00Z -----BEGIN PRIVATE KEY-----\n" + strings.Repeat("2026-03-14T10:00:00Z QUJDREVGR0g=\n", 300) +
		"2026-03-14T10:00:01Z step 1 loss=2.0\n"
	var out bytes.Buffer
	_, err := r.Copy(t.Context(), &out, strings.NewReader(in), "")
	require.NoError(t, err)
	require.NotContains(t, out.String(), "QUJDREVGR0g=", "a block without END is masked as long as its lines look like a key")
	require.Equal(t, 302, strings.Count(out.String(), "\n"))
	require.True(t, strings.HasSuffix(out.String(), "]\n2026-03-14T10:00:01Z step 1 loss=2.0\n"), "the first other line ends the block")
	require.Equal(t, 1, r.Summary()[0].Count, "one key")
}
