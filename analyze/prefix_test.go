package analyze

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitPrefix: each launcher's prefix is taken off and names its process; text that only
// looks like one stays whole.
func TestSplitPrefix(t *testing.T) {
	tests := []struct {
		line, rest, stream string
		rank               int
	}{
		{"[rank3]: RuntimeError: boom", "RuntimeError: boom", "rank 3", 3},
		{"[default0]:Traceback (most recent call last):", "Traceback (most recent call last):", "local rank 0", -1},
		{"[1,3]<stderr>: MPI_ABORT was invoked", "MPI_ABORT was invoked", "rank 3", 3},
		{"(RayTrainWorker pid=123, ip=10.0.0.1) ValueError: x", "ValueError: x", "pid 123", -1},
		{"10: torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", "rank 10", 10},
		{"trainer-1  | ModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'", "trainer-1", -1},
		{"> [1,2]<stdout>: NCCL WARN x", "NCCL WARN x", "rank 2", 2},
		{"[rank5000]: boom", "boom", "rank 5000", 5000},
		{"worker-1: ModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'", "worker-1", -1},
		{"10.0.0.7: [rank3]: RuntimeError: boom", "RuntimeError: boom", "rank 3", 3},
		// The longest host name that is a prefix, and one byte more, which is not.
		{"h-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-1: ValueError: x", "ValueError: x", "h-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-1", -1},
		{"xh-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-1: ValueError: x", "xh-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-1: ValueError: x", "", -1},
		// A collector's time in front of the launcher's prefix, or of the program's line.
		{"2021-03-10T13:22:37.443Z: [1,0]<stderr>:OSError: Caught OSError in DataLoader worker process 3.", "OSError: Caught OSError in DataLoader worker process 3.", "rank 0", 0},
		{"2021-03-10T13:22:37.443Z: RuntimeError: boom", "RuntimeError: boom", "", -1},
		{"2024-05-01T08:00:00+02:00\tworker-1: ValueError: x", "ValueError: x", "worker-1", -1},
		{"2024-01-02 03:04:05,123 ValueError: x", "ValueError: x", "", -1},
		{"[2024-01-02 03:04:05,123] ValueError: x", "ValueError: x", "", -1},
		{"[2024-01-02T03:04:05Z] [rank2]: ValueError: x", "ValueError: x", "rank 2", 2},
		{"Jan  2 03:04:05 node1 python[1234]: ValueError: x", "ValueError: x", "pid 1234", -1},
		{"Dec 12 03:04:05 gpu-node-07 torchrun[77]: [rank3]: ValueError: x", "ValueError: x", "rank 3", 3},
		{"[pytorch-job-worker-0] ValueError: x", "ValueError: x", "pytorch-job-worker-0", -1},
		// kubectl logs --prefix (geerlingguy/ansible-for-kubernetes#75, kubernetes#123874).
		{"[pod/echo-req-7cfd7bf68f-nk5kr/hello] ValueError: x", "ValueError: x", "echo-req-7cfd7bf68f-nk5kr/hello", -1},
		{"[pod/train-worker-1/pytorch] [rank1]: ValueError: x", "ValueError: x", "rank 1", 1},
		// kubectl logs --timestamps and GitHub Actions' log (pytorch/pytorch#107651): a time.
		{"2024-03-07T21:10:16.123456789Z ValueError: x", "ValueError: x", "", -1},
		{"2023-08-28T23:31:52.4840189Z Traceback (most recent call last):", "Traceback (most recent call last):", "", -1},
		// torch_xla's xla_dist after its time (pytorch/xla#2552, huggingface/accelerate#501): the
		// host and its index among the hosts, no rank. horovodrun's "[1]<stdout>:" is a rank.
		{"2022-12-19 23:26:54 172.16.96.185 [2] RuntimeError: boom", "RuntimeError: boom", "172.16.96.185 [2]", -1},
		{"2020-12-05 12:02:26 10.164.15.249 [0]   File \"train.py\", line 268, in <module>", "  File \"train.py\", line 268, in <module>", "10.164.15.249 [0]", -1},
		{"[1]<stdout>:test_common.py::CommonTests::test_gloo_built PASSED", "test_common.py::CommonTests::test_gloo_built PASSED", "rank 1", 1},
		// accelerate test's stream tags (huggingface/accelerate#1573, #1606), in front of a
		// host's (pdsh) or alone: they name no process.
		{"stderr: Traceback (most recent call last):", "Traceback (most recent call last):", "", -1},
		{"stdout: worker-3: Device: cuda:4", "Device: cuda:4", "worker-3", -1},
		// Not prefixes.
		{"stderrs: x", "stderrs: x", "", -1},
		{"172.16.96.185", "172.16.96.185", "", -1},
		{"worker-1 [2]", "worker-1 [2]", "", -1},
		{"worker-1 [2] ", "worker-1 [2] ", "", -1},
		{"worker-1 [x] y", "worker-1 [x] y", "", -1},
		{"step 3 | loss 2.1 | lr 1e-4", "step 3 | loss 2.1 | lr 1e-4", "", -1},
		{"epoch 1 |  loss 2.1", "epoch 1 |  loss 2.1", "", -1},
		{"[2026-03-14 10:00:00] INFO start", "[2026-03-14 10:00:00] INFO start", "", -1},
		{"2021-03-10T13:22:37Z", "2021-03-10T13:22:37Z", "", -1},
		// A logger's header keeps its time: the level after it is read by logMessage.
		{"2019-06-13 01:17:08.886805: E tensorflow/core/x.cc:672] boom", "2019-06-13 01:17:08.886805: E tensorflow/core/x.cc:672] boom", "", -1},
		{"2024-05-01 10:00:00.123 | ERROR    | train:main:42 - KeyError: 'labels'", "2024-05-01 10:00:00.123 | ERROR    | train:main:42 - KeyError: 'labels'", "", -1},
		{"2024-05-01 10:00:00,123 - loader - WARNING - x", "2024-05-01 10:00:00,123 - loader - WARNING - x", "", -1},
		{"2024-05-01 10:00:00,123 ERROR Traceback (most recent call last):", "2024-05-01 10:00:00,123 ERROR Traceback (most recent call last):", "", -1},
		{"2024-05-01 10:00:00 [INFO] start", "2024-05-01 10:00:00 [INFO] start", "", -1},
		// A kernel line names no process; it stays whole.
		{"Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48", "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48", "", -1},
		{"[INFO] start", "[INFO] start", "", -1},
		{"[pod/x] start", "[pod/x] start", "", -1},
		{"[pod/a/b/c] start", "[pod/a/b/c] start", "", -1},
		{"[cuda-12.1] installed", "[cuda-12.1] installed", "", -1},
		{"2021-03-10T13:22:37Zulu time", "2021-03-10T13:22:37Zulu time", "", -1},
		{"12345678: not a rank", "12345678: not a rank", "", -1},
		{"torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", "", -1},
		{"cuda-12.1: installed", "cuda-12.1: installed", "", -1},
		{"1.2.3: version", "1.2.3: version", "", -1},
	}
	for _, tt := range tests {
		rest, p := splitPrefix([]byte(tt.line))
		require.Equal(t, tt.rest, string(rest), tt.line)
		require.Equal(t, tt.stream, p.stream, tt.line)
		require.Equal(t, tt.rank, p.rank, tt.line)
	}
}

