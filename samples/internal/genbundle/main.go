// Command genbundle writes a large, deterministic PyTorchJob bundle for benchmarks (see
// internal/samplegen): N ranks, a realistic repetitive training log each, one rank failing of
// CUDA OOM and the others timing out in NCCL. The same flags give the same bytes.
//
//	go run ./samples/internal/genbundle -o /tmp/big -ranks 64 -size 1GiB
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

func main() {
	out := flag.String("o", "", "output bundle directory (must not exist)")
	ranks := flag.Int("ranks", 64, "number of ranks (pods)")
	size := flag.String("size", "1GiB", "total log bytes (KiB, MiB, GiB suffixes)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	total, err := samplegen.ParseSize(*size)
	if *out == "" || err != nil || *ranks < 2 {
		fmt.Fprintln(os.Stderr, "usage: genbundle -o DIR [-ranks N>=2] [-size 1GiB] [-seed N]")
		os.Exit(2)
	}
	if err := samplegen.Generate(*out, *ranks, total, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "genbundle:", err)
		os.Exit(1)
	}
}
