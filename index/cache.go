package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// Cache keeps built indexes in Dir, one directory per key (see contentKey), written under a
// temporary name and renamed when complete. An index is used only when its meta.json names
// the same key, version and line limit and every file matches its checksum; anything else is
// removed and rebuilt.
//
// Finding the key of a bundle means reading all its logs. So that a search of an unchanged
// bundle reads nothing, Dir/stat/ remembers, per bundle path, each log's size, modification
// and change time and inode with the key they gave (as git's index does).
type Cache struct {
	Dir string
}

type fileSig struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
}

type statEntry struct {
	Source  string    `json:"source"`
	Version string    `json:"coronerVersion"`
	MaxLine int       `json:"maxLineBytes"`
	Files   []fileSig `json:"files"`
	Key     string    `json:"key"`
}

func statLogs(fsys fs.FS, logs []parse.LogStream) []fileSig {
	sigs := make([]fileSig, len(logs))
	for i, ls := range logs {
		sigs[i].Path = ls.Path
		info, err := fs.Stat(fsys, ls.Path)
		if err != nil {
			sigs[i].Size = -1 // never matches
			continue
		}
		sigs[i].Size, sigs[i].Mtime = info.Size(), info.ModTime().UnixNano()
		sigs[i].Ino, sigs[i].Ctime = changeTime(info)
	}
	return sigs
}

func sameSigs(a, b []fileSig) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] || a[i].Size < 0 {
			return false
		}
	}
	return true
}

// sourceID names a bundle by where it is, for the stat entries.
func sourceID(b *bundle.Bundle) string {
	parts := []string{b.Source}
	if b.Plain {
		parts = strings.Fields(b.Source)
	}
	for i, p := range parts {
		if abs, err := filepath.Abs(p); err == nil {
			parts[i] = abs
		}
	}
	return strings.Join(parts, "\x00")
}

func (c *Cache) statPath(source string) string {
	h := sha256.Sum256([]byte(source))
	return filepath.Join(c.Dir, "stat", hex.EncodeToString(h[:16])+".json")
}

func (c *Cache) readStat(source string) *statEntry {
	data, err := os.ReadFile(c.statPath(source))
	if err != nil {
		return nil
	}
	var e statEntry
	if json.Unmarshal(data, &e) != nil || e.Source != source {
		return nil
	}
	return &e
}

func (c *Cache) writeStat(e statEntry) error {
	p := c.statPath(e.Source)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return writeAtomic(p, data)
}

// lookup returns the cached index of these logs, or nil. It finds the key from the stat
// entry, or, when slowKey allows, by reading every log to checksum it (search does; analyze
// reads the logs anyway and checks the cache after its scan). Its only error is ctx's.
func (c *Cache) lookup(ctx context.Context, b *bundle.Bundle, logs []parse.LogStream, sigs []fileSig, want meta, slowKey bool, logf func(string, ...any)) (*Index, error) {
	source := sourceID(b)
	key := ""
	if e := c.readStat(source); e != nil && e.Version == want.Version && e.MaxLine == want.MaxLine && sameSigs(e.Files, sigs) {
		key = e.Key
	} else if slowKey {
		var err error
		if key, err = keyByReading(ctx, b.FS, logs, want); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("checksumming the logs: %w", ctx.Err())
			}
			return nil, nil
		}
	}
	if key == "" || !validKey(key) {
		return nil, nil
	}
	dir := filepath.Join(c.Dir, key)
	if _, err := os.Stat(dir); err != nil {
		return nil, nil
	}
	want.Key = key
	ix, err := openDir(dir, b.FS, true, &want)
	if err != nil {
		if logf != nil {
			logf("the cached index %s is unusable (%v); rebuilding it", dir, err)
		}
		c.discard(dir)
		return nil, nil
	}
	_ = c.writeStat(statEntry{Source: source, Version: want.Version, MaxLine: want.MaxLine, Files: sigs, Key: key})
	return ix, nil
}

// keyByReading checksums every log, as the scan would.
func keyByReading(ctx context.Context, fsys fs.FS, logs []parse.LogStream, want meta) (string, error) {
	stats := make([]logscan.Stats, len(logs))
	for i, ls := range logs {
		n, sum, err := logscan.Checksum(ctx, fsys, ls.Path)
		if err != nil {
			return "", err
		}
		stats[i].Bytes, stats[i].Sum = n, sum
	}
	return contentKey(want, logs, stats), nil
}

func validKey(k string) bool {
	if len(k) != 64 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil
}

// commit moves a freshly built index into the cache under its key. When another process got
// there first with a sound index, that one is used; a damaged one is replaced.
func (c *Cache) commit(ix *Index, b *bundle.Bundle, sigs []fileSig) (*Index, error) {
	key := ix.meta.Key
	final := filepath.Join(c.Dir, key)
	want := ix.meta
	built := ix.dir
	ix.Close()
	if err := os.Rename(built, final); err != nil {
		if other, oerr := openDir(final, b.FS, true, &want); oerr == nil {
			os.RemoveAll(built)
			return other, c.writeStat(statEntry{Source: sourceID(b), Version: want.Version, MaxLine: want.MaxLine, Files: sigs, Key: key})
		}
		c.discard(final)
		if err := os.Rename(built, final); err != nil {
			// Keep using the private build; it goes away on Close.
			ix, oerr := openDir(built, b.FS, false, &want)
			if oerr != nil {
				os.RemoveAll(built)
				return nil, oerr
			}
			ix.temp = true
			return ix, nil
		}
	}
	if err := c.writeStat(statEntry{Source: sourceID(b), Version: want.Version, MaxLine: want.MaxLine, Files: sigs, Key: key}); err != nil {
		return nil, fmt.Errorf("index cache: %w", err)
	}
	return openDir(final, b.FS, false, &want)
}

// discard removes a cached index: renamed aside first, so no reader sees it half-removed.
func (c *Cache) discard(dir string) {
	trash, err := scratch.MkdirTemp(c.Dir, trashPrefix+"*")
	if err != nil {
		os.RemoveAll(dir)
		return
	}
	if os.Rename(dir, filepath.Join(trash.Path, "x")) != nil {
		os.RemoveAll(dir)
	}
	trash.Remove()
}

func writeAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
