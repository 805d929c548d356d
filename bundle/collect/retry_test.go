package collect

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestRetryInterruptedIsAnError: a request cut by its context fails with an error wrapping
// context.Canceled (client-go returns the transport's *url.Error). withRetry returned nil for it
// (client-go's retry.OnError takes such an error for the end of its own backoff and returns
// the last retriable error: none), and fetchLog then closed a nil stream: a panic on SIGTERM
// or when --log-idle-timeout fired before a slow kubelet's first byte.
func TestRetryInterruptedIsAnError(t *testing.T) {
	backoff.Duration = time.Millisecond
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		t.Run(cause.Error(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			calls := 0
			err := withRetry(ctx, func() error {
				calls++
				cancel()
				return &url.Error{Op: "Get", URL: "https://127.0.0.1/api/v1/namespaces/ns/pods/p/log", Err: cause}
			})
			require.Error(t, err, "an interrupted request is never a success")
			require.ErrorIs(t, err, cause)
			require.Equal(t, 1, calls, "not tried again once the context is done")
		})
	}

	// Cancelled between two tries: the last error, and the context's, not nil.
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := withRetry(ctx, func() error {
		calls++
		cancel()
		return apierrors.NewServiceUnavailable("kubelet is busy")
	})
	require.Error(t, err)
	require.True(t, apierrors.IsServiceUnavailable(err), "the last error is kept: %v", err)
	require.Equal(t, 1, calls, "not tried again once the context is done")

	// Cancelled while waiting for the next try: it returns then, not after the backoff.
	backoff.Duration = time.Hour
	t.Cleanup(func() { backoff.Duration = time.Millisecond })
	ctx, cancel = context.WithCancel(t.Context())
	calls = 0
	err = withRetry(ctx, func() error {
		calls++
		go cancel()
		return apierrors.NewTooManyRequests("slow down", 0)
	})
	require.True(t, apierrors.IsTooManyRequests(err), "the last error is kept: %v", err)
	require.Equal(t, 1, calls)

	// A context already done: the request's own error comes back, whatever it is.
	err = withRetry(ctx, func() error { return errors.New("dial tcp 127.0.0.1:1: operation was canceled") })
	require.EqualError(t, err, "dial tcp 127.0.0.1:1: operation was canceled")
}