// TestContentRanks: a process's rank from NCCL's init lines is its rank in the largest
// communicator; a log whose lines give two ranks in it holds several processes and names none.
func TestContentRanks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string
		rank  int
		world int
	}{
		{"one init", []string{"host:57:57 [0] NCCL INFO ncclCommInitRank comm 0x55d4c0a1b2c0 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x8a3f - Init COMPLETE"}, 2, 4},
		{"a tensor-parallel group after the world", []string{
			"host:57:57 [0] NCCL INFO comm 0x55d5c1a0 rank 9 nranks 16 cudaDev 1 busId 41000 - Init COMPLETE",
			"host:57:57 [0] NCCL INFO comm 0x55d5c1b0 rank 1 nranks 8 cudaDev 1 busId 41000 - Init COMPLETE",
		}, 9, 16},
		{"eight processes in one log", []string{
			"host:57:57 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 41000 - Init COMPLETE",
			"host:58:58 [1] NCCL INFO comm 0x2 rank 1 nranks 16 cudaDev 1 busId 42000 - Init COMPLETE",
		}, -1, 16},
		{"not NCCL", []string{"worker rank 3 nranks 4 says hello"}, -1, 0},
		{"a rank beyond the world", []string{"NCCL INFO comm 0x1 rank 7 nranks 4 cudaDev 0"}, -1, 0},
		{"an init after the banner", []string{
			"host:57:57 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
			"host:57:57 [0] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 41000 - Init COMPLETE",
			"host:57:57 [0] NCCL INFO Channel 01/32 :    0   1   2   3   4   5   6   7",
		}, 3, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c contentRanks
			for _, l := range tt.lines {
				c.see([]byte(l))
			}
			require.Equal(t, tt.rank, c.get())
			require.Equal(t, tt.world, int(c.nranks))
		})
	}
}

