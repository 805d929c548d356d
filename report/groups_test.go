package report

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNameList(t *testing.T) {
	var many []string
	for i := 0; i < 1023; i++ {
		if i != 36 {
			many = append(many, fmt.Sprintf("big-train-worker-%d", i))
		}
	}
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"train-job-master-0", "train-job-worker-0", "train-job-worker-1"}, "train-job-master-0, train-job-worker-0, train-job-worker-1"},
		{[]string{"train-job-master-0", "train-job-worker-0", "train-job-worker-1", "train-job-worker-2", "train-job-worker-3", "train-job-worker-5", "train-job-worker-6"},
			"train-job-master-0, train-job-worker-[0-3,5-6]"},
		{many, "big-train-worker-[0-35,37-1022]"},
		{[]string{"x-7kq2p", "x-9zz1m", "node-01", "node-02", "node-03"}, "node-[01-03], x-7kq2p, x-9zz1m"},
		{[]string{"w-3", "w-1", "m-0", "w-2"}, "m-0, w-[1-3]"},
	} {
		if diff := cmp.Diff(tt.want, NameList(tt.names, 8)); diff != "" {
			t.Errorf("NameList(%v) (-want +got):\n%s", tt.names, diff)
		}
	}
	if got := NameList([]string{"a", "b", "c", "d"}, 2); got != "a, b and 2 more" {
		t.Errorf("capped: %q", got)
	}
	if got := Ranges([]int{9, 1, 2, 3, 5, 7}, 2); got != "1-3,5,…" {
		t.Errorf("Ranges: %q", got)
	}
}
