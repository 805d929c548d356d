// Command spotbundle wraps one labelled excerpt of a corpus or spot set into the bundle
// `coroner collect` would have written of a job that printed it (see internal/spotbundle), to
// read or analyze by hand; TestSpotBundles in cmd/coroner scores every row so.
//
//	go run ./samples/internal/spotbundle -o /tmp/b.tar.gz ../shared/corpus/real 042
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/coroner-dev/coroner/internal/spotbundle"
)

func main() {
	out := flag.String("o", "", "output bundle tarball")
	running := flag.Bool("others-running", false, "a failed row's other pods still run")
	sigterm := flag.Bool("others-sigterm", false, "a failed row's stopped pods log torchrun's SIGTERM")
	flag.Parse()
	if *out == "" || flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: spotbundle -o OUT.tar.gz DIR ID   (DIR holds INDEX.tsv and ID.log)")
		os.Exit(2)
	}
	if err := run(*out, flag.Arg(0), flag.Arg(1), spotbundle.Options{OthersRunning: *running, OthersSIGTERM: *sigterm}); err != nil {
		fmt.Fprintln(os.Stderr, "spotbundle:", err)
		os.Exit(1)
	}
}

func run(out, dir, id string, opt spotbundle.Options) error {
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 || cols[0] != id {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, id+".log"))
		if err != nil {
			return err
		}
		b, err := spotbundle.Write(out, spotbundle.Row{ID: id, Label: cols[1], RootRank: cols[3], Framework: cols[4]}, data, opt)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s, excerpt in %s (%s, exit code %d)\n", out, b.Kind, b.Pod, b.State, b.ExitCode)
		return nil
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s: no row %s", dir, id)
}
