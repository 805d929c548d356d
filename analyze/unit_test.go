package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailureUnit: a specific line of the failure a catch-all exception belongs to (its
// traceback, the exceptions chained to it, the lines printed right around it) names the root
// cause, and the exception becomes its evidence; a specific line of another moment of the
// process does not, and which process failed first does not change.
func TestFailureUnit(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	const watchdog = "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800342 milliseconds before timing out.\n"
	var progress strings.Builder
	for i := range 80 {
		progress.WriteString("{'loss': 2." + string(rune('0'+i%10)) + ", 'learning_rate': 1e-05, 'epoch': 0.5}\n")
	}
	type line struct {
		n    int
		text string
	}
	tests := []struct {
		name       string
		logs       []string
		rule       string
		confidence Confidence
		pod        string
		root       line // the root's evidence
		generic    *line
	}{{
		name: "during handling: the specific exception the generic one led to",
		logs: []string{chain(traceback("ifname = os.environ[\"NCCL_SOCKET_IFNAME\"]", "KeyError: 'NCCL_SOCKET_IFNAME'"),
			"During handling of the above exception, another exception occurred:",
			traceback("dist.init_process_group(\"nccl\")", "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while trying to connect to (10.0.0.1, 29500)."))},
		rule: "rendezvous-failure/client-socket-timeout", confidence: ConfidenceHigh, pod: "a",
		root:    line{11, "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while trying to connect to (10.0.0.1, 29500)."},
		generic: &line{4, "KeyError: 'NCCL_SOCKET_IFNAME'"},
	}, {
		name: "direct cause: a generic RuntimeError was the direct cause of the specific one",
		logs: []string{chain(traceback("store.wait([\"key\"])", "RuntimeError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0"),
			"The above exception was the direct cause of the following exception:",
			traceback("dist.init_process_group(\"nccl\")", "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 1, for key: store_based_barrier_key:1 (world_size=2, num_workers_joined=1, timeout=0:30:00)"))},
		rule: "rendezvous-failure/store-barrier-timeout", confidence: ConfidenceHigh, pod: "a",
		root:    line{11, "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 1, for key: store_based_barrier_key:1 (world_size=2, num_workers_joined=1, timeout=0:30:00)"},
		generic: &line{4, "RuntimeError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0"},
	}, {
		name: "the framework's line printed just below a generic RuntimeError",
		logs: []string{traceback("dist.all_reduce(t)", "RuntimeError: ACL stream synchronize failed.") +
			watchdog},
		rule: "collective-timeout/nccl-watchdog", confidence: ConfidenceHigh, pod: "a",
		root:    line{5, strings.TrimSuffix(watchdog, "\n")},
		generic: &line{4, "RuntimeError: ACL stream synchronize failed."},
	}, {
		name: "a specific line far above, training went on after it: the traceback's exception is the failure",
		logs: []string{watchdog + progress.String() +
			traceback("batch = next(it)", "ValueError: too many values to unpack (expected 2)")},
		rule: "user-code-error/python-exception", confidence: ConfidenceLow, pod: "a",
		root: line{85, "ValueError: too many values to unpack (expected 2)"},
	}, {
		name: "a catch-all that names a class is what the symptom after it follows from",
		logs: []string{"  Warning  Failed     70s (x4 over 2m34s)  kubelet  Failed to pull image \"registry.example/team/train:v1\": rpc error: code = Unknown desc = unexpected EOF\n" +
			"  Normal   BackOff    3s (x9 over 2m33s)   kubelet  Back-off pulling image \"registry.example/team/train:v1\"\n"},
		rule: "image-pull/failed-generic", confidence: ConfidenceMedium, pod: "a",
		root: line{1, "  Warning  Failed     70s (x4 over 2m34s)  kubelet  Failed to pull image \"registry.example/team/train:v1\": rpc error: code = Unknown desc = unexpected EOF"},
	}, {
		name: "the rank whose exception came first stays the root, named by its specific line",
		logs: []string{"2024-05-01 10:00:05,000 INFO saving checkpoint\n" +
			traceback("dist.all_reduce(t)", "RuntimeError: ACL stream synchronize failed.") +
			watchdog,
			"2024-05-01 10:00:30,000 INFO saving checkpoint\n" +
				traceback("loss.backward()", "RuntimeError: CUDA error: an illegal memory access was encountered")},
		rule: "collective-timeout/nccl-watchdog", confidence: ConfidenceHigh, pod: "a",
		root:    line{6, strings.TrimSuffix(watchdog, "\n")},
		generic: &line{5, "RuntimeError: ACL stream synchronize failed."},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, rules, tt.logs...)
			root := res.RootCause
			require.NotNil(t, root)
			require.Equal(t, tt.rule, root.RuleID)
			require.Equal(t, tt.confidence, res.Confidence)
			require.Equal(t, tt.pod, root.Pod)
			require.Equal(t, tt.root.n, root.Evidence[0].Line)
			require.Equal(t, tt.root.text, root.Evidence[0].Text)
			if tt.generic == nil {
				return
			}
			var generic *Finding
			for _, f := range res.Findings {
				if f.RuleID == "user-code-error/python-exception" && f.Pod == root.Pod {
					generic = f
				}
			}
			require.NotNil(t, generic, "the generic exception is kept as evidence")
			require.Equal(t, root.ID, generic.SecondaryOf)
			require.Equal(t, tt.generic.n, generic.Evidence[0].Line)
			require.Equal(t, tt.generic.text, generic.Evidence[0].Text)
		})
	}
}

// traceback is a Python traceback of one frame, running code, that ends in exception.
func traceback(code, exception string) string {
	return "Traceback (most recent call last):\n  File \"train.py\", line 20, in <module>\n    " + code + "\n" + exception + "\n"
}

// chain is two tracebacks as Python prints an exception raised while handling another, or
// from it: the first, the joining sentence, the second.
func chain(first, joint, second string) string {
	return first + "\n" + joint + "\n\n" + second
}

// TestWithoutKeepsOrderAndDuplicates: the ranks left once others are dropped are the same,
// in the same order, whether the dropped list is short (compared one by one) or long (looked
// up sorted), unsorted or with repeats.
func TestWithoutKeepsOrderAndDuplicates(t *testing.T) {
	all := []int{9, 3, 3, 40, 0, 17, 2, 40, 5}
	naive := func(all, drop []int) []int {
		var out []int
		for _, n := range all {
			keep := true
			for _, d := range drop {
				keep = keep && n != d
			}
			if keep {
				out = append(out, n)
			}
		}
		return out
	}
	long := []int{40, 1, 3}
	for i := 100; i > 70; i-- {
		long = append(long, i, i)
	}
	for _, drop := range [][]int{nil, {3}, {40, 9}, long, append(long, 9, 3, 40, 0, 17, 2, 5)} {
		require.Equal(t, naive(all, drop), without(all, drop), "dropping %v", drop)
	}
}
