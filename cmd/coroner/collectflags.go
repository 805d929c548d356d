package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/bundle/redact"
)

// CollectLimits are the flags of what one collect keeps, shared by `coroner collect` and
// `coroner watch` so that both collect alike.
type CollectLimits struct {
	Since            time.Duration
	MaxLogBytes      int64
	MaxTotalLogBytes int64
	LogIdleTimeout   time.Duration
	Concurrency      int
	// QPS and Burst bound the requests for objects (log streams are bounded by Concurrency).
	QPS         float32
	Burst       int
	NoRedact    bool
	RedactRules string
	// FlightRecorderExec reads the NCCL Flight Recorder dumps through pods/exec (opt-in).
	FlightRecorderExec   bool
	MaxFlightRecordBytes int64
	// FlightRecorderReader is the image of the reader pods of dumps on a claim (opt-in).
	FlightRecorderReader string
}

func addCollectLimitFlags(cmd *cobra.Command, c *CollectLimits) {
	f := cmd.Flags()
	f.DurationVar(&c.Since, "since", 0, "only logs newer than this `DURATION` (e.g. 6h; default all)")
	c.MaxLogBytes, c.MaxTotalLogBytes = 10<<20, 2<<30
	addSizeFlag(cmd, &c.MaxLogBytes, "max-log-bytes", "largest log kept per container: the first quarter and the end are kept, the middle cut")
	addSizeFlag(cmd, &c.MaxTotalLogBytes, "max-total-log-bytes", "all logs of one bundle together; logs beyond it are skipped and listed as gaps")
	f.DurationVar(&c.LogIdleTimeout, "log-idle-timeout", collect.DefaultLogIdleTimeout, "give up a log stream that sends nothing for this long")
	f.IntVar(&c.Concurrency, "concurrency", collect.DefaultConcurrency, "requests in flight for one collect (log streams included)")
	f.Float32Var(&c.QPS, "kube-api-qps", 50, "requests per second to the API server for objects (log streams are bounded by --concurrency)")
	f.IntVar(&c.Burst, "kube-api-burst", 100, "burst of requests to the API server for objects")
	f.BoolVar(&c.NoRedact, "no-redact", false, "keep secrets (redaction is on by default)")
	f.StringVar(&c.RedactRules, "redact-rules", "", "add the redaction rules of `FILE`")
	f.BoolVar(&c.FlightRecorderExec, "flight-recorder-exec", false, "read the NCCL Flight Recorder dumps of running containers that set TORCH_FR_DUMP_TEMP_FILE (or TORCH_NCCL_DEBUG_INFO_TEMP_FILE) through pods/exec: needs RBAC on pods/exec (docs/flight-recorder.md)")
	c.MaxFlightRecordBytes = collect.DefaultMaxFlightRecordBytes
	addSizeFlag(cmd, &c.MaxFlightRecordBytes, "max-flight-record-bytes", "largest flight recorder dump kept; a larger one is a gap")
	f.StringVar(&c.FlightRecorderReader, "flight-recorder-reader-image", "", "read the flight recorder dumps of containers that are not running from the PersistentVolumeClaim at their dump prefix, with a short-lived reader pod of this `IMAGE` (coroner's own); needs RBAC to create and delete pods (docs/flight-recorder.md)")
}

// options checks the flags and fills the collect options they set.
func (c *CollectLimits) options() (collect.Options, error) {
	if c.Concurrency < 1 {
		return collect.Options{}, flagErrorf("--concurrency %d: want at least 1", c.Concurrency)
	}
	if c.QPS <= 0 || c.Burst < 1 {
		return collect.Options{}, flagErrorf("--kube-api-qps %g --kube-api-burst %d: want more than 0 and at least 1", c.QPS, c.Burst)
	}
	return collect.Options{Since: c.Since, MaxLogBytes: c.MaxLogBytes, MaxTotalLogBytes: c.MaxTotalLogBytes,
		LogIdleTimeout: c.LogIdleTimeout, Concurrency: c.Concurrency, MaxFlightRecordBytes: c.MaxFlightRecordBytes,
		ReaderImage: c.FlightRecorderReader}, nil
}

// redactors returns what makes a redactor for each collect (its summary counts one bundle's
// secrets), or nil with --no-redact. The rules file is read, and checked, once.
func (c *CollectLimits) redactors() (func() (collect.Redactor, error), error) {
	if c.NoRedact {
		if c.RedactRules != "" {
			return nil, flagErrorf("--redact-rules and --no-redact contradict each other")
		}
		return nil, nil
	}
	ro := redact.Options{}
	if c.RedactRules != "" {
		var err error
		if ro.Extra, err = redact.LoadRules(c.RedactRules); err != nil {
			return nil, err
		}
	}
	if _, err := redact.New(ro); err != nil {
		return nil, err
	}
	return func() (collect.Redactor, error) { return redact.New(ro) }, nil
}