// BenchmarkSplitPrefix: a launcher's rank prefix and lines with none, as every line of a log
// is split.
func BenchmarkSplitPrefix(b *testing.B) {
	lines := [][]byte{
		[]byte("[rank52]: step 985 | loss 2.9856 | lr 3.00e-04 | grad_norm 1.408 | tokens/s 41038"),
		[]byte("step 985 | loss 2.9856 | lr 3.00e-04 | grad_norm 1.408 | tokens/s 41038 | mem 63.3GiB"),
		[]byte("INFO 2026-03-14 08:13:56,306 trainer.py:120] saving checkpoint to /ckpt/step_1000"),
	}
	for range b.N {
		for _, l := range lines {
			splitPrefix(l)
		}
	}
}

// TestSplitPrefixOfManyTimes: a hostile line of times one after another is cut at most
// maxPrefixes of them, at the cost of one look each.
func TestSplitPrefixOfManyTimes(t *testing.T) {
	line := []byte(strings.Repeat("2021-03-10T13:22:37.443Z: ", 50000) + "ValueError: x")
	rest, p := splitPrefix(line)
	require.Equal(t, len(line)-maxPrefixes*len("2021-03-10T13:22:37.443Z: "), len(rest))
	require.Equal(t, -1, p.rank)
}

// TestLineNumbers: the bracketed number in front of a line comes off it; it names a rank only
// once at least two numbers have each recurred and the numbers do not mostly count up (Intel
// MPI's "-l", the corpus's 171), and never on a log viewer's line numbers (pspot4's excerpt of
// LlamaFactory#8261 and the corpus's row 250 are pasted so). Each line comes out as
// "rank|text", "-" for no rank.
func TestLineNumbers(t *testing.T) {
	strip := stripNumbers
	require.Equal(t, []string{"-|a", "-|", "-|b", "-|", "-|c"},
		strip("[1743] a", "[1744]", "[1745] b", "[1746]", "[1747] c"))
	// A paste of NCCL's lines: no rank while they count up (0 1 2 3); ranks once two numbers
	// (1 and 3) have recurred and the numbers went back or repeated as often as they counted up.
	require.Equal(t, []string{"-|NCCL INFO x", "-|NCCL WARN y", "-|NCCL WARN z", "-|NCCL WARN y", "-|NCCL INFO w", "-|NCCL INFO w", "-|NCCL INFO w", "1|NCCL WARN v", "3|NCCL WARN v"},
		strip("[3] NCCL INFO x", "[1] NCCL WARN y", "[1] NCCL WARN z", "[0] NCCL WARN y", "[1] NCCL INFO w", "[2] NCCL INFO w", "[3] NCCL INFO w", "[1] NCCL WARN v", "[3] NCCL WARN v"))
	// Two ranks interleaved: from the fourth line, where 0 and 1 have each been read twice.
	require.Equal(t, []string{"-|a", "-|b", "-|c", "0|d", "1|e", "0|f"},
		strip("[0] a", "[1] b", "[1] c", "[0] d", "[1] e", "[0] f"))
	// Ranks in turn from 0 cannot be told from a paste's first lines: none.
	require.Equal(t, []string{"-|x", "-|x", "-|x", "-|x", "-|y"},
		strip("[0] x", "[1] x", "[2] x", "[3] x", "[3] y"))
	require.Equal(t, []string{"-|a", "-|b", "-|c", "-|plain", "-|d", "-|e", "-|f"},
		strip("[70] a", "[71] b", "[72] c", "plain", "[73] d", "[74] e", "[75] f"))
	require.Equal(t, []string{"-|[12]x", "-|[13]x"}, strip("[12]x", "[13]x"))
	// A number that goes back across a line without one is a second excerpt, no rank.
	require.Equal(t, []string{"-|plain", "-|a", "-|a", "-|a", "-|plain", "-|b", "-|b", "-|b"},
		strip("plain", "[25] a", "[26] a", "[27] a", "plain", "[21] b", "[22] b", "[23] b"))
	// Line numbers pasted after ranks name none from the third line of a run counting up (0 1
	// 2 3 4 from c on).
	require.Equal(t, []string{"-|a", "-|b", "-|c", "1|d", "-|e", "-|f", "-|g"},
		strip("[1] a", "[0] b", "[0] c", "[1] d", "[2] e", "[3] f", "[4] g"))
}

