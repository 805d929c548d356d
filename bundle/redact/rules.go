package redact

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rule is a redaction rule: a built-in one or one of the user's. Exactly one of Pattern,
// Literals (or LiteralsFile) and EnvNames is set.
type Rule struct {
	// ID names the rule in tokens, the manifest's summary and reports: [a-z0-9._-]+.
	ID string `json:"id"`
	// Pattern is a Go regular expression. The text of its group named "secret" is masked
	// (groups "secret2", "secret3"... are alternatives); without such a group, the whole match.
	Pattern string `json:"pattern,omitempty"`
	// Keywords are literals (matched ignoring ASCII case) of which a line must hold one before
	// Pattern runs on it. Without them the pattern's literal prefix is used, or the pattern
	// runs on every line (slower).
	Keywords []string `json:"keywords,omitempty"`
	// Literals are exact values masked wherever they appear.
	Literals []string `json:"literals,omitempty"`
	// LiteralsFile names a file of literal values, one a line (relative to the rules file).
	LiteralsFile string `json:"literalsFile,omitempty"`
	// EnvNames is a regular expression over environment variable names: the values of the
	// matching variables are masked in objects, and in "NAME=value" text.
	EnvNames string `json:"envNames,omitempty"`
}

// rulesFile is the YAML of LoadRules.
type rulesFile struct {
	Rules []Rule `json:"rules"`
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// minLiteral is the shortest literal value accepted: shorter ones would mask ordinary text.
const minLiteral = 4

// LoadRules reads a user's rules file:
//
//	rules:
//	- id: acme-token
//	  pattern: 'acme_(?P<secret>[a-z0-9]{32})'
//	- id: acme-passwords
//	  literalsFile: passwords.txt
//	- id: acme-env
//	  envNames: '^ACME_'
func LoadRules(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f rulesFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %s", path, firstLine(err.Error()))
	}
	if len(f.Rules) == 0 {
		return nil, fmt.Errorf("%s: no rules (expected a top-level \"rules:\" list)", path)
	}
	for i := range f.Rules {
		r := &f.Rules[i]
		if r.LiteralsFile != "" {
			p := r.LiteralsFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(path), p)
			}
			lits, err := readLiterals(p)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %q: literalsFile: %w", path, r.ID, err)
			}
			r.Literals = append(r.Literals, lits...)
		}
		if _, err := compileRule(*r); err != nil {
			return nil, fmt.Errorf("%s: rule %d: %w", path, i+1, err)
		}
	}
	if err := checkUnique(f.Rules); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Rules, nil
}

