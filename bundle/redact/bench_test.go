package redact

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// trainingLog is a log like the ones collect redacts: kubelet timestamps, step metrics, NCCL
// and Python noise, URLs, and a secret every thousand lines.
func trainingLog(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		ts := fmt.Sprintf("2026-03-14T10:%02d:%02d.%09dZ ", i/3600%60, i/60%60, i%1_000_000_000)
		switch {
		case i%1000 == 999:
			fmt.Fprintf(&b, "%sexport HF_TOKEN=hf_%034d\n", ts, i)
		case i%97 == 0:
			fmt.Fprintf(&b, "%sDownloading https://huggingface.co/meta-llama/Llama-3-8B/resolve/main/model-%05d.safetensors\n", ts, i)
		case i%31 == 0:
			fmt.Fprintf(&b, "%strain-job-worker-3:1234:5678 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/IPC key=%d\n", ts, i)
		default:
			fmt.Fprintf(&b, "%s[rank3] step=%d loss=%.4f lr=1.0e-04 grad_norm=0.87 tokens_per_sec=%d max_tokens=4096\n", ts, i, 2.5-float64(i%1000)/1000, 31000+i%500)
		}
	}
	return b.Bytes()
}

// BenchmarkCopy measures redaction throughput on a training log (make bench prints MB/s).
func BenchmarkCopy(b *testing.B) {
	r, err := New(Options{Key: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	log := trainingLog(32 << 20)
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for range b.N {
		if _, err := r.Copy(b.Context(), io.Discard, bytes.NewReader(log), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLine measures Line on text with no secret: the common case of an LLM prompt.
func BenchmarkLine(b *testing.B) {
	r, err := New(Options{Key: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	line := "2026-03-14T10:00:01.123456789Z [rank3] step=1200 loss=2.3456 lr=1.0e-04 grad_norm=0.87 tokens_per_sec=31000"
	b.SetBytes(int64(len(line)))
	for range b.N {
		_ = r.Line(line)
	}
}

// BenchmarkCarries is the scan's check of every line for what may begin a secret of several
// lines, on a training log's lines as the scan hands them over (without the kubelet time).
func BenchmarkCarries(b *testing.B) {
	r, err := New(Options{Key: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(trainingLog(1<<20), []byte("\n")) {
		if _, text, ok := bytes.Cut(l, []byte(" ")); ok {
			lines = append(lines, text)
		}
	}
	b.SetBytes(1 << 20)
	for b.Loop() {
		for _, l := range lines {
			r.Carries(l)
		}
	}
}
