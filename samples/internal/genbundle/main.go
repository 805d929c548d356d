// Command genbundle writes a large, deterministic PyTorchJob bundle for benchmarks (see
// internal/samplegen): N ranks, one failing of CUDA OOM and the others timing out in NCCL, with
// logs of the given kind (repetitive training steps, distinct lines, a number on every line,
// one huge line, or many tiny files). The same flags give the same bytes.
//
//	go run ./samples/internal/genbundle -o /tmp/big -ranks 64 -size 1GiB
//	go run ./samples/internal/genbundle -o /tmp/files -kind files -ranks 25000 -size 15MiB
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
	containers := flag.Int("containers", 0, "logs per pod (default 1, or 8 for -kind files)")
	size := flag.String("size", "1GiB", "total log bytes (KiB, MiB, GiB suffixes)")
	kind := flag.String("kind", string(samplegen.Repetitive), fmt.Sprintf("what the logs hold: one of %v", samplegen.Kinds))
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	total, err := samplegen.ParseSize(*size)
	if *out == "" || err != nil || *ranks < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genbundle -o DIR [-kind KIND] [-ranks N] [-containers N] [-size 1GiB] [-seed N]")
		os.Exit(2)
	}
	o := samplegen.Options{Kind: samplegen.Kind(*kind), Ranks: *ranks, Containers: *containers, Size: total, Seed: *seed}
	if err := samplegen.GenerateKind(*out, o); err != nil {
		fmt.Fprintln(os.Stderr, "genbundle:", err)
		os.Exit(1)
	}
}
