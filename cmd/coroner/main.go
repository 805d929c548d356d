// Command coroner explains why a distributed training job on Kubernetes failed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], SystemStreams())
	stop()
	os.Exit(code)
}
