package main

import (
	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle/collect"
)

// newCmdFlightRecorderRead is what a reader pod runs (collect's ReaderArgs): the dumps under a
// prefix of the claim it mounts, printed as its log. Hidden: no user runs it by hand.
func newCmdFlightRecorderRead(io *IOStreams) *cobra.Command {
	var max int64 = collect.DefaultMaxFlightRecordBytes
	cmd := &cobra.Command{
		Use:    collect.ReaderCommand + " PREFIX",
		Short:  "Print the NCCL Flight Recorder dumps PREFIX<rank> as lines NAME BASE64 (the reader pod's command)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return collect.ReadLocalDumps(cmd.Context(), args[0], max, io.Out)
		},
	}
	addSizeFlag(cmd, &max, "max-bytes", "largest dump printed; a larger one is a line NAME !over N bytes")
	return cmd
}
