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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], SystemStreams())
	stop()
	os.Exit(code)
}
