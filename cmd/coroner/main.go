// Command coroner explains why a distributed training job on Kubernetes failed.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	if filepath.Base(os.Args[0]) == "kubectl-coroner" {
		commandName = "kubectl coroner" // run as a kubectl plugin
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal asks every command to stop and clean up (exit 130 or 143); a second
		// one, from a user who will not wait, ends the process at once.
		s := <-sigs
		cancel(&Interrupted{Signal: s})
		s = <-sigs
		if s == syscall.SIGTERM {
			os.Exit(exitTerminated)
		}
		os.Exit(exitInterrupt)
	}()
	code := Main(ctx, os.Args[1:], SystemStreams())
	signal.Stop(sigs)
	os.Exit(code)
}
