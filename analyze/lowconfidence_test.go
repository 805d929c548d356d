package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogEndingInConnectAttemptIsLow: c10d's client logs each failed connect to the store at
// warning level and gives up at error level (pytorch/PiPPy#158, ofsoundof/GRL-Image-
// Restoration#27): a log that ends in the warnings was still trying, so the rendezvous
// failure the second tier names from them is low; the error-level end is medium.
func TestLogEndingInConnectAttemptIsLow(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	attempt := "[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).\n"
	gaveUp := "[E socket.cpp:610] [c10d] The client socket has failed to connect to any network address of (127.0.0.1, 29500).\n"
	for _, tc := range []struct {
		log  string
		want Confidence
	}{
		{"Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n" + attempt + "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n" + attempt, ConfidenceLow},
		{attempt + attempt + gaveUp, ConfidenceMedium},
	} {
		res := analyzeLogs(t, WithoutSpecific(all), tc.log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryRendezvous, res.RootCause.Category)
		require.Equal(t, tc.want, res.Confidence, tc.log)
	}
}
