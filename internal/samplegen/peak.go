package samplegen

import (
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// PeakSize watches dir every 5 ms until stop is called and returns the most bytes its files
// held at once: what a run wrote to a scratch or temporary directory, however briefly.
func PeakSize(dir string) (stop func() int64) {
	var peak int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var n int64
			filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if info, err := d.Info(); err == nil {
						n += info.Size()
					}
				}
				return nil
			})
			peak = max(peak, n)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() int64 { close(done); wg.Wait(); return peak }
}
