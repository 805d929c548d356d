//go:build !linux || !(amd64 || arm64)

package bundle

import (
	"io/fs"
	"path/filepath"
)

// walkSigned walks the tree under root with filepath.WalkDir and an lstat per regular file.
// It reads no directory ahead of the visits: maxEntries is the visit's to enforce.
func walkSigned(root string, maxEntries int, visit walkVisit) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		var sig Sig
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			sig = SigOf(info)
		}
		return visit(filepath.ToSlash(rel), d.Type(), sig)
	})
}

// walkMemo walks as walkSigned does: every directory is read, none is taken from memo, and
// none is kept.
func walkMemo(root string, maxEntries int, memo *treeMemo, keep bool, visit walkVisit) (*memoWriter, error) {
	return &memoWriter{}, walkSigned(root, maxEntries, visit)
}
