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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
	"github.com/coroner-dev/coroner/logscan"
)

// DefaultCacheMax is the cache's size bound when Cache.MaxBytes is not set.
const DefaultCacheMax = 4 << 30

// Cache keeps built indexes in Dir, one directory per key (see contentKey: the logs' paths,
// sizes and SHA-256), written under a temporary name and renamed when complete. An index is
// used only when its meta.json names the same key, version and line limit and every file
// matches its checksum; anything else is removed and rebuilt. Past MaxBytes, the least
// recently used indexes are removed.
//
// Finding the key of a bundle means reading all its logs. So that a search of an unchanged
// bundle reads nothing, Dir/stat/ remembers, per bundle path, a hash of each log's size,
// modification and change time and inode with the key they gave (as git's index does).
type Cache struct {
	Dir string
	// MaxBytes bounds the indexes kept (0: DefaultCacheMax).
	MaxBytes int64
}

type fileSig struct {
	Path  string
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
}

type statEntry struct {
	Source  string `json:"source"`
	Version string `json:"coronerVersion"`
	MaxLine int    `json:"maxLineBytes"`
	Files   string `json:"files"` // sigsHash of the logs
	Key     string `json:"key"`
	// PlainLogs is bundle.PlainLogsDigest when the entry was written: while the logs keep
	// those signatures, opening the bundle again need not look at their heads.
	PlainLogs string `json:"plainLogs,omitempty"`
}

// FormMemo is a bundle.FormMemo kept in the cache's stat entries, for the given coroner
// version (a later version may tell forms otherwise).
func (c *Cache) FormMemo(version string) bundle.FormMemo {
	return formMemo{c, version}
}

type formMemo struct {
	c       *Cache
	version string
}

func (m formMemo) AllPlain(b *bundle.Bundle, digest string) bool {
	e := m.c.readStat(sourceID(b))
	return e != nil && e.Version == m.version && e.PlainLogs != "" && e.PlainLogs == digest
}

// statLogs signs the logs: by the lstat the bundle's walk took (see bundle.WalkSig), else
// by a stat.
func statLogs(b *bundle.Bundle, logs []bundle.LogStream) []fileSig {
	sigs := make([]fileSig, len(logs))
	for i, ls := range logs {
		sigs[i].Path = ls.Path
		sig, ok := b.WalkSig(ls.Path)
		if !ok {
			info, err := fs.Stat(b.FS, ls.Path)
			if err != nil {
				sigs[i].Size = -1 // never matches
				continue
			}
			sig = bundle.SigOf(info)
		}
		sigs[i].Size, sigs[i].Mtime, sigs[i].Ctime, sigs[i].Ino = sig.Size, sig.Mtime, sig.Ctime, sig.Ino
	}
	return sigs
}

// logsHash is sigsHash of the logs' signatures, sigs as statLogs made them: the bundle's
// digest of the same bytes when it has made it (its logs all plain text, signed by the walk),
// else hashed here.
func logsHash(b *bundle.Bundle, logs []bundle.LogStream, sigs []fileSig) string {
	if d := b.PlainLogsDigestOf(logs); d != "" {
		return d
	}
	return sigsHash(sigs)
}

// sigsHash names a list of file signatures; "" when a file could not be read.
func sigsHash(sigs []fileSig) string {
	h := sha256.New()
	var line []byte
	for _, s := range sigs {
		if s.Size < 0 {
			return ""
		}
		// The bytes of fmt's "%q %d %d %d %d\n", without its per-call cost (200,000 logs).
		line = bundle.AppendQuoted(line[:0], s.Path)
		for _, n := range []int64{s.Size, s.Mtime, s.Ctime} {
			line = strconv.AppendInt(append(line, ' '), n, 10)
		}
		line = strconv.AppendUint(append(line, ' '), s.Ino, 10)
		h.Write(append(line, '\n'))
	}
	return hex.EncodeToString(h.Sum(nil))
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

// TreeMemo is the listing of the directory bundle at path that its last search kept (see
// bundle.WithTreeMemo), or nil.
func (c *Cache) TreeMemo(path string) []byte {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(c.treePath(abs))
	if err != nil {
		return nil
	}
	return data
}

// KeepTreeMemo keeps the listing b's walk took (bundle.Bundle.TreeMemo), when it differs from
// the one kept. A cache that cannot be written is done without.
func (c *Cache) KeepTreeMemo(b *bundle.Bundle) {
	memo, changed := b.TreeMemo()
	if !changed || b.Plain {
		return
	}
	p := c.treePath(sourceID(b))
	if len(memo) == 0 {
		os.Remove(p)
		return
	}
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		_ = writeAtomic(p, memo)
	}
}