// stripNumbers strips lines as a log's scan does, each coming out as "rank|text", "-" for no
// rank.
func stripNumbers(lines ...string) []string {
	var r lineNumbers
	var out []string
	for _, l := range lines {
		text, rank := r.strip([]byte(l))
		who := "-"
		if rank >= 0 {
			who = strconv.Itoa(rank)
		}
		out = append(out, who+"|"+string(text))
	}
	return out
}

// TestLineNumbersNameNoRank: numbers that may be line numbers, a shell's job or a one-line
// excerpt's name no rank.
func TestLineNumbersNameNoRank(t *testing.T) {
	t.Run("one numbered line", func(t *testing.T) {
		require.Equal(t, []string{"-|RuntimeError: x"}, stripNumbers("[1] RuntimeError: x"))
		require.Equal(t, []string{"-|step 1", "-|4242", "-|step 2"}, stripNumbers("step 1", "[1] 4242", "step 2"))
	})
	t.Run("a paste's first two lines", func(t *testing.T) {
		require.Equal(t, []string{"-|a", "-|b"}, stripNumbers("[1] a", "[2] b"))
	})
	t.Run("two excerpts numbered from 1", func(t *testing.T) {
		require.Equal(t, []string{"-|a", "-|b", "-|c", "-|d", "-|e", "-|f", "-|g", "-|h"},
			stripNumbers("[1] a", "[2] b", "[3] c", "[4] d", "[1] e", "[2] f", "[3] g", "[4] h"))
		require.Equal(t, []string{"-|a", "-|b", "-|c", "-|d", "-|e", "-|f"},
			stripNumbers("[20] a", "[21] b", "[22] c", "[20] d", "[21] e", "[22] f"))
	})
	t.Run("a large number", func(t *testing.T) {
		// The docs once said a number "repeats or jumps": a jump alone is no rank either.
		require.Equal(t, []string{"-|a", "-|b"}, stripNumbers("[40] a", "[7] b"))
	})
}

