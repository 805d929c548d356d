package redact

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

func newTest(t testing.TB, extra ...Rule) *Redactor {
	t.Helper()
	r, err := New(Options{Key: []byte("test-key"), Extra: extra})
	require.NoError(t, err)
	return r
}

var tokenRE = regexp.MustCompile(`\[REDACTED:([a-z0-9._-]+):[0-9a-f]{8}\]`)

// rulesIn returns the rule ids of the tokens in s, in order.
func rulesIn(s string) []string {
	var ids []string
	for _, m := range tokenRE.FindAllStringSubmatch(s, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestBuiltinRules(t *testing.T) {
	tests := []struct {
		rule, in, secret string
	}{
		{"hf-token", "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"},
		{"hf-token", "\x1b[32mhf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567\x1b[0m", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"},
		{"aws-access-key-id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"aws-secret-access-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"gcp-api-key", "key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&q=x", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"},
		{"azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + strings.Repeat("Zm9vYmFy", 11) + "==;EndpointSuffix=core.windows.net", strings.Repeat("Zm9vYmFy", 11)},
		{"azure-sas-token", "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=AbC%2Bdef123456789XyZ%3D&se=2026", "AbC%2Bdef123456789XyZ%3D"},
		{"azure-client-secret", "client secret Abc8Q~abcdefghijklmnopqrstuvwxyz0123456 set", "Abc8Q~abcdefghijklmnopqrstuvwxyz0123456"},
		{"github-token", "git clone https://x-access-token@github.com ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345"},
		{"github-token", "GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
		{"gitlab-token", "using glpat-AbCdEfGhIjKlMnOpQrSt for the registry", "glpat-AbCdEfGhIjKlMnOpQrSt"},
		{"slack-token", "slack client xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
		{"slack-webhook", "posting to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"jwt", "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		{"authorization-header", `curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA==" https://x`, "dXNlcjpwYXNzd29yZA=="},
		{"bearer-token", "retrying with bearer abcdefghijklmnop0123456789", "abcdefghijklmnop0123456789"},
		{"private-key", `"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n"`, "MIIEvQIBADANBgkq"},
		{"url-credentials", "pip install --index-url https://builder:Sup3rS3cret@pypi.internal/simple torch", "Sup3rS3cret"},
		{"database-url", "DATABASE_URL=postgresql://app:pa55w0rd!@db.internal:5432/runs", "pa55w0rd!"},
		{"database-url", "cache at redis://:r3disPass@redis:6379/0", "r3disPass"},
		{"database-connection-string", "Server=tcp:db,1433;Database=runs;User Id=app;Password=Tr1cky$pass;Encrypt=true", "Tr1cky$pass"},
		{"wandb-api-key", "wandb login 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"},
		{"comet-api-key", "COMET_API_KEY=AbCdEfGhIjKlMnOpQrStUv", "AbCdEfGhIjKlMnOpQrStUv"},
		{"openai-api-key", "client = OpenAI() # sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
		{"netrc-password", "machine api.wandb.ai login user password s3cr3tnetrc", "s3cr3tnetrc"},
		{"secret-assignment", "db_password=hunter2hunter2 epochs=3", "hunter2hunter2"},
		{"secret-assignment", `{"apiKey": "c2VjcmV0LXZhbHVl", "epochs": 3}`, "c2VjcmV0LXZhbHVl"},
		{"secret-assignment", `config {\"client_secret\": \"s3cr3t-in-json\"}`, "s3cr3t-in-json"},
		{"secret-assignment", "python train.py --db-password Sw0rdfish99 --epochs 3", "Sw0rdfish99"},
		{"secret-assignment", "PGPASSWORD='quoted secret' psql", "quoted secret"},
	}
	r := newTest(t)
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			out := r.Line(tt.in)
			require.NotContains(t, out, tt.secret, "the secret is gone")
			require.Equal(t, []string{tt.rule}, rulesIn(out), "masked once, by the most specific rule: %s", out)
		})
	}
}

func TestOrdinaryTextIsLeftAlone(t *testing.T) {
	r := newTest(t)
	for _, s := range []string{
		"TOKENIZERS_PARALLELISM=false max_tokens=512 PWD=/workspace",
		"2026-03-14T10:00:01.123Z step=1200 loss=2.3456 lr=1e-4 grad_norm=0.87",
		"KeyError: 'input_ids'",
		"Downloading https://huggingface.co/meta-llama/Llama-3-8B/resolve/main/config.json",
		"using bearer authentication",
		"PASSWORD_FILE=/etc/secret/pw token_count: 3 secret=$DB_SECRET api_key=${API_KEY}",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
		"NCCL WARN Timeout while waiting for key: store/rank3",
		"[REDACTED:hf-token:0123abcd] token=[REDACTED:secret-assignment:89abcdef]",
		"",
	} {
		require.Equal(t, s, r.Line(s))
	}
	require.Empty(t, r.Summary(), "nothing counted")
}

func TestTokensAreDeterministicPerKey(t *testing.T) {
	a := newTest(t)
	one := a.Line("HF_TOKEN=hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	require.Equal(t, one, a.Line("HF_TOKEN=hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "same secret, same token")
	two := a.Line("HF_TOKEN=hf_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB")
	require.NotEqual(t, one, two, "two secrets can be told apart")
	require.Equal(t, one, a.Line(one), "redacting twice changes nothing")

	b, err := New(Options{Key: []byte("another-key")})
	require.NoError(t, err)
	require.NotEqual(t, one, b.Line("HF_TOKEN=hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "the token depends on the key")
	c1, err := New(Options{})
	require.NoError(t, err)
	c2, err := New(Options{})
	require.NoError(t, err)
	require.NotEqual(t, c1.Line(one[:9]+"hf_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"), c2.Line(one[:9]+"hf_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"), "a random key per Redactor")
	require.Equal(t, []bundle.RedactionRule{{ID: "hf-token", Count: 3}}, a.Summary())
}

func TestSecretName(t *testing.T) {
	for _, n := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "db-password", "apiKey", "clientSecret", "GOOGLE_APPLICATION_CREDENTIALS", "BASIC_AUTH", "MLFLOW_TRACKING_PASSWORD", "--hf-token", "DB_PWD"} {
		require.True(t, SecretName(n), n)
	}
	for _, n := range []string{"TOKENIZERS_PARALLELISM", "MAX_TOKENS", "PASSWORD_FILE", "SECRET_NAME", "PWD", "OLDPWD", "MASTER_ADDR", "NCCL_SOCKET_IFNAME", "KeyError", "monkey", ""} {
		require.False(t, SecretName(n), n)
	}
}

func TestUserRules(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.txt"), []byte("corp-internal-pw-1\n\ncorp-internal-pw-2\r\n"), 0o600))
	path := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`rules:
- id: acme-token
  pattern: 'acme_(?P<secret>[a-z0-9]{12})'
- id: acme-values
  literalsFile: values.txt
- id: acme-env
  envNames: '^ACME_'
  keywords: [acme_]
`), 0o600))
	rules, err := LoadRules(path)
	require.NoError(t, err)
	require.Len(t, rules, 3)
	require.Equal(t, []string{"corp-internal-pw-1", "corp-internal-pw-2"}, rules[1].Literals)
	r := newTest(t, rules...)
	out := r.Line("login with corp-internal-pw-2 then acme_abcdef123456 and ACME_REGION=eu-west-1")
	require.Equal(t, []string{"acme-values", "acme-token", "acme-env"}, rulesIn(out), out)
	require.NotContains(t, out, "corp-internal-pw-2")
	require.NotContains(t, out, "abcdef123456")
	require.NotContains(t, out, "eu-west-1")

	obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"env": []any{
		map[string]any{"name": "ACME_ENDPOINT", "value": "internal.acme"},
	}}}}}
	r.Object(obj)
	require.Equal(t, []string{"acme-env"}, rulesIn(fmt.Sprint(obj)))
}

func TestLoadRulesErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, yaml, want string }{
		{"bad yaml", "rules: [", "bad.yaml: "},
		{"unknown field", "rules:\n- id: x\n  regex: 'a'\n", `unknown field "regex"`},
		{"bad id", "rules:\n- id: 'Bad Id'\n  pattern: 'abc'\n", `rule 1: id "Bad Id"`},
		{"bad regexp", "rules:\n- id: x\n  pattern: 'a(('\n", `rule 1: rule "x": pattern: error parsing regexp`},
		{"two kinds", "rules:\n- id: x\n  pattern: 'abc'\n  literals: [abcdef]\n", "set exactly one of"},
		{"short literal", "rules:\n- id: x\n  literals: [ab]\n", "shorter than 4 bytes"},
		{"missing file", "rules:\n- id: x\n  literalsFile: nope.txt\n", `rule "x": literalsFile: open`},
		{"duplicate", "rules:\n- id: x\n  literals: [abcdef]\n- id: x\n  literals: [ghijkl]\n", `rule id "x" is used twice`},
		{"builtin id", "rules:\n- id: hf-token\n  literals: [abcdef]\n", `rule id "hf-token" is used twice`},
		{"empty", "other: 1\n", "unknown field"},
		{"no rules", "rules: []\n", "no rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tt.yaml), 0o600))
			_, err := LoadRules(p)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.Contains(t, err.Error(), p, "names the file")
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	_, err := LoadRules(filepath.Join(dir, "absent.yaml"))
	require.ErrorContains(t, err, "absent.yaml")
}

func TestConcurrentUse(t *testing.T) {
	r := newTest(t)
	var wg sync.WaitGroup
	outs := make([]string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sb strings.Builder
			for range 500 {
				sb.WriteString(r.Line("HF_TOKEN=hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA password=hunter2hunter2"))
			}
			outs[g] = sb.String()
		}()
	}
	wg.Wait()
	for _, o := range outs[1:] {
		require.Equal(t, outs[0], o)
	}
	require.Equal(t, []bundle.RedactionRule{{ID: "hf-token", Count: 4000}, {ID: "secret-assignment", Count: 4000}}, r.Summary())
}