// treePath is where the tree memo of a bundle is kept, beside its stat entry.
func (c *Cache) treePath(source string) string {
	return strings.TrimSuffix(c.statPath(source), ".json") + ".tree"
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
	if e.Files == "" {
		return nil
	}
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

// prepare sweeps what killed runs left in the cache: index directories being built and
// indexes being removed, whose process is gone.
func (c *Cache) prepare() {
	scratch.Sweep(c.Dir, buildPrefix)
	scratch.Sweep(c.Dir, trashPrefix)
	scratch.Sweep("", privatePrefix)
}

// lookup returns the cached index of these logs, or nil. It finds the key from the stat
// entry, or, when slowKey allows, by reading every log to hash it (search does; analyze
// reads the logs anyway and checks the cache after its scan); files is the logs' logsHash.
// Its only error is ctx's.
func (c *Cache) lookup(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, files string, want meta, slowKey bool, logf func(string, ...any)) (*Index, error) {
	source := sourceID(b)
	key := ""
	e := c.readStat(source)
	if e != nil && e.Version == want.Version && e.MaxLine == want.MaxLine && files != "" && e.Files == files {
		key = e.Key
	} else if slowKey {
		var err error
		if key, err = keyByReading(ctx, b.FS, logs, want); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("hashing the logs: %w", ctx.Err())
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
	ix, err := openDirHeads(dir, b.FS, true, &want, written{logs: logs})
	if err == nil && !slowKey {
		// The caller reads every log anyway (analyze): the bodies are checked whole too, so
		// that a damaged one is rebuilt now instead of failing a window later.
		if err = ix.checkBodies(); err != nil {
			ix.Close()
		}
	}
	if err != nil {
		if logf != nil {
			logf("the cached index %s is unusable (%v); rebuilding it", dir, err)
		}
		c.discard(dir)
		return nil, nil
	}
	ix.cache = c
	c.touch(dir)
	stat := statEntry{Source: source, Version: want.Version, MaxLine: want.MaxLine, Files: files, Key: key,
		PlainLogs: b.PlainLogsDigest()}
	if e == nil || *e != stat { // a warm search of an unchanged bundle writes nothing
		_ = c.writeStat(stat)
	}
	return ix, nil
}

// keyByReading hashes every log, as the scan would.
func keyByReading(ctx context.Context, fsys fs.FS, logs []bundle.LogStream, want meta) (string, error) {
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

// commit moves a freshly built index into the cache under its key, and evicts the least
// recently used indexes past the size bound, never the index keyed keep: when the bound
// cannot hold both, the new index goes instead (ErrNoRoom). When another process got there first with a
// sound index, that one is used; a damaged one is replaced. When the index cannot be moved
// into place, it stays private (removed by Close) and warn says why.
func (c *Cache) commit(ix *Index, dir *scratch.Dir, b *bundle.Bundle, files, keep string, warn func(string, ...any)) (*Index, error) {
	key := ix.meta.Key
	final := filepath.Join(c.Dir, key)
	want := ix.meta
	ix.Close()
	private := func(err error) (*Index, error) {
		warn("the index cache %s cannot be written (%v); going on without it", c.Dir, unwrapPath(err))
		ix, err := openDir(dir.Path, b.FS, false, &want)
		if err != nil {
			dir.Remove()
			return nil, err
		}
		ix.scratch = dir
		return ix, nil
	}
	stat := statEntry{Source: sourceID(b), Version: want.Version, MaxLine: want.MaxLine, Files: files, Key: key,
		PlainLogs: b.PlainLogsDigest()}
	if _, err := os.Stat(final); err == nil {
		if other, oerr := openDir(final, b.FS, true, &want); oerr == nil {
			other.cache = c
			dir.Remove()
			c.touch(final)
			_ = c.writeStat(stat)
			return other, nil
		}
		c.discard(final)
	}
	if err := dir.Keep(); err != nil {
		return private(err)
	}
	if err := os.Rename(dir.Path, final); err != nil {
		return private(err)
	}
	_ = c.writeStat(stat)
	c.touch(final)
	var kept string
	if keep != "" && keep != key {
		kept = filepath.Join(c.Dir, keep)
	}
	if !c.evict(final, kept) {
		c.discard(final)
		return nil, ErrNoRoom
	}
	ix, err := openDir(final, b.FS, false, &want)
	if err == nil {
		ix.cache = c
	}
	return ix, err
}

// touch marks an index as just used (the eviction order).
func (c *Cache) touch(dir string) {
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
}

// evict removes the least recently used indexes (but keep, and kept when it is set) while
// the cache holds more than its bound. It says false, and removes nothing, when kept is in
// the cache and the two alone are past the bound: keep must go for kept to stay.
func (c *Cache) evict(keep, kept string) bool {
	limit := c.MaxBytes
	if limit <= 0 {
		limit = DefaultCacheMax
	}
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return true
	}
	type entry struct {
		dir  string
		size int64
		used time.Time
	}
	var all []entry
	var total, pinned int64
	found := false
	for _, e := range entries {
		if !e.IsDir() || !validKey(e.Name()) {
			continue
		}
		dir := filepath.Join(c.Dir, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		size := dirSize(dir)
		all = append(all, entry{dir, size, info.ModTime()})
		total += size
		if dir == keep || dir == kept {
			pinned += size
			found = found || dir == kept
		}
	}
	if found && pinned > limit {
		return false // the others stay: removing them would not make room
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	now := time.Now()
	for _, e := range all {
		if total <= limit {
			break
		}
		if e.dir == keep || e.dir == kept || now.Sub(e.used) < evictGrace && now.Sub(e.used) > -evictGrace {
			continue
		}
		c.discard(e.dir)
		total -= e.size
	}
	return true
}

// evictGrace is how long after its last use an index is never evicted: another run may have
// just put it in place and be about to open it, or be reading it (runs into one cache at
// once, each with a bound too small for the others' indexes, removed each other's before
// they were opened). The bound is exceeded meanwhile; the next run past the grace evicts.
const evictGrace = 10 * time.Second

// dirSize is the size of an index: what its meta.json lists, else what it holds.
func dirSize(dir string) int64 {
	var n int64
	if data, err := os.ReadFile(filepath.Join(dir, metaName)); err == nil {
		var m meta
		if json.Unmarshal(data, &m) == nil {
			for _, f := range m.Files {
				n += f.Size
			}
			return n + int64(len(data))
		}
	}
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

const trashPrefix = ".trash-"

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
