package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricValues: the metrics of progress lines as trainers print them (the formats of the
// Hugging Face Trainer, Megatron-LM, DeepSpeed, PyTorch Lightning's progress bar, torchtitan and
// plain scripts), and the words that look like a metric but are not one.
func TestMetricValues(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct {
		line                    string
		loss, gradNorm, thruput float64 // -1: none
	}{
		{"{'loss': 2.0313, 'grad_norm': 1.4151, 'learning_rate': 1.9e-05, 'epoch': 0.12}", 2.0313, 1.4151, -1},
		{"{'loss': nan, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.12}", nan, nan, -1},
		{"{'train_runtime': 1500.2, 'train_samples_per_second': 28.286, 'train_loss': 1.0131}", 1.0131, -1, 28.286},
		{" iteration      100/   20000 | consumed samples:        51200 | elapsed time per iteration (ms): 3711.2 | learning rate: 1.500E-04 | global batch size:   512 | lm loss: 7.313135E+00 | loss scale: 65536.0 | grad norm: 2.617 | number of skipped iterations:   0 |", 7.313135, 2.617, -1},
		{"[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=40, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]", -1, -1, -1},
		{"Epoch 0:  42%|████▏     | 420/1000 [01:03<01:27,  6.61it/s, v_num=0, train_loss=0.412]", 0.412, -1, 6.61},
		{"[rank0]:[titan] 2024-09-01 step: 10  loss:  9.2413  memory: 20.1GiB(25.4%)  tps: 3,512  mfu: 30.2%", 9.2413, -1, -1},
		{"[rank3]: step 120 | loss inf | lr 3.00e-04 | grad_norm 0.911 | tokens/s 41230 | mem 64.2GiB", math.Inf(1), 0.911, 41230},
		{"eval step 100 | val_loss 2.31 | ppl 10.1", -1, -1, -1},
		{"loss_scale: 1024.0 reduced after overflow", -1, -1, -1},
		{"Total loss of the last epoch was not finite", -1, -1, -1},
	} {
		t.Run(tt.line[:min(len(tt.line), 40)], func(t *testing.T) {
			lc := &logCurves{}
			text := lc.lowered([]byte(tt.line))
			for _, m := range []struct {
				metric string
				want   float64
			}{{MetricLoss, tt.loss}, {MetricGradNorm, tt.gradNorm}, {MetricThroughput, tt.thruput}} {
				v, ok := metricValue(text, m.metric)
				if m.want == -1 {
					assert.False(t, ok, "%s: got %v", m.metric, v)
					continue
				}
				require.True(t, ok, "%s", m.metric)
				if math.IsNaN(m.want) {
					assert.True(t, math.IsNaN(v), "%s: %v", m.metric, v)
				} else {
					assert.InDelta(t, m.want, v, 1e-9, "%s", m.metric)
				}
			}
		})
	}
}

// TestCurveIsBounded: a million values keep at most 128 evenly spaced points, the first nan
// and the finite range of all of them.
func TestCurveIsBounded(t *testing.T) {
	c := &curve{}
	for i := range 1_000_000 {
		v := 1 / float64(i+1)
		if i == 777_777 {
			v = math.NaN()
		}
		c.add(int64(i*10), v)
	}
	assert.LessOrEqual(t, len(c.points), maxPoints)
	assert.GreaterOrEqual(t, len(c.points), maxPoints/2)
	for i := 1; i < len(c.points); i++ {
		assert.Equal(t, c.stride, c.points[i].N-c.points[i-1].N, "evenly spaced")
	}
	require.NotNil(t, c.firstBad)
	assert.Equal(t, int64(7_777_770), c.firstBad.Step)
	assert.Equal(t, 1, c.nonFinite)
	assert.Equal(t, 1.0, c.max)
	assert.InDelta(t, 1e-6, c.min, 1e-12)
}

// TestCurvesOfThePair: the sample pair's Trainer lines give loss and grad-norm curves for
// the Master role in both runs, BAD's nan from its 13th value, ranked in the progress section;
// the JSON writes a nan as null and reads it back.
func TestCurvesOfThePair(t *testing.T) {
	r := diff(t, "testdata/good", "testdata/bad")
	require.Len(t, r.Progress, 1, "the workers print no progress")
	master := r.Progress[0]
	assert.Equal(t, "Master", master.Role)
	require.NotNil(t, master.Good)
	require.NotNil(t, master.Bad)
	require.GreaterOrEqual(t, len(master.Curves), 2)
	loss := master.Curves[0]
	assert.Equal(t, MetricLoss, loss.Metric)
	assert.False(t, loss.ByStep, "the Trainer's lines name no step: they are aligned by their order")
	assert.Zero(t, loss.Good.NonFinite)
	assert.Equal(t, 15, loss.Bad.NonFinite)
	require.NotNil(t, loss.Bad.FirstNonFinite)
	assert.Equal(t, int64(13), *loss.Bad.FirstNonFinite)

	prog := r.Section(SectionProgress)
	require.NotEmpty(t, prog)
	assert.Equal(t, "nonfinite", prog[0].Kind)
	assert.Contains(t, titles(prog), "Master: loss is nan from its value 13 in BAD (alpaca-sft-0314-master-0; GOOD's is finite throughout)")

	var js bytes.Buffer
	require.NoError(t, Render(&js, r, "json"))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	bad := back.Progress[0].Curves[0].Bad
	assert.Equal(t, int64(13), bad.X[12])
	assert.Nil(t, bad.Y[12], "a nan is null")
	require.NotNil(t, bad.Y[11])
	assert.Equal(t, 1.1536, *bad.Y[11])

	var html bytes.Buffer
	require.NoError(t, Render(&html, r, "html"))
	assert.Equal(t, 2, strings.Count(html.String(), `aria-label="loss by progress line, GOOD and BAD"`)+strings.Count(html.String(), `aria-label="grad_norm by progress line, GOOD and BAD"`),
		"one chart per metric with both runs (throughput has one value a run: no chart)")
}

// TestChartEscapesAndBounds: a pod name from the bundle cannot become markup in a chart, and
// a chart of curves of any length has at most 128 points a run.
func TestChartEscapesAndBounds(t *testing.T) {
	c := &curve{}
	for i := range 10_000 {
		c.add(int64(i), float64(i%7))
	}
	pr := procRef{pod: `<script>alert(1)</script>`, path: "logs/x", rank: 0}
	svg := string(curveChart(&CurvePair{Metric: "loss", ByStep: true, Good: seriesOf(pr, c, true), Bad: seriesOf(pr, c, true)}))
	assert.NotContains(t, svg, "<script>")
	assert.Contains(t, svg, "&lt;script&gt;")
	attr, _, _ := strings.Cut(strings.SplitN(svg, `points="`, 2)[1], `"`)
	assert.Len(t, seriesOf(pr, c, true).X, 79, "10,000 values kept every 128th")
	pts := strings.Count(attr, ",")
	assert.LessOrEqual(t, pts, maxPoints+1)
}
