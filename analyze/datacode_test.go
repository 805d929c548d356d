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

// TestJPEGDecoderLine: a JPEG decoder's complaint just before the traceback a run ends in
// names the data; the same libjpeg warnings in a run that trains on are no failure.
func TestJPEGDecoderLine(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// https://github.com/emedvedev/attention-ocr/issues/96: the traceback is cut before its
	// exception, as pastes often are.
	failed := "2018-06-15 19:39:40,006 root  INFO     Step 10607: 0.288s, loss: 0.220111, perplexity: 1.246215.\n" +
		"2018-06-15 19:39:40.334325: E tensorflow/core/lib/jpeg/jpeg_mem.cc:307] Premature end of JPEG data. Stopped at line 0/31\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/home/ubuntu/anaconda3/envs/tensorflow_p27/bin/aocr\", line 11, in <module>\n" +
		"    sys.exit(main())\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, failed)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotNil(t, res.RootCause)
		require.Equal(t, CategoryDataError, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, ConfidenceMedium, res.Confidence)
	}
	// libjpeg's warnings while an epoch goes on (ultralytics/yolov5#2451, AlexeyAB/darknet#5293).
	trained := progress +
		"Corrupt JPEG data: premature end of data segment\n" +
		"Premature end of JPEG file\n" +
		"Corrupt JPEG data: 2 extraneous bytes before marker 0xdb\n" +
		progress
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, trained)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	}
}

// TestDatasetsTableErrors: Arrow refusing columns of different lengths is the user's map
// function (not the data), and datasets' cast error for data files whose columns differ is
// the data, with the specific rules and without them.
func TestDatasetsTableErrors(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct {
		name, log string
		category  Category
	}{
		// https://github.com/huggingface/datasets/issues/1817
		{"a batched map's columns of different lengths", "pyarrow.lib.ArrowInvalid: Column 1 named input_ids expected length 599 but got length 1500\n", CategoryUserCodeError},
		// https://github.com/scicode-bench/SciCode/issues/44
		{"data files whose columns differ", "datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset\n\n" +
			"All the data files must have the same columns, but at some point there are 1 missing columns ({'general_solution'})\n", CategoryDataError},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, tt.log)
			require.NotNil(t, res.RootCause, tt.name)
			require.Equal(t, tt.category, res.RootCause.Category, tt.name+": "+res.RootCause.Title)
		}
	}
}
