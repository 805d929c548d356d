package gzindex

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// BenchmarkBuild compares Build with compress/gzip on the file $CORONER_BENCH_GZ.
func BenchmarkBuild(b *testing.B) {
	path := os.Getenv("CORONER_BENCH_GZ")
	if path == "" {
		b.Skip("CORONER_BENCH_GZ names no gzip file")
	}
	for _, impl := range []string{"gzindex", "compress/gzip"} {
		b.Run(impl, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				if impl == "gzindex" {
					ix, err := Build(bufio.NewReaderSize(f, 64<<10), io.Discard, 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					n = ix.Size
				} else {
					zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
					if err != nil {
						b.Fatal(err)
					}
					n, _ = io.Copy(io.Discard, zr)
				}
				f.Close()
				b.SetBytes(n)
			}
		})
	}
}
