package narrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordRefusesALink: a file to record answers into that is a symbolic link is refused,
// when it is opened and when it is saved (a link made in between), and the link and what it
// points to are left as they were.
func TestRecordRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	require.NoError(t, os.WriteFile(target, []byte("keep me\n"), 0o644))
	link := filepath.Join(dir, "answers.json")
	require.NoError(t, os.Symlink(target, link))

	_, err := LoadAnswers(t.Context(), link, false)
	require.ErrorContains(t, err, "is a symbolic link")
	replay, err := LoadAnswers(t.Context(), filepath.Join(dir, "missing.json"), true)
	require.Error(t, err, "a replay file that is missing is an error")
	require.Nil(t, replay)

	plain := filepath.Join(dir, "later.json")
	a, err := LoadAnswers(t.Context(), plain, false)
	require.NoError(t, err)
	a.Put(&Entry{Key: "k"})
	require.NoError(t, os.Symlink(target, plain))
	require.ErrorContains(t, a.Save(t.Context()), "is a symbolic link")

	for _, l := range []string{link, plain} {
		st, err := os.Lstat(l)
		require.NoError(t, err)
		require.NotZero(t, st.Mode()&os.ModeSymlink, "%s is still a link", l)
	}
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "keep me\n", string(data))
}
