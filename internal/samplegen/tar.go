package samplegen

import (
	"archive/tar"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
)

// TarDir writes the files of dir as a .tar.gz at out, each entry named prefix + its path in
// dir ("" for a bundle tarball as collect makes it, "bundle-x/" for one under a top folder);
// links are archived as links.
func TarDir(dir, out, prefix string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			// Kept as a link, as troubleshoot's support-bundle CLI archives its links.
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Name: prefix + filepath.ToSlash(rel), Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: filepath.ToSlash(target)})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: prefix + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	for _, c := range []func() error{tw.Close, zw.Close, f.Close} {
		if cerr := c(); err == nil {
			err = cerr
		}
	}
	return err
}
