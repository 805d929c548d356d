package parse

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/coroner-dev/coroner/bundle"
)

// BenchmarkLoadLargeResource loads 15 MiB resources of several shapes and reports the peak
// heap over the input's size (a ConfigMap of 15 MiB took 1.4 GB before the bounded decoder;
// the issue measured 1.6 GB) and what was allocated in all, per input byte:
//
//	go test ./parse -run '^$' -bench LoadLargeResource -benchtime 3x
func BenchmarkLoadLargeResource(b *testing.B) {
	shapes := map[string]func(*strings.Builder){
		"configmap": func(s *strings.Builder) {
			s.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ml}\ndata:\n")
			for i := 0; s.Len() < 15<<20; i++ {
				fmt.Fprintf(s, "  key-%07d: \"value number %d of the config map, a line of text\"\n", i, i)
			}
		},
		"pod-args": func(s *strings.Builder) {
			s.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: ml}\nspec:\n  containers:\n  - name: c\n    args:\n")
			// 10 MiB: at 15 the args are more values than the resource size limit allows.
			for i := 0; s.Len() < 10<<20; i++ {
				fmt.Fprintf(s, "    - --flag-%d=%d\n", i, i)
			}
		},
		"annotation": func(s *strings.Builder) {
			s.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  namespace: ml\n  annotations:\n    big: \"" + strings.Repeat("abcdefgh", 15<<17) + "\"\n")
		},
	}
	for _, name := range []string{"annotation", "configmap", "pod-args"} {
		var s strings.Builder
		shapes[name](&s)
		data := []byte(s.String())
		b.Run(name, func(b *testing.B) {
			files := fstest.MapFS{"resources/core/ConfigMap/ml/x.yaml": {Data: data}}
			bu := &bundle.Bundle{Source: "bench", FS: files, Limits: bundle.DefaultLimits(),
				Files: []bundle.File{{Path: "resources/core/ConfigMap/ml/x.yaml", Size: int64(len(data))}}}
			var peak uint64
			var total uint64
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				stop := make(chan struct{})
				done := make(chan uint64)
				go func() {
					var max uint64
					for {
						var m runtime.MemStats
						runtime.ReadMemStats(&m)
						max = maxU(max, m.HeapAlloc)
						select {
						case <-stop:
							done <- max
							return
						default:
						}
					}
				}()
				m, err := Load(bu)
				close(stop)
				p := <-done
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				if err != nil || len(m.Warnings) > 0 || len(m.Objects) != 1 {
					b.Fatalf("%v %v", err, m.Warnings)
				}
				peak = maxU(peak, p-before.HeapAlloc)
				total += after.TotalAlloc - before.TotalAlloc
			}
			b.ReportMetric(float64(peak)/float64(len(data)), "peak-heap/in-byte")
			b.ReportMetric(float64(total)/float64(b.N)/float64(len(data)), "alloc/in-byte")
		})
	}
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// BenchmarkLoadBundle is parse.Load of the bundle named by $CORONER_BENCH_BUNDLE, opened once
// (a bundle of 16,384 or 25,000 pods: docs/performance.md), with the heap its model holds
// (written as a heap profile to $CORONER_BENCH_HEAP when set):
//
//	CORONER_BENCH_BUNDLE=DIR go test ./parse -run '^$' -bench LoadBundle -benchtime 3x -cpuprofile cpu.prof
func BenchmarkLoadBundle(b *testing.B) {
	dir := os.Getenv("CORONER_BENCH_BUNDLE")
	if dir == "" {
		b.Skip("CORONER_BENCH_BUNDLE names no bundle")
	}
	lim := bundle.DefaultLimits()
	lim.MaxEntries = 1 << 20
	bu, err := bundle.Open(b.Context(), dir, lim)
	if err != nil {
		b.Fatal(err)
	}
	defer bu.Close()
	var live uint64
	for b.Loop() {
		m, err := Load(bu)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live = ms.HeapAlloc
		if path := os.Getenv("CORONER_BENCH_HEAP"); path != "" {
			writeHeap(b, path) // what the model holds, m alive
		}
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64(live)/1e6, "MB-live")
}

func writeHeap(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
