package analyze

import (
	"fmt"
	"slices"
	"strings"
)

// The values a finding is classified by. Their names are stable: they are the words of the
// rule files and of the report's JSON contract. Each is checked where rules are loaded, so
// analysis only ever sees the constants below.

// Verdict is the answer to "is this job healthy?".
type Verdict string

// Verdicts.
const (
	VerdictHealthy   Verdict = "healthy"
	VerdictUnhealthy Verdict = "unhealthy"
	// VerdictUnknown: the bundle holds too little to tell.
	VerdictUnknown Verdict = "unknown"
)

// Layer is where a rule looks: the job's spec, the Kubernetes control plane's view (job and
// pod status, events), or the containers' logs.
type Layer string

// The three layers.
const (
	LayerSpec      Layer = "spec"
	LayerControl   Layer = "control"
	LayerExecution Layer = "execution"
)

// Layers lists the layers.
var Layers = []Layer{LayerSpec, LayerControl, LayerExecution}

// Category is what kind of failure a finding is.
type Category string

// The categories: stable ids of the JSON contract.
const (
	CategoryCUDAOOM           Category = "cuda-oom"
	CategoryHostOOM           Category = "host-oom"
	CategoryNaNLoss           Category = "nan-loss"
	CategoryModuleNotFound    Category = "module-not-found"
	CategoryCollectiveTimeout Category = "collective-timeout"
	CategoryCollectiveError   Category = "collective-error"
	CategoryRendezvous        Category = "rendezvous-failure"
	CategoryShmBusError       Category = "shm-bus-error"
	CategoryCUDAError         Category = "cuda-error"
	CategoryGPUHardware       Category = "gpu-hardware"
	CategoryScheduling        Category = "scheduling"
	CategoryImagePull         Category = "image-pull"
	CategoryDiskFull          Category = "disk-full"
	CategoryFileNotFound      Category = "file-not-found"
	CategoryPermissionDenied  Category = "permission-denied"
	CategoryHubOffline        Category = "hub-offline"
	CategoryConfigError       Category = "config-error"
	CategoryCrashSignal       Category = "crash-signal"
	CategoryPreemptedEvicted  Category = "preempted-evicted"
	CategoryUserCodeError     Category = "user-code-error"
	CategoryHang              Category = "hang"
	CategoryStorageError      Category = "storage-error"
	CategoryDataError         Category = "data-error"
	CategoryUnknown           Category = "unknown"
)

// Categories lists every category, in the order of the contract.
var Categories = []Category{
	CategoryCUDAOOM, CategoryHostOOM, CategoryNaNLoss, CategoryModuleNotFound, CategoryCollectiveTimeout,
	CategoryCollectiveError, CategoryRendezvous, CategoryShmBusError, CategoryCUDAError, CategoryGPUHardware,
	CategoryScheduling, CategoryImagePull, CategoryDiskFull, CategoryFileNotFound, CategoryPermissionDenied,
	CategoryHubOffline, CategoryConfigError, CategoryCrashSignal, CategoryPreemptedEvicted, CategoryUserCodeError,
	CategoryHang, CategoryStorageError, CategoryDataError, CategoryUnknown,
}

// Fault says who is most likely at fault.
type Fault string

// Faults.
const (
	FaultUser     Fault = "user"
	FaultPlatform Fault = "platform"
	FaultHardware Fault = "hardware"
)

// Faults lists the faults.
var Faults = []Fault{FaultUser, FaultPlatform, FaultHardware}

// Retry says whether a plain retry can help.
type Retry string

// Retries.
const (
	RetryTransient Retry = "transient"
	RetryPermanent Retry = "permanent"
)

// Retries lists the retry values.
var Retries = []Retry{RetryTransient, RetryPermanent}

// oneOf reads s as one of values, or says which values there are.
func oneOf[T ~string](what, s string, values []T) (T, error) {
	if slices.Contains(values, T(s)) {
		return T(s), nil
	}
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(values) > 3 {
		list = "one of " + strings.Join(names, ", ")
	}
	return "", fmt.Errorf("%s %q is not %s", what, s, list)
}