// TestLineNumbersSecondTier: a traceback pasted with a log viewer's line numbers is read as a
// traceback: its frames are frames and its last line the exception.
func TestLineNumbersSecondTier(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "[101] epoch 1 step 10 loss 2.1\n[102] epoch 1 step 20 loss 2.0\n[103] Traceback (most recent call last):\n" +
		"[104]   File \"/app/train.py\", line 40, in main\n[105]     batch = next(it)\n[106] KeyError: 'labels'\n"
	res := analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category)
	require.Contains(t, res.RootCause.Title, "KeyError")
}

// TestRankBracketSecondTier: a traceback printed under Intel MPI's -l, each line behind its
// rank's "[1] ", is read by the second tier as a traceback of rank 1 (once ranks 0 and 1 have
// each printed twice, interleaved), and torch_xla's
// xla_dist line (time, host, host index) as the exception it carries, of no rank.
func TestRankBracketSecondTier(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "[0] step 10 loss 2.1\n[1] step 10 loss 2.0\n[1] step 20 loss 1.9\n[0] step 20 loss 2.0\n[1] Traceback (most recent call last):\n" +
		"[1]   File \"/app/train.py\", line 40, in main\n[1]     batch = next(it)\n[1] KeyError: 'labels'\n"
	res := analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, res.RootCause.Title, "KeyError")
	require.Equal(t, 1, res.RootCause.Rank)

	// pytorch/xla#2552's form, in huggingface/accelerate#501's words.
	log = "2022-12-19 23:26:54 172.16.96.185 [2] RuntimeError: tensorflow/compiler/xla/xla_client/mesh_service.cc:377 : Failed to meet rendezvous 'checking_out': Socket closed (14)\n"
	res = analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, res.RootCause.Title, "RuntimeError")
	require.Equal(t, -1, res.RootCause.Rank)
}

// TestBracketNamesNoRank: a bracketed number the log has not shown to be a rank gives the
// root cause no rank: a shell's job number in a log of one process, and two log-viewer
// excerpts each numbered from 1 (the second's line 23 is no rank 23).
func TestBracketNamesNoRank(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	cuda := "RuntimeError: CUDA error: an illegal memory access was encountered\n"
	check := func(t *testing.T, log string) {
		res := analyzeLogs(t, all, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Contains(t, res.VerdictReason, "illegal memory access")
		require.NotContains(t, res.VerdictReason, "rank")
		require.Equal(t, -1, res.RootCause.Rank)
	}
	t.Run("a shell's job number", func(t *testing.T) {
		check(t, "step 1 loss 2.1\n[1] 4242\nstep 2 loss 2.0\n"+cuda)
	})
	t.Run("two excerpts numbered from 1", func(t *testing.T) {
		var b strings.Builder
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(&b, "[%d] step %d loss 2.1\n", i, i)
		}
		for i := 1; i <= 22; i++ {
			fmt.Fprintf(&b, "[%d] step %d loss 2.0\n", i, 100+i)
		}
		b.WriteString("[23] " + cuda)
		check(t, b.String())
	})
}