func readLiterals(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		v := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(v) == "" {
			continue
		}
		if len(v) < minLiteral {
			return nil, fmt.Errorf("%s:%d: value shorter than %d bytes would mask ordinary text", path, n, minLiteral)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func checkUnique(rules []Rule) error {
	seen := map[string]bool{}
	for _, r := range builtins {
		seen[r.id] = true
	}
	for _, r := range rules {
		if seen[r.ID] {
			return fmt.Errorf("rule id %q is used twice (or by a built-in rule)", r.ID)
		}
		seen[r.ID] = true
	}
	return nil
}

// compileRule checks a user rule and compiles it.
func compileRule(r Rule) (*matcher, error) {
	if !idRE.MatchString(r.ID) {
		return nil, fmt.Errorf("id %q: use lower-case letters, digits, '.', '_' and '-'", r.ID)
	}
	set := 0
	for _, b := range []bool{r.Pattern != "", len(r.Literals) > 0, r.EnvNames != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("rule %q: set exactly one of pattern, literals (or literalsFile) and envNames", r.ID)
	}
	m := &matcher{id: r.ID}
	switch {
	case r.Pattern != "":
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return nil, fmt.Errorf("rule %q: pattern: %s", r.ID, firstLine(err.Error()))
		}
		m.addRegexp(re)
		m.triggers = r.Keywords
		if len(m.triggers) == 0 {
			if prefix, _ := re.LiteralPrefix(); len(prefix) >= 2 {
				m.triggers = []string{prefix}
			}
		}
	case len(r.Literals) > 0:
		for _, l := range r.Literals {
			if len(l) < minLiteral {
				return nil, fmt.Errorf("rule %q: literal shorter than %d bytes would mask ordinary text", r.ID, minLiteral)
			}
			if strings.ContainsAny(l, "\n\r") {
				return nil, fmt.Errorf("rule %q: a literal holds a line break", r.ID)
			}
		}
		m.literals = r.Literals
	case r.EnvNames != "":
		re, err := regexp.Compile(r.EnvNames)
		if err != nil {
			return nil, fmt.Errorf("rule %q: envNames: %s", r.ID, firstLine(err.Error()))
		}
		m.envName = re.MatchString
		// In text: NAME=value, NAME: value, "NAME": "value".
		m.addRegexp(assignRE)
		m.nameOK = re.MatchString
		m.valueOK = plausibleValue
		m.triggers = r.Keywords
	}
	for _, k := range m.triggers {
		if k == "" {
			return nil, fmt.Errorf("rule %q: empty keyword", r.ID)
		}
	}
	return m, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// matcher is a compiled rule.
type matcher struct {
	id  string
	res []*regexp.Regexp
	// groups[i] are the submatch indexes of res[i]'s "secret*" groups; empty means the whole match.
	groups [][]int
	// nameGroup[i] is the index of res[i]'s "name" group, or -1.
	nameGroup []int
	nameOK    func(string) bool
	valueOK   func(string) bool
	triggers  []string
	literals  []string
	// envName, when set, says which environment variables of objects hold secrets.
	envName func(string) bool
	// block: the match may continue on the following lines (a private key).
	block bool
	// local, when set, is tried at each trigger (b[start:end]) instead of regular expressions.
	local func(r *Redactor, b []byte, start, end int) (span, bool)
}

func (m *matcher) addRegexp(re *regexp.Regexp) {
	var gs []int
	name := -1
	for i, n := range re.SubexpNames() {
		switch {
		case strings.HasPrefix(n, "secret"):
			gs = append(gs, i)
		case n == "name":
			name = i
		}
	}
	m.res = append(m.res, re)
	m.groups = append(m.groups, gs)
	m.nameGroup = append(m.nameGroup, name)
}

// secretWords end the names of variables, flags and keys whose values are secrets. The last
// part of the name must be one of them (HF_TOKEN, apiKey, --db-password, PGPASSWORD), so that
// TOKENIZERS_PARALLELISM, max_tokens or PASSWORD_FILE are left alone.
var (
	secretWords = map[string]bool{
		"PASSWORD": true, "PASSWD": true, "PASS": true, "PWD": true, "PASSPHRASE": true,
		"TOKEN": true, "SECRET": true, "KEY": true, "APIKEY": true, "CREDENTIAL": true,
		"CREDENTIALS": true, "CREDS": true, "AUTH": true, "COOKIE": true,
	}
	// weakWords are not enough alone: only as the last part of a longer name (DB_PWD, API_KEY).
	weakWords      = map[string]bool{"PWD": true, "OLDPWD": true, "KEY": true, "AUTH": true, "PASS": true, "COOKIE": true}
	secretSuffixes = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "CREDENTIALS"}
)

// SecretName reports whether an environment variable, flag or key of that name holds a
// secret by its name alone.
func SecretName(name string) bool {
	parts := nameParts(name)
	if len(parts) == 0 {
		return false
	}
	last := parts[len(parts)-1]
	if n := len(parts); n >= 2 && last == "DATA" && (parts[n-2] == "KEY" || parts[n-2] == "CERTIFICATE") {
		return true // a kubeconfig's client-key-data and client-certificate-data
	}
	if n := len(parts); n >= 3 && last == "ID" && parts[n-2] == "KEY" && parts[n-3] == "PRIVATE" {
		return true // a service account's private_key_id names the key it signs with
	}
	if len(parts) == 1 && weakWords[last] {
		return false // the working directory, "waiting for key: store/rank3", "auth: ok"
	}
	if secretWords[last] {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	return false
}

// passwordName reports whether a name is a password's: its value may be all digits
// (PGPASSWORD=1234), where a token's or a key's may not (pad_token: 0, key: 1).
func passwordName(name string) bool {
	parts := nameParts(name)
	if len(parts) == 0 {
		return false
	}
	last := parts[len(parts)-1]
	switch last {
	case "PASSWORD", "PASSWD", "PASSPHRASE", "PIN":
		return true
	case "PASS", "PWD":
		return len(parts) > 1
	}
	return strings.HasSuffix(last, "PASSWORD") || strings.HasSuffix(last, "PASSWD")
}

// nameParts splits a name at non-alphanumerics and lower-to-upper case changes, upper-cased.
func nameParts(name string) []string {
	var parts []string
	start := -1
	for i := 0; i <= len(name); i++ {
		var c byte
		if i < len(name) {
			c = name[i]
		}
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		camel := alnum && start >= 0 && c >= 'A' && c <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z'
		if start >= 0 && (!alnum || camel) {
			parts = append(parts, strings.ToUpper(name[start:i]))
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	return parts
}

// plausibleValue rejects values that are not secrets but placeholders, references or flags.
func plausibleValue(v string) bool {
	if len(v) < minLiteral {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "nil", "undefined", "redacted", "<redacted>", "hidden", "xxxx", "****", "enabled", "disabled", "required", "optional", "bearer", "basic":
		return false
	}
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "{{") || strings.HasPrefix(v, "[REDACTED:") ||
		strings.HasPrefix(v, "<") || strings.Trim(v, "*xX") == "" {
		return false
	}
	if specialToken(v) {
		return false // a tokenizer's "[UNK]", "[PAD]"
	}
	if isReference(v) {
		return false // token=token, api_key=args.api_key: a variable, not its value
	}
	digits := true
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			digits = false
			break
		}
	}
	return !digits || len(v) >= 6
}

// specialToken reports whether v is a tokenizer's special token: [UNK], [CLS], [PAD]...
func specialToken(v string) bool {
	if len(v) < 3 || v[0] != '[' || v[len(v)-1] != ']' {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// plausibleFor is plausibleValue for the value of a named secret: a password may be all
// digits.
func plausibleFor(name, v string) bool {
	if plausibleValue(v) {
		return true
	}
	if len(v) < minLiteral || !passwordName(name) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// isReference reports whether v is code that fetches a secret rather than the secret: a call
// or an index (os.environ['K']), or an identifier with a secret word for its last part that
// is either a bare secret word or a compound name (self.token, hf_token, args.db_password).
func isReference(v string) bool {
	v = strings.TrimRight(v, ")]}")
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c == '(' || c == '[') && i > 0 && !(v[0] >= '0' && v[0] <= '9') {
			return true // os.environ['K'], os.getenv("K"), vault.read(...): code, not a value
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	if !SecretName(v) {
		return false
	}
	return strings.ContainsAny(v, "._") || secretWords[strings.ToUpper(v)]
}

// assignRE finds NAME=value, NAME: value, "NAME": "value" and --name=value; the name is
// checked by the rule (nameOK).
var assignRE = regexp.MustCompile(`(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)\\?["']?[ \t]*[:=][ \t]*` + valueRE)

// valueRE is a value after a separator: quoted (the quotes stay) or bare.
const valueRE = `(?:\\?"(?P<secret>[^"\\\n]+)\\?"|'(?P<secret2>[^'\n]+)'|(?P<secret3>[^\s"'\x60,;&]+))`

// builtins are the built-in rules, most specific first: when two rules match the same text,
// the earlier one wins, so "HF_TOKEN=hf_..." counts as hf-token, not secret-assignment.
var builtins = []*matcher{
	func() *matcher {
		m := builtin("private-key", []string{"private key"},
			`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)
		m.block = true
		return m
	}(),
	builtin("jwt", []string{"eyj"}, `eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*`),
	builtin("aws-access-key-id", []string{"akia", "asia", "abia", "acca"}, `(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}`),
	builtin("aws-secret-access-key", []string{"secret_access_key", "secretaccesskey", "secret-access-key"},
		`(?i:aws)?[_\-]?(?i:secret[_\-]?access[_\-]?key)\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`),
	builtin("gcp-api-key", []string{"aiza"}, `AIza[0-9A-Za-z_\-]{35}`),
	builtin("azure-storage-key", []string{"accountkey"}, `(?i:AccountKey)=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})`),
	builtin("azure-sas-token", []string{"sig="}, `[?&](?i:sig)=(?P<secret>[A-Za-z0-9%+/=]{16,})`),
	builtin("azure-client-secret", []string{"q~"}, `[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}`),
	builtin("hf-token", []string{"hf_", "api_org_"}, `(?:hf_|api_org_)[A-Za-z0-9]{30,}`),
	builtin("github-token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}`),
	builtin("gitlab-token", []string{"glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glffct-", "glimt-"},
		`gl(?:pat|ptt|dt|rt|cbt|oas|soat|ffct|imt)-[A-Za-z0-9_\-]{20,}`),
	builtin("slack-token", []string{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-", "xapp-"},
		`xox[abposr]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}`),
	builtin("slack-webhook", []string{"hooks.slack.com"}, `hooks\.slack\.com/(?:services|workflows)/(?P<secret>[A-Za-z0-9/_\-]{20,})`),
	// Stripe's secret and restricted keys, live and test (publishable pk_ keys are public).
	builtin("stripe-api-key", []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"},
		`(?:^|[^A-Za-z0-9])(?P<secret>(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,247})`),
	{id: "telegram-bot-token", triggers: []string{":a"}, local: telegramAt},
	builtin("openai-api-key", []string{"sk-"}, `(?:^|[^A-Za-z0-9_\-])(?P<secret>sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{32,})`),
	builtin("wandb-api-key", []string{"wandb"},
		`(?i:wandb)[A-Za-z_\-]*(?:[ \t]+(?i:login)(?:[ \t]+--[a-z\-]+)*[ \t]+|\\?["']?[ \t]*[:=][ \t]*\\?["']?)(?P<secret>(?:local-)?[0-9a-f]{40}|wandb_v1_[A-Za-z0-9_]{20,})`),
	builtin("comet-api-key", []string{"comet"},
		`(?i:comet)[A-Za-z_\-]*(?i:api)[_\-]?(?i:key)\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<secret>[A-Za-z0-9]{16,})`),
	{id: "database-url", triggers: []string{"://"}, local: urlPassword(true)},
	builtin("database-connection-string", []string{"password", "pwd"},
		`(?i:server|host|data source|address|addr|user id|uid|user|database|initial catalog)[ \t]*=[^;\n]*;(?:[^;\n]*;)*?[ \t]*(?i:password|pwd)[ \t]*=[ \t]*(?P<secret>[^;"'\n]+)`),
	{id: "url-credentials", triggers: []string{"://"}, local: urlPassword(false)},
	// mysql -u root -pS3cret: the password glued to -p (-P is the port).
	builtin("mysql-password", []string{"mysql", "mariadb"},
		`\b(?:mysql|mariadb)[a-z_\-]*\b[^\n]*?[ \t]-p(?:'(?P<secret>[^'\n]+)'|"(?P<secret2>[^"\n]+)"|(?P<secret3>[^\s'"]+))`),
	// docker login -p, sshpass -p, curl -u user:pass: a password by its place after a command.
	{id: "cli-password", triggers: cliTriggers(), local: cliPasswordAt},
	// A docker config's "auth" is base64 of user:password.
	withValue(dockerAuth, builtin("docker-auth", []string{`"auth`, `\"auth`},
		`\\?"auth\\?"[ \t]*:[ \t]*\\?"(?P<secret>[A-Za-z0-9+/]{4,}={0,2})\\?"`)),
	withValue(notScheme, builtin("authorization-header", []string{"authorization"},
		`(?i:authorization)\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?i:bearer|basic|token|digest|negotiate|apikey)[ \t]+)?(?P<secret>[^\s"'\\,;]{4,})`)),
	builtin("bearer-token", []string{"bearer"}, `(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)`),
	builtin("netrc-password", []string{"machine"}, `\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(?P<secret>\S+)`),
	// A base64 blob that holds a secret when decoded (a kubeconfig in an env var, a PEM key,
	// a docker config): found by the base64 of the words such blobs hold, then decoded and
	// redacted; the whole blob is masked when anything in it is.
	{id: "base64-secret", triggers: base64Triggers(base64Markers...), local: base64SecretAt},
	// name and value of an env var written as text ({"name":"PGPASSWORD","value":"1234"},
	// {name: X, value: y}): the value, by the name, as in objects.
	{id: ruleEnv, triggers: []string{"value"}, local: envPairAt},
	// Last: a value assigned to a secret-looking name, in any of the usual spellings. It is
	// checked where its trigger words are found, not by a regular expression: "token" and
	// "key" are in most lines of a training log (max_tokens, tokens_per_sec).
	{id: "secret-assignment", local: func(_ *Redactor, b []byte, _, end int) (span, bool) { return assignmentAt(b, end) }, triggers: []string{"password", "passwd", "pass", "pwd", "passphrase",
		"token", "secret", "key", "credential", "credentials", "creds", "auth", "cookie", "pin", "key-data", "certificate-data", "key_id", "keyid"}},
}

// Object-level rules, with no pattern: they fire on a field of a Kubernetes object.
const (
	ruleEnv    = "env-secret"        // an env var whose name looks secret
	ruleSecret = "kubernetes-secret" // a value of a Secret's data or stringData
	ruleArg    = "secret-assignment" // "--password", "VALUE" in args: the same rule as in text
)

// dbSchemes are the URL schemes of databases and queues: their credentials are database-url's.
var dbSchemes = map[string]bool{
	"postgres": true, "postgresql": true, "mysql": true, "mariadb": true, "mongodb": true, "mongodb+srv": true,
	"redis": true, "rediss": true, "amqp": true, "amqps": true, "mssql": true, "sqlserver": true,
	"clickhouse": true, "cockroachdb": true, "oracle": true, "snowflake": true,
}

// urlPassword finds the password of a URL whose "://" is at b[start:end]: what follows the
// first ':' of the user information, up to the last '@' of the authority, so that a password
// holding an '@' ("https://u:p@ss@host") is masked whole. db selects database URLs (their
// rule is database-url) or the others.
func urlPassword(db bool) func(*Redactor, []byte, int, int) (span, bool) {
	return func(_ *Redactor, b []byte, start, end int) (span, bool) {
		s := start
		for s > 0 && (isAlnum(b[s-1]) || b[s-1] == '+' || b[s-1] == '.' || b[s-1] == '-') {
			s--
		}
		if s == start || !(b[s] >= 'a' && b[s] <= 'z' || b[s] >= 'A' && b[s] <= 'Z') {
			return span{}, false
		}
		if dbSchemes[strings.ToLower(string(b[s:start]))] != db {
			return span{}, false
		}
		stop := end
		for stop < len(b) && !urlAuthorityEnd(b[stop]) {
			stop++
		}
		at := bytes.LastIndexByte(b[end:stop], '@')
		if at < 0 {
			return span{}, false
		}
		colon := bytes.IndexByte(b[end:end+at], ':')
		if colon < 0 || colon+1 == at {
			return span{}, false
		}
		v := span{start: end + colon + 1, end: end + at}
		if p := string(b[v.start:v.end]); strings.HasPrefix(p, "$") || strings.HasPrefix(p, "{{") || strings.HasPrefix(p, tokenPrefix) {
			return span{}, false
		}
		return v, true
	}
}

func urlAuthorityEnd(c byte) bool {
	switch c {
	case '/', '?', '#', ' ', '\t', '\r', '\n', '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return false
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// notScheme rejects an Authorization header's scheme word taken for its value ("Authorization:
// Bearer" with the token on the next line).
func notScheme(v string) bool {
	switch strings.ToLower(v) {
	case "bearer", "basic", "token", "digest", "negotiate", "apikey":
		return false
	}
	return true
}

// dockerAuth accepts a docker config's "auth" value: base64 of user:password.
func dockerAuth(v string) bool {
	dec, err := base64.StdEncoding.DecodeString(v)
	return err == nil && bytes.IndexByte(dec, ':') > 0
}

func withValue(ok func(string) bool, m *matcher) *matcher {
	m.valueOK = ok
	return m
}

func builtin(id string, triggers []string, patterns ...string) *matcher {
	m := &matcher{id: id, triggers: triggers}
	for _, p := range patterns {
		m.addRegexp(regexp.MustCompile(p))
	}
	return m
}
