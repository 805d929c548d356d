package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/report"
)

// planted is a bundle with secrets of every kind the issue names, in env vars, args, logs,
// annotations and a Secret, and the counts each rule must report.
type planted struct {
	dir     string
	secrets []string
	want    map[string]int
}

// fill makes a deterministic filler of n characters from an alphabet.
func fill(seed, n int, alphabet string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteByte(alphabet[(seed*7+i*13)%len(alphabet)])
	}
	return b.String()
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexa  = "0123456789abcdef"
	b64   = alnum + "+/"
)

func plantBundle(t *testing.T) *planted {
	t.Helper()
	p := &planted{dir: t.TempDir(), want: map[string]int{}}
	write := func(rel, data string) {
		f := filepath.Join(p.dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte(data), 0o644))
	}
	secret := func(rule, value string) string {
		p.secrets = append(p.secrets, value)
		p.want[rule]++
		return value
	}
	write("manifest.json", `{"formatVersion":1,"target":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","namespace":"ml","name":"train"},`+
		`"options":{"redact":false},"files":[{"path":"logs/ml/train-master-0/pytorch.log","bytes":0,"truncated":true,"truncatedBytes":1000}],`+
		`"errors":[{"step":"logs","object":"Pod ml/x","message":"Get https://admin:`+secret("url-credentials", "GapPw"+fill(40, 12, alnum))+`@10.0.0.1:10250/containerLogs: EOF"}],"redaction":{"enabled":false,"rules":[]}}`)

	// Logs: two of every shape, each on its own line among ordinary training output.
	var log strings.Builder
	ts := func(i int) string { return fmt.Sprintf("2026-03-14T10:%02d:%02d.000000000Z ", i/60, i%60) }
	n := 0
	line := func(s string) { fmt.Fprintf(&log, "%s%s\n", ts(n), s); n++ }
	for i := range 2 {
		line(fmt.Sprintf("[rank0] step=%d loss=2.31 lr=1e-4 max_tokens=4096 tokens_per_sec=31000", i))
		line("HF_TOKEN=" + secret("hf-token", "hf_"+fill(i, 34, alnum)))
		line("aws configure set aws_access_key_id " + secret("aws-access-key-id", "AKIA"+fill(i, 16, upper)))
		line("aws_secret_access_key = " + secret("aws-secret-access-key", fill(i+1, 40, b64)))
		line("GET https://maps.googleapis.com/maps/api/geocode/json?key=" + secret("gcp-api-key", "AIza"+fill(i, 35, alnum)))
		line("conn DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + secret("azure-storage-key", fill(i+2, 86, b64)+"==") + ";EndpointSuffix=core.windows.net")
		line("GET https://acct.blob.core.windows.net/ckpt/model.pt?sv=2022-11-02&sig=" + secret("azure-sas-token", fill(i+3, 43, alnum)) + "&se=2026-03-15")
		line("msal: client secret " + secret("azure-client-secret", fmt.Sprintf("Pl%d8Q~", i)+fill(i+4, 34, alnum)) + " loaded")
		line("git push https://github.com/org/repo " + secret("github-token", "ghp_"+fill(i+5, 36, alnum)))
		line("registry login with " + secret("gitlab-token", "glpat-"+fill(i+6, 20, alnum)))
		line("notify: " + secret("slack-token", "xoxb-"+fill(i, 12, "0123456789")+"-"+fill(i+7, 24, alnum)))
		line("posting to https://hooks.slack.com/services/" + secret("slack-webhook", "T0"+fill(i, 8, upper)+"/B0"+fill(i+1, 8, upper)+"/"+fill(i+8, 24, alnum)))
		line("id token " + secret("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ"+fill(i, 30, alnum)+"."+fill(i+9, 43, alnum)))
		line(`curl -H "Authorization: Basic ` + secret("authorization-header", fill(i+10, 24, alnum)+"==") + `" https://mlflow.internal`)
		line("retrying with bearer " + secret("bearer-token", fill(i+11, 32, alnum)))
		line("pip install --index-url https://builder:" + secret("url-credentials", "Pip"+fill(i+12, 12, alnum)) + "@pypi.internal/simple torch")
		line("DATABASE_URL=postgresql://app:" + secret("database-url", "Db"+fill(i+13, 14, alnum)) + "@db.internal:5432/runs")
		line("Server=tcp:db,1433;Database=runs;User Id=app;Password=" + secret("database-connection-string", "Sql"+fill(i+14, 12, alnum)) + ";Encrypt=true")
		line("wandb login " + secret("wandb-api-key", fill(i+15, 40, hexa)))
		line("COMET_API_KEY=" + secret("comet-api-key", fill(i+16, 25, alnum)))
		line("client = OpenAI(api_key=os.environ['K']) # " + secret("openai-api-key", "sk-proj-"+fill(i+17, 40, alnum)))
		line("machine api.wandb.ai login user password " + secret("netrc-password", "Netrc"+fill(i+18, 20, alnum)))
		line("db_password=" + secret("secret-assignment", "Assign"+fill(i+19, 12, alnum)) + " epochs=3")
		line("python train.py --hub-token " + secret("secret-assignment", "Flag"+fill(i+20, 14, alnum)) + " --epochs 3")
		line("writing key -----BEGIN RSA PRIVATE KEY-----")
		body := []string{fill(i+21, 64, b64), fill(i+22, 64, b64), fill(i+23, 40, b64) + "=="}
		for _, b := range body {
			p.secrets = append(p.secrets, b)
			line(b)
		}
		p.want["private-key"]++
		line("-----END RSA PRIVATE KEY-----")
		// Issue 12's cases: a kubeconfig in base64, its client key alone, a docker config,
		// mysql -p, a numeric password, an '@' in a URL password, a token wrapped onto two
		// lines, a value on the line after its name, a YAML value below its key.
		kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: %s\n    token: %s\n",
			base64.StdEncoding.EncodeToString([]byte("-----BEGIN RSA PRIVATE KEY-----\n"+fill(i+24, 64, b64)+"\n-----END RSA PRIVATE KEY-----\n")), fill(i+25, 32, alnum))
		line("KUBECONFIG_DATA=" + secret("base64-secret", base64.StdEncoding.EncodeToString([]byte(kc))))
		line("    client-key-data: " + secret("base64-secret", base64.StdEncoding.EncodeToString([]byte("-----BEGIN EC PRIVATE KEY-----\n"+fill(i+26, 48, b64)+"\n-----END EC PRIVATE KEY-----\n"))))
		line(`{"auths":{"registry.internal":{"auth":"` + secret("docker-auth", base64.StdEncoding.EncodeToString([]byte("robot:"+fill(i+27, 16, alnum)))) + `"}}}`)
		line("mysql -h db -u root -p" + secret("mysql-password", "My"+fill(i+28, 10, alnum)) + " runs < schema.sql")
		line("PGPASSWORD=" + secret("secret-assignment", fmt.Sprintf("%d", 4711+i)) + " psql -h db")
		line("pip install -i https://builder:" + secret("url-credentials", "At@"+fill(i+29, 8, alnum)+"@x") + "@pypi.internal/simple torch")
		wrapped := "hf_" + fill(i+30, 34, alnum)
		p.secrets = append(p.secrets, wrapped[:12], wrapped[12:])
		p.want["hf-token"]++
		line("export HF_TOKEN=" + wrapped[:12])
		line(wrapped[12:] + " (token set)")
		line("export WANDB_API_KEY=")
		line(secret("secret-assignment", fill(i+31, 40, hexa)))
		line("config:")
		line("  db:")
		line("    password: |")
		p.want["secret-assignment"]++
		for _, part := range []string{"Blk" + fill(i+32, 12, alnum), "Blk" + fill(i+33, 12, alnum)} {
			p.secrets = append(p.secrets, part)
			line("      " + part)
		}
		line("  epochs: 3")
		line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
	}
	write("logs/ml/train-master-0/pytorch.log", log.String())

	// The job: env vars in the replica templates, a flag and its value in args.
	write("resources/kubeflow.org/PyTorchJob/ml/train.yaml", fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
  namespace: ml
  uid: j1
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","spec":{"pytorchReplicaSpecs":{"Master":{"template":{"spec":{"containers":[{"name":"pytorch","env":[{"name":"WANDB_API_KEY","value":"%s"}]}]}}}}}}
    notes: "pushed by CI with %s"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          initContainers:
          - name: fetch
            image: busybox
            env: [{name: HF_TOKEN, value: "%s"}, {name: HF_HOME, value: /cache}]
          containers:
          - name: pytorch
            image: pytorch:2.4
            args: ["train.py", "--db-password", "%s", "--epochs", "3", "--api-key=%s"]
            env:
            - {name: AWS_SECRET_ACCESS_KEY, value: "%s"}
            - {name: MLFLOW_TRACKING_PASSWORD, value: "%s"}
            - {name: TOKENIZERS_PARALLELISM, value: "false"}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.4
            env:
            - {name: GITHUB_TOKEN, value: "%s"}
            - {name: DB_PASSWORD, value: "%s"}
`, secret("env-secret", "LastApplied"+fill(1, 20, alnum)), secret("github-token", "ghp_"+fill(30, 36, alnum)),
		secret("env-secret", "InitHf"+fill(2, 20, alnum)), secret("secret-assignment", "ArgsPw"+fill(3, 14, alnum)),
		secret("secret-assignment", "ArgsKey"+fill(4, 14, alnum)), secret("env-secret", "AwsEnv"+fill(5, 34, alnum)),
		secret("env-secret", "Mlflow"+fill(6, 14, alnum)), secret("env-secret", "GhEnv"+fill(7, 20, alnum)),
		secret("env-secret", "DbEnv"+fill(8, 14, alnum))))

	// A pod of the job, with an ephemeral debug container.
	write("resources/core/Pod/ml/train-master-0.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: train-master-0, namespace: ml, uid: p1, labels: {training.kubeflow.org/job-name: train, training.kubeflow.org/replica-type: master}}
spec:
  containers: [{name: pytorch, image: pytorch:2.4, env: [{name: HF_TOKEN, value: "%s"}]}]
  ephemeralContainers: [{name: debug, image: busybox, env: [{name: API_TOKEN, value: "%s"}]}]
status: {phase: Failed}
`, secret("env-secret", "PodHf"+fill(9, 20, alnum)), secret("env-secret", "Ephemeral"+fill(10, 20, alnum))))

	// Issue 12's cases in objects: a token in an annotation key, a numeric password env var, a
	// kubeconfig in base64 in an env var, a password nested in a ConfigMap's YAML.
	kcEnv := base64.StdEncoding.EncodeToString([]byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: " + fill(14, 32, alnum) + "\n"))
	write("resources/core/Pod/ml/train-worker-0.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: train-worker-0
  namespace: ml
  uid: p2
  labels: {training.kubeflow.org/job-name: train, training.kubeflow.org/replica-type: worker}
  annotations:
    %s: "true"
spec:
  containers:
  - name: pytorch
    image: pytorch:2.4
    env:
    - {name: PGPASSWORD, value: "%s"}
    - {name: KUBECONFIG_DATA, value: "%s"}
    - {name: WORLD_SIZE, value: "3"}
status: {phase: Running}
`, secret("github-token", "ghp_"+fill(15, 36, alnum)), secret("env-secret", "8080"), secret("base64-secret", kcEnv)))
	write("resources/core/ConfigMap/ml/train-config.yaml", fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: train-config, namespace: ml}
data:
  app.yaml: |
    database:
      host: db.internal
      password: %s
      pool: 8
`, secret("secret-assignment", "Nested"+fill(16, 12, alnum))))
	// A Pod whose YAML does not parse (a tab): redacted as text, env values still masked.
	write("resources/core/Pod/ml/train-broken.yaml", fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-broken\n\tnamespace: ml\nspec:\n  containers:\n  - name: c\n    env:\n"+
		"    - name: DB_PASSWORD\n      value: \"%s\"\n    - name: HF_HOME\n      value: /cache\n", secret("env-secret", "Broken"+fill(17, 12, alnum))))

	// A Secret that should never have been collected.
	s1, s2 := secret("kubernetes-secret", "SecretData"+fill(11, 16, alnum)), secret("kubernetes-secret", "SecretData"+fill(12, 16, alnum))
	s3 := secret("kubernetes-secret", "StringData"+fill(13, 16, alnum))
	write("resources/core/Secret/ml/creds.yaml", fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: ml}