// TestRecordMessage: a structured log record (one JSON object a line) is read as the line it
// carries, unescaped; a line that only looks like one stays whole.
func TestRecordMessage(t *testing.T) {
	tests := []struct {
		line, want string
		ok         bool
	}{
		// Docker's json-file driver (docker-library/docker#224).
		{`{"log":"Traceback (most recent call last):\n","stream":"stderr","time":"2024-01-01T00:00:00.1Z"}`, "Traceback (most recent call last):", true},
		{`{"log":"  File \"train.py\", line 3, in \u003cmodule\u003e\n","stream":"stderr"}`, `  File "train.py", line 3, in <module>`, true},
		// Cloud Logging (ai2cm/fv3net#1910): textPayload, or jsonPayload's message.
		{`{"textPayload": "RuntimeError: CUDA error: out of memory", "severity": "ERROR"}`, "RuntimeError: CUDA error: out of memory", true},
		{`{"jsonPayload": {"message": "torch.OutOfMemoryError: CUDA out of memory."}, "severity": "ERROR"}`,
			`torch.OutOfMemoryError: CUDA out of memory.  {"jsonPayload": {"message": "torch.OutOfMemoryError: CUDA out of memory."}, "severity": "ERROR"}`, true},
		// A logger's record keeps its other fields after the message.
		{`{"level":"error","msg":"failed to create k8s Job","error":"Job.batch \"x\" is invalid"}`,
			`failed to create k8s Job  {"level":"error","msg":"failed to create k8s Job","error":"Job.batch \"x\" is invalid"}`, true},
		// A record's runtime field wins over metadata; a traceback in one record stays one line;
		// a colour code's escape is dropped; a record cut at the line limit keeps what it has.
		{`{"message":"container","log":"KeyError: 'labels'\n"}`, "KeyError: 'labels'", true},
		{`{"log":"Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x\n"}`, `Traceback (most recent call last):   File "x.py", line 1 ValueError: x`, true},
		{`{"log":"\u001b[31mERROR\u001b[0m boom"}`, "[31mERROR[0m boom", true},
		// A character beyond the BMP comes as its UTF-16 pair; half a pair stays unreadable.
		{`{"log":"KeyError: '\uD83D\uDE00'\n"}`, "KeyError: '\U0001F600'", true},
		{`{"log":"KeyError: '\ud83d\u0041'\n"}`, "KeyError: '\uFFFDA'", true},
		{`{"log":"KeyError: '\uD83D'\n"}`, "KeyError: '\uFFFD'", true},
		{`{"log":"NCCL WARN Net : Connection closed by remote peer`, "NCCL WARN Net : Connection closed by remote peer", true},
		// Not records, or no line in them.
		{`{'loss': 0.1, 'learning_rate': 1e-05}`, "", false},
		{`{"loss": 0.1, "step": 10}`, "", false},
		{`{"args": "\"log\": \"x\""}`, "", false},
		{`log: "x"`, "", false},
	}
	for _, tt := range tests {
		got, ok, _ := recordMessage(nil, []byte(tt.line))
		require.Equal(t, tt.ok, ok, tt.line)
		if ok {
			require.Equal(t, tt.want, string(got), tt.line)
		}
	}
	// A record of a huge line is read up to maxRecordBytes.
	long := `{"log":"` + strings.Repeat("x", 3*maxRecordBytes) + `"}`
	got, ok, _ := recordMessage(nil, []byte(long))
	require.True(t, ok)
	require.Len(t, got, maxRecordBytes)
}

