package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChatTemplateMissing: a job that applies a chat template its base model's tokenizer does
// not have is a configuration error, named by its rule and, with the specific rules off, by
// the vocabulary, not hub-offline for the documentation link the message ends with.
func TestChatTemplateMissing(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// https://github.com/zai-org/GLM-4/issues/551
	log := "Traceback (most recent call last):\n" +
		"  File \"/home/leege/anaconda3/envs/glm4/lib/python3.10/site-packages/transformers/tokenization_utils_base.py\", line 2025, in get_chat_template\n" +
		"    raise ValueError(\n" +
		"ValueError: Cannot use apply_chat_template() because tokenizer.chat_template is not set and no template argument was passed! For information about writing templates and setting the tokenizer.chat_template attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating\n"
	for _, tt := range []struct {
		name       string
		rules      []*Rule
		confidence Confidence
	}{
		{"both tiers", all, ConfidenceHigh},
		{"the second tier alone", WithoutSpecific(all), ConfidenceMedium},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, tt.rules, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, tt.confidence, res.Confidence)
		})
	}
}
