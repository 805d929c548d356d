package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The secrets of issue 12 that were still in a bundle after redaction, each with text that
// looks like it and must be left alone.

const kubeconfigKey = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVBMGt1YmVjb25maWdrZXkKLS0tLS1FTkQgUlNBIFBSSVZBVEUgS0VZLS0tLS0K"

// kubeconfig is what kubectl writes, with a client key and a bearer token.
func kubeconfig(token string) string {
	return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://10.0.0.1:6443
  name: prod
users:
- name: admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUNjZXJ0
    client-key-data: ` + kubeconfigKey + `
    token: ` + token + `
`
}

func TestSecretsOfTheIssueInText(t *testing.T) {
	b64kc := base64.StdEncoding.EncodeToString([]byte(kubeconfig("kc-token-0123456789abcdef")))
	dockerCfg := base64.StdEncoding.EncodeToString([]byte("robot:Dock3rPassw0rd"))
	tests := []struct {
		name, in string
		secrets  []string // gone from the output
		rules    []string // the tokens, in order
	}{
		{"kubeconfig in base64 in a log line", "KUBECONFIG_DATA=" + b64kc + " loaded", []string{b64kc[20:60]}, []string{"base64-secret"}},
		{"kubeconfig's client-key-data", "    client-key-data: " + kubeconfigKey, []string{kubeconfigKey}, []string{"base64-secret"}},
		{"kubeconfig's client-certificate-data", "client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUNjZXJ0", []string{"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUNjZXJ0"}, []string{"secret-assignment"}},
		{"base64 PEM key alone", "writing " + kubeconfigKey + " to disk", []string{kubeconfigKey}, []string{"base64-secret"}},
		{"docker config auth", `{"auths":{"registry.internal":{"auth":"` + dockerCfg + `"}}}`, []string{dockerCfg}, []string{"docker-auth"}},
		{"docker config auth, escaped in JSON", `config={\"auths\":{\"r\":{\"auth\":\"` + dockerCfg + `\"}}}`, []string{dockerCfg}, []string{"docker-auth"}},
		{"mysql -p", "mysql -h db -u root -pS3cr3tPw training < dump.sql", []string{"S3cr3tPw"}, []string{"mysql-password"}},
		{"mysql -p quoted", "mysqldump -u app -p'my pass word' runs", []string{"my pass word"}, []string{"mysql-password"}},
		{"numeric PGPASSWORD", "PGPASSWORD=4711 psql -h db", []string{"4711"}, []string{"secret-assignment"}},
		{"numeric password in JSON", `{"db_password": "20260314"}`, []string{"20260314"}, []string{"secret-assignment"}},
		{"URL password with @", "pip install -i https://builder:p@ss@w0rd@pypi.internal/simple torch", []string{"p@ss@w0rd", "ss@w0rd"}, []string{"url-credentials"}},
		{"database URL password with @", "DATABASE_URL=postgres://app:se@cret@db:5432/x", []string{"se@cret"}, []string{"database-url"}},
		{"env pair as JSON", `{"name":"PGPASSWORD","value":"1234"}`, []string{`"1234"`}, []string{"env-secret"}},
		{"env pair as flow YAML", `env: [{name: HF_TOKEN, value: abc123def456}, {name: HOME, value: /root}]`, []string{"abc123def456"}, []string{"env-secret"}},
		{"weak name with a random value", "key: 8f3a9c1b2d4e5f60718293a4b5c6d7e8", []string{"8f3a9c1b2d4e5f60718293a4b5c6d7e8"}, []string{"secret-assignment"}},
	}
	r := newTest(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := r.Text(tt.in)
			for _, s := range tt.secrets {
				require.NotContains(t, out, s, out)
			}
			require.Equal(t, tt.rules, rulesIn(out), out)
			require.Equal(t, out, r.Line(tt.in), "one line: Line and Text agree")
			require.Equal(t, out, newTest(t).Text(out), "redacting twice changes nothing")
		})
	}
}

// TestLookalikesAreLeftAlone: text that looks like the cases above but holds no secret.
func TestLookalikesAreLeftAlone(t *testing.T) {
	r := newTest(t)
	for _, s := range []string{
		"mysql -h db -P 3306 -u root -p training",             // -p alone prompts
		"client-certificate-data: <redacted by the operator>", // a placeholder
		`{"auth": "none"}`,                                                 // not base64 of user:password
		"key: nvidia.com/gpu",                                              // a toleration
		"- key: kubernetes.io/hostname",                                    // a selector
		"secretKeyRef: {name: db, key: password}",                          // a reference
		"waiting for key: store/rank3",                                     // torch's store
		"cache key: resnet50-imagenet",                                     // a word
		"pad_token: 0 eos_token: 2 token: 128",                             // token ids
		`"unk_token": "[UNK]", "pad_token": "<pad>"`,                       // tokenizer config
		"https://huggingface.co/meta-llama/Llama-3-8B/resolve/main/x.json", // no user info
		"email me at ops@example.com or see http://host:8080/path?x=a@b",   // an @ outside user info
		"step=1200 loss=2.3456 lr=1e-4 grad_norm=0.87 tokens_per_sec=31250",
		`env: [{name: HOME, value: /root}, {name: NCCL_DEBUG, value: INFO}]`,
		"Downloading shards: dGhpcyBpcyBqdXN0IHNvbWUgdGV4dCB3aXRob3V0IGFueSBzZWNyZXQgaW4gaXQ=",
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	} {
		require.Equal(t, s, r.Text(s), "changed")
	}
	require.Empty(t, r.Summary(), "nothing counted")
}

