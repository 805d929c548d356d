package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reportForms are secret forms of issue 22 that reached analyze's JSON and HTML reports, as
// log lines just above a failure, so that they are in its evidence window; secret is what must
// not reach any report form.
var reportForms = []struct{ lines, secret string }{
	{"stripe.api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dcA9Zq2bXw\n", "4eC39HqLyjWDarjtT1zdp7dc"},
	{"refund worker uses rk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUv0123\n", "51H8xYzAbCdEfGhIjKlMnOpQrStUv0123"},
	{"+ curl -sf -u deploy:Tr4in1ngPa55 https://nexus.internal/repository/models/\n", "Tr4in1ngPa55"},
	{"+ docker login -u robot -p Rb0tPassw0rd9 registry.internal:5000\n", "Rb0tPassw0rd9"},
	{"+ sshpass -p N0d3R00tPw ssh root@worker-3 nvidia-smi\n", "N0d3R00tPw"},
	{"notify https://api.telegram.org/bot7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7/sendMessage\n", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7"},
	{"\x1b[1;33mpassword\x1b[0m=\x1b[32mC0l0urfulPw\x1b[0m host=db\n", "C0l0urfulPw"},
	{"Password:\nPr0mptedSecret\n", "Pr0mptedSecret"},
	{`{"type": "service_account", "private_key_id": "4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"}` + "\n", "4f9c2e0d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"},
}

// TestReportFormsHoldNoPlantedSecret: each form in a log just above a CUDA OOM; no report form
// (text, JSON, Markdown, HTML) holds it, and --no-redact shows it in the JSON and HTML reports
// (so it was in the reports' text to be masked).
func TestReportFormsHoldNoPlantedSecret(t *testing.T) {
	dir := t.TempDir()
	for i, f := range reportForms {
		p := filepath.Join(dir, fmt.Sprintf("rank%d.log", i))
		log := "2026-03-14T10:00:00Z starting rank\n" + f.lines + strings.TrimPrefix(oomLine, "2026-03-14T10:00:05Z ")
		require.NoError(t, os.WriteFile(p, []byte(log), 0o644))
		t.Run(f.secret, func(t *testing.T) {
			formats := []string{"text", "json", "md", "html"}
			if testing.Short() {
				formats = []string{"json"} // every form is written from the same redacted report
			}
			for _, format := range formats {
				args := []string{"analyze", "--format", format, p}
				code, out, stderr := run(t, args...)
				require.Equal(t, 0, code, stderr)
				require.NotContains(t, out, f.secret, format)
				require.NotContains(t, stderr, f.secret, format)
				if format == "json" || format == "html" {
					require.Contains(t, out, "[REDACTED:", format)
					code, shown, stderr := run(t, append(args, "--no-redact")...)
					require.Equal(t, 0, code, stderr)
					require.Contains(t, shown, f.secret, "%s: the form is in the report's text", format)
				}
			}
		})
	}
}
