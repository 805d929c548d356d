package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// plantedForms are the secret forms of issue 22 that went through `coroner redact` whole: each
// row is the form, a realistic line (or lines), what must vanish and what must stay. They are
// redacted as a stream (Text, as Copy reads a log), so the rows of several lines exercise what
// one line says of the next.
var plantedForms = []struct {
	form, in string
	gone     []string
	kept     []string
}{
	{"stripe live secret key", "stripe.api_key set from env: sk_live_4eC39HqLyjWDarjtT1zdp7dcA9Zq2bXw\n",
		[]string{"4eC39HqLyjWDarjtT1zdp7dc"}, []string{"stripe.api_key set from env:"}},
	{"stripe live restricted key", "charging with rk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUv0123 (restricted)\n",
		[]string{"51H8xYzAbCdEfGhIjKlMnOpQrStUv0123"}, []string{"charging with", "(restricted)"}},
	{"stripe test keys", "STRIPE=sk_test_26PHem9AhJZvU623DfE1x4sd other=rk_test_9XyZaBcDeFgHiJkLmNoP\n",
		[]string{"26PHem9AhJZvU623DfE1x4sd", "9XyZaBcDeFgHiJkLmNoP"}, nil},
	{"curl -u user:pass", "+ curl -sf -u deploy:Tr4in1ngPa55 https://nexus.internal/repository/models/\n",
		[]string{"Tr4in1ngPa55"}, []string{"-u deploy:", "https://nexus.internal/repository/models/"}},
	{"curl --user user:pass", "curl --user 'ci-bot:s3cr3t-w0rd!' -O https://artifacts.internal/ckpt.pt\n",
		[]string{"s3cr3t-w0rd!"}, []string{"ci-bot:", "-O https://artifacts.internal/ckpt.pt"}},
	{"curl --user=user:pass", "curl --user=ci-bot:Zq8xLmP2wK -T model.bin https://upload.internal/\n",
		[]string{"Zq8xLmP2wK"}, []string{"ci-bot:", "-T model.bin"}},
	{"docker login -p", "+ docker login -u robot$ci -p Rb0tPassw0rd9 registry.internal:5000\n",
		[]string{"Rb0tPassw0rd9"}, []string{"-u robot$ci", "registry.internal:5000"}},
	{"docker login --password", "podman login --username ci --password 7hGfRtYu2Qw quay.internal\n",
		[]string{"7hGfRtYu2Qw"}, []string{"--username ci", "quay.internal"}},
	{"sshpass -p", "sshpass -p 'N0d3R00tPw' ssh -o StrictHostKeyChecking=no root@worker-3 nvidia-smi\n",
		[]string{"N0d3R00tPw"}, []string{"ssh -o StrictHostKeyChecking=no root@worker-3 nvidia-smi"}},
	{"sshpass -pPASS", "sshpass -pN0d3R00tPw rsync -a ckpt/ worker-3:/data\n",
		[]string{"N0d3R00tPw"}, []string{"rsync -a ckpt/ worker-3:/data"}},
	{"telegram bot token", "notify: POST https://api.telegram.org/bot7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7/sendMessage\n",
		[]string{"AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7"}, []string{"https://api.telegram.org/bot", "/sendMessage"}},
	{"telegram bot token alone", "TG_BOT=110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw notifier up\n",
		[]string{"AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"}, []string{"notifier up"}},
	{"password= with colour codes", "\x1b[1;33mpassword\x1b[0m=\x1b[32mC0l0urfulPw\x1b[0m host=db\n",
		[]string{"C0l0urfulPw"}, []string{"host=db"}},
	{"password: with colour codes around the value", "db \x1b[36mpassword:\x1b[0m \x1b[1mhunter2hunter\x1b[0m\n",
		[]string{"hunter2hunter"}, []string{"db "}},
	{"password on the line after a prompt", "Password:\nPr0mptedSecret\nLogin Succeeded\n",
		[]string{"Pr0mptedSecret"}, []string{"Password:", "Login Succeeded"}},
	{"password after a prompt with timestamps", "2026-03-14T10:00:01.000Z Enter passphrase for key '/root/.ssh/id_ed25519':\n2026-03-14T10:00:02.000Z c0rrect-h0rse-battery\n2026-03-14T10:00:02.000Z Identity added\n",
		[]string{"c0rrect-h0rse-battery"}, []string{"Enter passphrase for key '/root/.ssh/id_ed25519':", "Identity added"}},
	{"password after a sudo prompt", "[sudo] password for ubuntu:\n  Sud0Passw0rd\n",
		[]string{"Sud0Passw0rd"}, []string{"[sudo] password for ubuntu:"}},
	{"gcp service account private_key_id", `{"type": "service_account", "project_id": "ml-prod", "private_key_id": "4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d", "client_email": "trainer@ml-prod.iam.gserviceaccount.com"}` + "\n",
		[]string{"4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"}, []string{`"project_id": "ml-prod"`, "trainer@ml-prod.iam.gserviceaccount.com"}},
	{"gcp private_key_id as YAML", "  private_key_id: 4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d\n",
		[]string{"4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"}, []string{"private_key_id:"}},
}

func TestPlantedSecretForms(t *testing.T) {
	for _, tt := range plantedForms {
		t.Run(tt.form, func(t *testing.T) {
			r := newTest(t)
			out := r.Text(tt.in)
			for _, s := range tt.gone {
				require.NotContains(t, out, s, "%q", out)
			}
			for _, s := range tt.kept {
				require.Contains(t, out, s, "%q", out)
			}
			require.NotEmpty(t, rulesIn(out), "%q", out)
			require.Equal(t, strings.Count(tt.in, "\n"), strings.Count(out, "\n"), "the line count is kept")
			require.Equal(t, out, newTest(t).Text(out), "redacting twice changes nothing")
		})
	}
}

// TestPlantedFormLookalikes: text shaped like the forms above that holds no secret.
func TestPlantedFormLookalikes(t *testing.T) {
	r := newTest(t)
	for _, s := range []string{
		"curl -u deploy https://nexus.internal/",                   // no password: curl prompts
		"curl -sS -u \"$NEXUS_USER:$NEXUS_PASSWORD\" https://n/",   // a reference
		"docker login -u ci --password-stdin registry.internal",    // from stdin
		"docker run -p 8080:8080 trainer:latest",                   // a port, not a login
		"sshpass -e ssh root@worker-3",                             // from the environment
		"step 1200: 7123456789:AAHd loss 2.3",                      // too short for a bot token
		"Password:\nLogin Succeeded\n",                             // the prompt with no value echoed
		"\x1b[32mINFO\x1b[0m loss=2.345 lr=1e-4 tokens_per_sec=31", // colour, no secret
		`"client_id": "104739202837465738291", "key_id": "abc"`,    // ids, not keys
		"desk_live_mode=true sk_live",                              // a prefix alone
	} {
		require.Equal(t, s, r.Text(s), "changed")
	}
	require.Empty(t, r.Summary(), "nothing counted")
}