// TestRecordFieldOnePass: the one pass over a record's quotes finds the field, and its value,
// that searching the record for each field in turn (the reference below) finds, on records
// made of the fields, escapes, colons and quotes that make the search skip an occurrence.
func TestRecordFieldOnePass(t *testing.T) {
	parts := []string{`"log"`, `"textPayload"`, `"MESSAGE"`, `"message"`, `"msg"`, `"log"log"`,
		`\`, `\"`, `:`, ` `, "\t", `"`, `"x"`, `{`, `}`, `,`, `msg`, `log"`, `"m`, `essage"`}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200000; n++ {
		var b strings.Builder
		b.WriteByte('{')
		for k := rng.IntN(12); k >= 0; k-- {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		line := []byte(b.String())
		wantI, wantV := len(recordFields), []byte(nil)
		for i, key := range recordFields {
			if v := fieldStringRef(line, key); v != nil {
				wantI, wantV = i, v
				break
			}
		}
		gotI, gotV := recordField(line)
		require.Equal(t, wantI, gotI, "%s", line)
		require.Equal(t, wantV, gotV, "%s", line)
	}
}

// fieldStringRef is the search recordField replaced: key's first occurrence in t, each
// searched for from the end of the one before, that fieldAt takes.
func fieldStringRef(t []byte, key string) []byte {
	for off := 0; off < len(t); {
		i := bytes.Index(t[off:], []byte(key))
		if i < 0 {
			return nil
		}
		i += off
		off = i + len(key)
		if v := fieldAt(t, i, len(key)); v != nil {
			return v
		}
	}
	return nil
}

// TestRecordEscaped: a record's message holds bytes its raw line does not only for an escape
// inside it; the line end Docker's json-file driver ends every record with is no such escape,
// so those lines keep their shape filters.
func TestRecordEscaped(t *testing.T) {
	for line, want := range map[string]bool{
		`{"log":"step 10 loss 2.1\n","stream":"stdout","time":"2024-01-01T00:00:00.1Z"}`: false,
		`{"log":"step 10 loss 2.1\r\n","stream":"stdout"}`:                               false,
		`{"log":"step 10 loss 2.1 \n\n"}`:                                                false,
		`{"log":"no line end"}`:                                                          false,
		`{"log":"a\nb\n"}`:                                                               true, // a blank the raw line does not hold
		`{"log":"File \"x.py\"\n"}`:                                                      true,
		`{"log":"path C:\\n"}`:                                                           true, // a backslash and an n
		`{"log":"\u003cmodule\u003e\n"}`:                                                 true,
		`{"log":"tab\there\n"}`:                                                          true,
		`{"level":"error","msg":"failed to create k8s Job","error":"Job.batch \"x\""}`: false,
	} {
		_, ok, escaped := recordMessage(nil, []byte(line))
		require.True(t, ok, line)
		require.Equal(t, want, escaped, line)
	}
}

// TestRecordLog: a log shipped as JSON records is diagnosed as the lines they carry, by the
// rules and by the second tier alone, and the evidence shows the record as written.
func TestRecordLog(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	rec := func(s string) string {
		return `{"log":"` + strings.ReplaceAll(s, `"`, `\"`) + `\n","stream":"stderr","time":"2024-05-01T10:00:00.000000001Z"}` + "\n"
	}
	log := rec("step 10 loss 2.1") + rec("Traceback (most recent call last):") + rec(`  File "/app/train.py", line 40, in main`) +
		rec("    batch = next(it)") + rec("KeyError: 'labels'")
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryUserCodeError, res.RootCause.Category)
		require.True(t, strings.HasPrefix(res.RootCause.Title, "KeyError"), res.RootCause.Title) // the traceback's exception
		require.Contains(t, res.RootCause.Evidence[len(res.RootCause.Evidence)-1].Text, `{"log":"KeyError: 'labels'\n"`)
	}
	// Forty records of progress, then a record whose line is a CUDA OOM with an escaped quote:
	// the lines of one shape the scan stops reading in full are the raw records', and the OOM
	// record is read as the line it carries.
	var b strings.Builder
	for i := range 40 {
		b.WriteString(rec(fmt.Sprintf("step %d loss %.2f", 10*i, 2.5-0.01*float64(i))))
	}
	b.WriteString(rec(`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. Process "train" has 77.90 GiB memory in use.`))
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, b.String())
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))
		require.Equal(t, 41, res.RootCause.Evidence[0].Line)
	}
	// A CUDA OOM in a Cloud Logging export.
	log = `{"textPayload": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.", "severity": "ERROR"}` + "\n"
	res := analyzeLogs(t, all, log)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category)
}

// TestStreamTagSecondTier: accelerate test's "stderr: " tag in front of a traceback: the
// second tier reads the traceback and its exception.
func TestStreamTagSecondTier(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "stdout: step 10 loss 2.1\nstderr: Traceback (most recent call last):\nstderr:   File \"/app/train.py\", line 40, in main\n" +
		"stderr:     batch = next(it)\nstderr: KeyError: 'labels'\n"
	res := analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.True(t, strings.HasPrefix(res.RootCause.Title, "KeyError"), res.RootCause.Title) // the traceback's exception
}