// TestSecretsAcrossLines: what a line says of the next ones (YAML values below their key, env
// items, NAME= at the end of a line, a wrapped token) in a stream, with kubelet timestamps or
// without.
func TestSecretsAcrossLines(t *testing.T) {
	tests := []struct {
		name, in string
		secrets  []string
		rules    []string
		kept     []string
	}{
		{"env item, value on the next line", "env:\n- name: PGPASSWORD\n  value: \"1234\"\n- name: HOME\n  value: /root\n",
			[]string{"1234"}, []string{"env-secret"}, []string{"- name: PGPASSWORD", "value: /root"}},
		{"env item, numeric, other keys between", "    - name: DB_PASSWORD\n      image: x\n      value: 20260314\n",
			[]string{"20260314"}, []string{"env-secret"}, []string{"image: x"}},
		{"env item with valueFrom", "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: password}\n",
			nil, nil, []string{"secretKeyRef: {name: db, key: password}"}},
		{"password: | nested deeper", "db:\n  password: |\n    hunter2-block\n    second-line\n  host: db\n",
			[]string{"hunter2-block", "second-line"}, []string{"secret-assignment", "secret-assignment"}, []string{"  password: |", "  host: db"}},
		{"password: on its line, value below", "auth:\n  password:\n    s3cretvalue\nnext: 1\n",
			[]string{"s3cretvalue"}, []string{"secret-assignment"}, []string{"next: 1"}},
		{"key: | with a block", "tls:\n  key: |\n    MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n  crt: x\n",
			[]string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"}, []string{"secret-assignment"}, []string{"  crt: x"}},
		{"a volume's secret: is a mapping, not a value", "volumes:\n- name: creds\n  secret:\n    secretName: creds\n",
			nil, nil, []string{"secretName: creds"}},
		{"NAME= at the end of a line", "2026-03-14T10:00:01Z export WANDB_API_KEY=\n2026-03-14T10:00:01Z 0a1b2c3d4e5f60718293a4b5c6d7e8f901234567\n",
			[]string{"0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}, []string{"secret-assignment"}, []string{"2026-03-14T10:00:01Z export WANDB_API_KEY="}},
		{"a flag at the end of a line", "python train.py --hub-token\n  Xk29dkLmQp3\n",
			[]string{"Xk29dkLmQp3"}, []string{"secret-assignment"}, nil},
		{"Bearer at the end of a line", "curl -H 'Authorization: Bearer\n0a1b2c3d4e5f6a7b8c9d0e1f\n",
			[]string{"0a1b2c3d4e5f6a7b8c9d0e1f"}, []string{"bearer-token"}, nil},
		{"a token wrapped onto two lines", "2026-03-14T10:00:01Z HF_TOKEN=hf_AbCdEfGhIjKlMn\n2026-03-14T10:00:01Z OpQrStUvWxYz0123456789 set\n",
			[]string{"hf_AbCdEfGhIjKlMn", "OpQrStUvWxYz0123456789"}, []string{"hf-token", "hf-token"}, []string{" set"}},
		{"a whole token, then its wrapped end", "token ghp_0123456789abcdefghijABCDEFGHIJ0123\n45AbCdEf\n",
			[]string{"ghp_0123456789", "45AbCdEf"}, []string{"github-token", "github-token"}, nil},
		{"a whole token, then ordinary text", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\nStarting training\n",
			[]string{"hf_AbCd"}, []string{"hf-token"}, []string{"Starting training"}},
		{"a private key", "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\nok\n",
			[]string{"MIIEvQIBADANBgkq"}, []string{"private-key", "private-key", "private-key"}, []string{"ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTest(t)
			out := r.Text(tt.in)
			for _, s := range tt.secrets {
				require.NotContains(t, out, s, out)
			}
			require.Equal(t, tt.rules, rulesIn(out), out)
			for _, k := range tt.kept {
				require.Contains(t, out, k, out)
			}
			require.Equal(t, strings.Count(tt.in, "\n"), strings.Count(out, "\n"), "the line count is kept")
			again := newTest(t)
			require.Equal(t, out, again.Text(out), "redacting twice changes nothing")
			require.Empty(t, again.Summary())
			total := 0
			for _, s := range r.Summary() {
				total += s.Count
			}
			if len(tt.rules) > 0 {
				require.Equal(t, 1, total, "one secret, counted once: %v", r.Summary())
			}
		})
	}
}

// TestSecretsOfTheIssueInObjects: what the object walk missed.
func TestSecretsOfTheIssueInObjects(t *testing.T) {
	b64kc := base64.StdEncoding.EncodeToString([]byte(kubeconfig("kc-token-0123456789abcdef")))
	obj := decode(t, `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    ghp_0123456789abcdefghijABCDEFGHIJ012345: "true"
    team: ml
spec:
  containers:
  - name: c
    env:
    - {name: PGPASSWORD, value: 1234}
    - {name: KUBECONFIG_DATA, value: "`+b64kc+`"}
    - {name: WORKERS, value: 8}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists}
  volumes:
  - name: creds
    secret: {secretName: creds}
  - name: cfg
    configMap: {name: cfg}
`)
	cm := decode(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  app.yaml: |
    database:
      host: db
      password: nested-deep-pw
      pool: 8
  settings: "plain"
`)
	sec := decode(t, `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {pin: 4711, enabled: true}
`)
	r := newTest(t)
	r.ObjectAt("pod.yaml", obj)
	r.ObjectAt("cm.yaml", cm)
	r.ObjectAt("secret.yaml", sec)
	all := encode(t, obj) + encode(t, cm) + encode(t, sec)
	for _, s := range []string{"ghp_0123456789", "1234", b64kc[:40], "nested-deep-pw", "4711"} {
		require.NotContains(t, all, s)
	}
	for _, k := range []string{`"team":"ml"`, `"value":8`, "nvidia.com/gpu", `"secretName":"creds"`, "host: db", "pool: 8", `"settings":"plain"`} {
		require.Contains(t, all, k)
	}
	require.Equal(t, []string{"github-token", "env-secret", "base64-secret"}, rulesIn(encode(t, obj)))
	require.Equal(t, []string{"secret-assignment"}, rulesIn(encode(t, cm)))
	require.Equal(t, []string{"kubernetes-secret", "kubernetes-secret"}, rulesIn(encode(t, sec)))
	locs, _ := r.Locations()
	require.Contains(t, locs, Location{File: "pod.yaml", Field: "metadata.annotations (a key)", Rule: "github-token"})
	require.Contains(t, locs, Location{File: "cm.yaml", Field: "data.app.yaml", Rule: "secret-assignment"})

	// The whole object still encodes to YAML that decodes.
	y, err := yaml.Marshal(obj)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, yaml.Unmarshal(y, &back))
}

// TestPodYAMLThatDoesNotParse: redaction does not depend on decoding. A Pod whose YAML is
// broken (a tab, an unclosed quote) is redacted as text, and its env values still go.
func TestPodYAMLThatDoesNotParse(t *testing.T) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\n\tbad: tab\nspec:\n  containers:\n  - name: c\n    env:\n" +
		"    - name: PGPASSWORD\n      value: \"98765\"\n    - name: HF_TOKEN\n      value: opaque-hf-value\n    - name: HOME\n      value: /root\n    args: [\"--x\n"
	r := newTest(t)
	out, ok := r.resource("resources/core/Pod/ml/broken.yaml", []byte(pod), 1<<20)
	require.False(t, ok, "it does not decode")
	require.Nil(t, out)
	var sb strings.Builder
	_, err := r.Copy(t.Context(), &sb, strings.NewReader(pod), "resources/core/Pod/ml/broken.yaml")
	require.NoError(t, err)
	require.NotContains(t, sb.String(), "98765")
	require.NotContains(t, sb.String(), "opaque-hf-value")
	require.Contains(t, sb.String(), "value: /root")
	require.Equal(t, []string{"env-secret", "env-secret"}, rulesIn(sb.String()))
}

// TestBase64Triggers: each marker's encoding is found whatever its alignment.
func TestBase64Triggers(t *testing.T) {
	trig := base64Triggers("client-key-data")
	require.Len(t, trig, 3)
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + "client-key-data: abc"))
		found := false
		for _, tr := range trig {
			found = found || strings.Contains(enc, tr)
		}
		require.True(t, found, "alignment %d: %s", pad, enc)
	}
}

func TestDockerConfigAsObject(t *testing.T) {
	cfg := map[string]any{"auths": map[string]any{"r.internal": map[string]any{"auth": base64.StdEncoding.EncodeToString([]byte("u:pw123456"))}}}
	js, _ := json.Marshal(cfg)
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"config.json": string(js)}}
	r := newTest(t)
	r.Object(obj)
	require.NotContains(t, fmt.Sprint(obj), "dTpwdzEyMzQ1Ng")
}