type: Opaque
data: {password: %s, token: %s}
stringData: {extra: "%s", pin: %s}
`, base64.StdEncoding.EncodeToString([]byte(s1)), base64.StdEncoding.EncodeToString([]byte(s2)), s3, secret("kubernetes-secret", "90210")))
	p.secrets = append(p.secrets, base64.StdEncoding.EncodeToString([]byte(s1)), base64.StdEncoding.EncodeToString([]byte(s2)))
	return p
}

// rawTar is the uncompressed tar stream of a bundle: what anyone who unpacks it can read.
func rawTar(t *testing.T, p string) []byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	return raw
}

// TestRedactPlantedSecrets is the measure: every planted secret is gone from the raw
// tar bytes, and the manifest's counts are exactly the planted ones.
func TestRedactPlantedSecrets(t *testing.T) {
	p := plantBundle(t)
	total := 0
	for _, n := range p.want {
		total += n
	}
	require.GreaterOrEqual(t, total, 50)
	raw := rawTar(t, tarSample(t, p.dir))
	for _, s := range p.secrets {
		enc := base64.StdEncoding.EncodeToString([]byte(s))
		require.True(t, bytes.Contains(raw, []byte(s)) || bytes.Contains(raw, []byte(enc)), "planted: %s", s)
	}

	out := filepath.Join(t.TempDir(), "redacted.tar.gz")
	code, stdout, stderr := run(t, "redact", p.dir, "-o", out, "--report")
	require.Equal(t, 0, code, stderr)
	raw = rawTar(t, out)
	leaks := 0
	for _, s := range p.secrets {
		// A whole value, not a run of the same characters inside another word: a short numeric
		// password ("8080") is also four digits of some masked value's hex token now and then.
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(s) + `\b`).Match(raw) {
			t.Errorf("leaked: %s", s)
			leaks++
		}
		// The report names the output path, a temporary directory whose random digits can
		// hold a short value ("2149808021" holds "8080"): it is taken out before looking.
		require.NotContains(t, strings.ReplaceAll(stdout, out, "OUT"), s, "the report never shows a value")
	}
	t.Logf("%d secrets planted, %d leaked", total, leaks)

	b, err := bundle.Open(t.Context(), out, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Empty(t, b.Warnings, "sizes and sha256 in the new manifest are right")
	got := map[string]int{}
	for _, r := range b.Manifest.Redaction.Rules {
		got[r.ID] = r.Count
	}
	require.Equal(t, p.want, got, "counts per rule")
	require.True(t, b.Manifest.Redaction.Enabled)
	require.True(t, b.Manifest.Options.Redact)
	require.Equal(t, "train", b.Manifest.Target.Name, "the rest of the manifest is kept")
	log := b.Manifest.File("logs/ml/train-master-0/pytorch.log")
	require.True(t, log.Truncated, "truncation recorded by collect is kept")
	require.EqualValues(t, 1000, log.TruncatedBytes)

	// --report: one line per masked secret, file:line for logs, file and field for objects.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Equal(t, fmt.Sprintf("Redacted %d secret(s) in 7 file(s) into %s", total, out), lines[total])
	require.Contains(t, lines, "logs/ml/train-master-0/pytorch.log:2\thf-token")
	require.Contains(t, lines, "manifest.json\terrors[0].message\turl-credentials")
	require.Contains(t, lines, "resources/core/Secret/ml/creds.yaml\tdata[\"password\"]\tkubernetes-secret")
	require.Contains(t, lines, "resources/kubeflow.org/PyTorchJob/ml/train.yaml\tspec.pytorchReplicaSpecs.Master.template.spec.containers[0].args[2]\tsecret-assignment")

	// The redacted bundle analyzes as before: same root cause.
	before, _ := analyzeJSON(t, nil, p.dir)
	after, _ := analyzeJSON(t, nil, out)
	require.Equal(t, before.RootCause.Category, after.RootCause.Category)
	require.Equal(t, before.Job.Replicas, after.Job.Replicas)

	// Redacting again finds nothing new and keeps the counts.
	again := filepath.Join(t.TempDir(), "again.tar.gz")
	code, stdout, stderr = run(t, "redact", out, "-o", again)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Redacted 0 secret(s)")
	b2, err := bundle.Open(t.Context(), again, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b2.Close()
	require.Equal(t, b.Manifest.Redaction, b2.Manifest.Redaction)
}

func TestRedactUserRules(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs/ml/p/c.log"), []byte("connecting with corp-secret-7781\nticket ACME-1234567890 opened\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.txt"), []byte("corp-secret-7781\n"), 0o644))
	rules := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte("rules:\n- id: corp-values\n  literalsFile: values.txt\n- id: acme-ticket\n  pattern: 'ACME-(?P<secret>[0-9]{10})'\n"), 0o644))
	out := filepath.Join(t.TempDir(), "o.tgz")
	code, stdout, stderr := run(t, "redact", dir, "-o", out, "--rules", rules)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "acme-ticket                  1")
	raw := rawTar(t, out)
	require.NotContains(t, string(raw), "corp-secret-7781")
	require.NotContains(t, string(raw), "1234567890")
	require.Contains(t, string(raw), "ticket ACME-[REDACTED:acme-ticket:")
	require.Contains(t, stderr, "manifest.json is missing", "a bundle without a manifest is redacted, with a warning")
}

func TestRedactErrors(t *testing.T) {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badRules, []byte("rules:\n- id: x\n  pattern: 'a(('\n"), 0o644))
	sample := filepath.Join(samplesDir, "pytorchjob-succeeded")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no output", []string{"redact", sample}, 2, "-o is required"},
		{"no input", []string{"redact", "-o", filepath.Join(dir, "x.tgz")}, 2, "accepts 1 arg"},
		{"bad rules", []string{"redact", sample, "-o", filepath.Join(dir, "x.tgz"), "--rules", badRules}, 1, "--rules " + badRules + ": rule 1"},
		{"missing input", []string{"redact", filepath.Join(dir, "nope.tgz"), "-o", filepath.Join(dir, "x.tgz")}, 1, "nope.tgz"},
		{"plain file to a tarball", []string{"redact", badRules, "-o", filepath.Join(dir, "x.tgz")}, 1, badRules + " is not a bundle but a plain log, redacted as text: write it to a log file (-o x.log)"},
		{"unwritable output", []string{"redact", sample, "-o", filepath.Join(dir, "no/such/dir/x.tgz")}, 1, "x.tgz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireExit(t, tt.code, tt.stderr, tt.args...) })
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	require.Equal(t, []string{"bad.yaml"}, names, "nothing written on error")
}

func TestRedactFlagsFillOptions(t *testing.T) {
	var got *RedactOptions
	cmd := NewCmdRedact(&IOStreams{}, func(o *RedactOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"b.tgz", "-o", "r.tgz", "--rules", "r.yaml", "--report", "--max-entries", "7"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, "b.tgz", got.Input)
	require.Equal(t, "r.tgz", got.Output)
	require.Equal(t, "r.yaml", got.RulesFile)
	require.True(t, got.Report)
	require.Equal(t, 7, got.Limits.MaxEntries)
}

// TestRedactYAMLStream: a resource file holding several documents has each redacted as an
// object; none is dropped.
func TestRedactYAMLStream(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "resources/core/List/ml"), 0o755))
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: \"1\"}\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: stream-secret-value}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, env: [{name: DB_PASSWORD, value: stream-env-value}]}]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "resources/core/List/ml/all.yaml"), []byte(stream), 0o644))
	out := filepath.Join(t.TempDir(), "o.tgz")
	code, _, stderr := run(t, "redact", dir, "-o", out)
	require.Equal(t, 0, code, stderr)
	raw := string(rawTar(t, out))
	require.NotContains(t, raw, "stream-secret-value")
	require.NotContains(t, raw, "stream-env-value")
	for _, kept := range []string{"kind: ConfigMap", "kind: Secret", "kind: Pod", "[REDACTED:kubernetes-secret:", "[REDACTED:env-secret:"} {
		require.Contains(t, raw, kept)
	}
	require.Equal(t, 2, strings.Count(raw, "\n---\n"), "three documents still")
}

// TestRedactKeepsTheEvidence: the samples hold no secret; redaction masks nothing in them (no
// step number, loss value, hash or label taken for a secret), and each redacted sample
// analyzes to the same report, the bundle's own description aside.
func TestRedactKeepsTheEvidence(t *testing.T) {
	if testing.Short() {
		t.Skip("redacts and analyzes every sample twice; skipped with -short")
	}
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(samplesDir, name)
			out := filepath.Join(t.TempDir(), "r.tar.gz")
			code, stdout, stderr := run(t, "redact", in, "-o", out)
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, "Redacted 0 secret(s)")
			before, _ := analyzeJSON(t, nil, in)
			after, _ := analyzeJSON(t, nil, out)
			before.Bundle, after.Bundle = report.BundleInfo{}, report.BundleInfo{}
			require.Equal(t, before, after)
		})
	}
}

// TestReportTextIsRedacted: the report of an unredacted bundle carried its secrets in its
// evidence and context lines; it is redacted by default, the same bytes each time (the tokens'
// key is the bundle's digest), and --no-redact shows the text as it is.
func TestReportTextIsRedacted(t *testing.T) {
	p := plantBundle(t)
	before, raw := analyzeJSON(t, nil, p.dir)
	leaks := 0
	for _, s := range p.secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("in the report: %s", s)
			leaks++
		}
	}
	require.Zero(t, leaks)
	require.NotNil(t, before.RootCause)
	warned := false
	for _, w := range before.Warnings {
		warned = warned || strings.Contains(w, "secret(s) in the report's text were masked") && strings.Contains(w, "--no-redact shows them")
	}
	require.True(t, warned, "%q", before.Warnings)
	_, again := analyzeJSON(t, nil, p.dir)
	require.Equal(t, string(raw), string(again), "the same bundle, the same report bytes")

	_, shown := analyzeJSON(t, nil, p.dir, "--no-redact")
	n := 0
	for _, s := range p.secrets {
		if bytes.Contains(shown, []byte(s)) {
			n++
		}
	}
	require.Positive(t, n, "--no-redact shows the text as it is")
}

// TestPromptRedactsKeyBodies: the log window of a prompt showed the base64 body of a private
// key (prompts were redacted line by line, and no body line alone looks like a key); windows
// are redacted as one text now.
func TestPromptRedactsKeyBodies(t *testing.T) {
	body := []string{fill(40, 64, b64), fill(41, 64, b64), fill(42, 40, b64) + "=="}
	log := "2026-03-14T10:00:00Z starting\n2026-03-14T10:00:01Z loaded deploy key:\n2026-03-14T10:00:01Z -----BEGIN OPENSSH PRIVATE KEY-----\n"
	for _, l := range body {
		log += "2026-03-14T10:00:01Z " + l + "\n"
	}
	log += "2026-03-14T10:00:01Z -----END OPENSSH PRIVATE KEY-----\n" + oomLine
	p := filepath.Join(t.TempDir(), "train.log")
	require.NoError(t, os.WriteFile(p, []byte(log), 0o644))
	code, out, stderr := run(t, "analyze", p, "--dry-run-prompt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "CUDA out of memory", "the window is in the prompt")
	for _, l := range body {
		require.NotContains(t, out, l)
	}
	require.Contains(t, out, "[REDACTED:private-key:")
}
